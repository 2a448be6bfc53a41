// The conformance suite's kit: sizes and bounds the checks use, what a test
// made on the plugin (torn down after it), the helpers every section shares
// (SuiteKit) and a few calls. Private to test/conformance (see _suite.ts).

import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { CreateSnapshotRequest, CreateVolumeRequest, DeepPartial, Snapshot, Topology, Volume, VolumeCapability } from '../../src/gen/csi/v1/csi.js';
import { ControllerRpc, NodeRpc, ServiceType, Status, codeOf, type Advertised, type CsiClients } from './_clients.js';
import { eventually } from '../support/eventually.js';

export const MiB = 1024 * 1024;
/** Small: a conforming plugin may really allocate it. */
export const VOLUME_SIZE = 16n * BigInt(MiB);
export const EXPANDED_SIZE = 32n * BigInt(MiB);
/** The spec's bound on names a CO may send. */
export const MAX_NAME_BYTES = 128;
export const PLUGIN_NAME_PATTERN = /^[a-zA-Z0-9]([a-zA-Z0-9.-]{0,61}[a-zA-Z0-9])?$/;

export const KNOWN_CONTROLLER_RPCS = new Set(
  Object.values(ControllerRpc).filter((v): v is ControllerRpc => typeof v === 'number' && v > 0),
);
export const KNOWN_NODE_RPCS = new Set(Object.values(NodeRpc).filter((v): v is NodeRpc => typeof v === 'number' && v > 0));
export const KNOWN_SERVICES = new Set(Object.values(ServiceType).filter((v): v is ServiceType => typeof v === 'number' && v > 0));

/**
 * Everything a test made on the plugin, torn down in the order a CO must
 * use: NodeUnpublish, NodeUnstage, ControllerUnpublish, then snapshots and
 * volumes. NOT_FOUND counts as done. Other failures fail the test.
 */
export class Resources {
  readonly #clients: () => CsiClients;
  #volumes: string[] = [];
  #snapshots: string[] = [];
  #attached: { volumeId: string; nodeId: string }[] = [];
  #staged: { volumeId: string; path: string }[] = [];
  #published: { volumeId: string; path: string }[] = [];

  constructor(clients: () => CsiClients) {
    this.#clients = clients;
  }

  async createVolume(req: DeepPartial<CreateVolumeRequest>): Promise<Volume> {
    const res = await this.#clients().controller.createVolume(req);
    assert.ok(res.volume, 'CreateVolume returned no volume');
    assert.notEqual(res.volume.volumeId, '', 'CreateVolume returned an empty volume_id');
    if (!this.#volumes.includes(res.volume.volumeId)) this.#volumes.push(res.volume.volumeId);
    return res.volume;
  }

  async createSnapshot(req: DeepPartial<CreateSnapshotRequest>): Promise<Snapshot> {
    const res = await this.#clients().controller.createSnapshot(req);
    assert.ok(res.snapshot, 'CreateSnapshot returned no snapshot');
    if (!this.#snapshots.includes(res.snapshot.snapshotId)) this.#snapshots.push(res.snapshot.snapshotId);
    return res.snapshot;
  }

  attached(volumeId: string, nodeId: string): void {
    this.#attached.push({ volumeId, nodeId });
  }

  staged(volumeId: string, p: string): void {
    this.#staged.push({ volumeId, path: p });
  }

  published(volumeId: string, p: string): void {
    this.#published.push({ volumeId, path: p });
  }

  async cleanup(): Promise<void> {
    const c = this.#clients();
    const failures: unknown[] = [];
    const attempt = async (what: string, call: () => Promise<unknown>): Promise<void> => {
      const code = await codeOf(call()).catch((err: unknown) => {
        failures.push(err);
        return Status.OK;
      });
      if (code !== Status.OK && code !== Status.NOT_FOUND) failures.push(new Error(`cleanup ${what}: ${Status[code]}`));
    };
    for (const p of this.#published.reverse()) {
      await attempt('NodeUnpublishVolume', () => c.node.nodeUnpublishVolume({ volumeId: p.volumeId, targetPath: p.path }));
    }
    for (const s of this.#staged.reverse()) {
      await attempt('NodeUnstageVolume', () => c.node.nodeUnstageVolume({ volumeId: s.volumeId, stagingTargetPath: s.path }));
    }
    for (const a of this.#attached.reverse()) {
      await attempt('ControllerUnpublishVolume', () => c.controller.controllerUnpublishVolume(a));
    }
    for (const id of this.#snapshots.reverse()) await attempt('DeleteSnapshot', () => c.controller.deleteSnapshot({ snapshotId: id }));
    for (const id of this.#volumes.reverse()) await attempt('DeleteVolume', () => c.controller.deleteVolume({ volumeId: id }));
    this.#volumes = [];
    this.#snapshots = [];
    this.#attached = [];
    this.#staged = [];
    this.#published = [];
    if (failures.length > 0) throw new AggregateError(failures, `cleanup left ${failures.length} failure(s)`);
  }
}

/**
 * Registers node:test suites that check the plugin `makePlugin` starts.
 * `makePlugin` runs once before the first test; its `cleanup` once after
 * the last. Checks for capabilities the plugin does not advertise are
 * reported as skipped.
 */

/** What the suite knows of the plugin once it started (set in its `before`). */
export interface SuiteState {
  adv: Advertised;
  nodeId: string;
  nodeTopology: Topology | undefined;
}

/** The suite's shared helpers, handed to each section (see describeConformance). */
export interface SuiteKit {
  state(): SuiteState;
  c(): CsiClients;
  res: Resources;
  controller(): boolean;
  ctl(rpc: ControllerRpc): boolean;
  hasNode(): boolean;
  stages(): boolean;
  skipUnless(t: TestContext, cond: boolean, why: string): boolean;
  volumeRequest(prefix: string, extra?: DeepPartial<CreateVolumeRequest>): DeepPartial<CreateVolumeRequest>;
  stagingPath(): Promise<string>;
  targetPath(): Promise<string>;
  mountVolume(
    volume: Volume,
    opts?: { readonly?: boolean; capability?: DeepPartial<VolumeCapability> },
  ): Promise<{ target: string; staging: string; publishContext: Record<string, string> }>;
  unmountVolume(volumeId: string, m: { target: string; staging: string }): Promise<void>;
}

/** Probes until the plugin reports ready (a plugin may say ready=false while starting). */
export async function waitUntilReady(c: CsiClients): Promise<void> {
  await eventually('the plugin to report ready', async () => (await c.identity.probe({})).ready !== false, { intervalMs: 100 });
}

export async function listAllVolumes(c: CsiClients): Promise<Awaited<ReturnType<CsiClients['controller']['listVolumes']>>['entries']> {
  const out = [];
  let token = '';
  do {
    const page = await c.controller.listVolumes({ startingToken: token });
    out.push(...page.entries);
    token = page.nextToken;
  } while (token !== '');
  return out;
}
