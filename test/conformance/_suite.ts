// Berth's CSI conformance suite, in the spirit of kubernetes-csi's csi-sanity:
// it drives a plugin over its socket with raw generated clients and checks
// what the CSI spec (v1.12) asks of it, choosing checks by what the plugin
// advertises. Anything a test creates is torn down after it (unpublish,
// unstage, controller unpublish, delete), even when the test failed.
//
// Usage (node:test):
//   describeConformance('my plugin', async () => ({ endpoint, stagingRoot, targetRoot, cleanup }));

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, afterEach, before, describe, it, type TestContext } from 'node:test';
import type {
  CreateSnapshotRequest,
  CreateVolumeRequest,
  DeepPartial,
  Snapshot,
  Topology,
  Volume,
  VolumeCapability,
} from '../../src/gen/csi/v1/csi.js';
import {
  AccessMode,
  blockCapability,
  codeOf,
  connect,
  ControllerRpc,
  expectCode,
  mountCapability,
  NodeRpc,
  readAdvertised,
  ServiceType,
  Status,
  uniqueName,
  type Advertised,
  type CsiClients,
} from './_clients.js';
import { eventually } from '../support/eventually.js';

/** A plugin under test, as `makePlugin` hands it to the suite. */
export interface ConformanceTarget {
  /** The plugin's socket, 'unix:///abs/path.sock'. */
  endpoint: string;
  /** A directory the suite may create staging directories in (the CO's job). */
  stagingRoot: string;
  /** A directory the suite may create target parents in. */
  targetRoot: string;
  /** Stops the plugin and removes everything it left, mounts included. Called once, after every test. */
  cleanup(): Promise<void>;
}

const MiB = 1024 * 1024;
/** Small: a conforming plugin may really allocate it. */
const VOLUME_SIZE = 16n * BigInt(MiB);
const EXPANDED_SIZE = 32n * BigInt(MiB);
/** The spec's bound on names a CO may send. */
const MAX_NAME_BYTES = 128;
const PLUGIN_NAME_PATTERN = /^[a-zA-Z0-9]([a-zA-Z0-9.-]{0,61}[a-zA-Z0-9])?$/;

const KNOWN_CONTROLLER_RPCS = new Set(
  Object.values(ControllerRpc).filter((v): v is ControllerRpc => typeof v === 'number' && v > 0),
);
const KNOWN_NODE_RPCS = new Set(Object.values(NodeRpc).filter((v): v is NodeRpc => typeof v === 'number' && v > 0));
const KNOWN_SERVICES = new Set(Object.values(ServiceType).filter((v): v is ServiceType => typeof v === 'number' && v > 0));

/**
 * Everything a test made on the plugin, torn down in the order a CO must
 * use: NodeUnpublish, NodeUnstage, ControllerUnpublish, then snapshots and
 * volumes. NOT_FOUND counts as done. Other failures fail the test.
 */
class Resources {
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
export function describeConformance(name: string, makePlugin: () => Promise<ConformanceTarget>): void {
  describe(`CSI conformance: ${name}`, () => {
    let target: ConformanceTarget | undefined;
    let clients: CsiClients | undefined;
    let adv: Advertised;
    let nodeId = '';
    let nodeTopology: Topology | undefined;
    const c = (): CsiClients => {
      assert.ok(clients, 'the plugin did not start');
      return clients;
    };
    const res = new Resources(c);

    before(async () => {
      target = await makePlugin();
      clients = connect(target.endpoint);
      await waitUntilReady(clients);
      adv = await readAdvertised(clients);
      if (adv.node.size > 0 || (await codeOf(clients.node.nodeGetInfo({}))) === Status.OK) {
        const info = await clients.node.nodeGetInfo({});
        nodeId = info.nodeId;
        nodeTopology = info.accessibleTopology;
      }
    });

    afterEach(() => res.cleanup());

    after(async () => {
      try {
        if (clients) await res.cleanup();
      } finally {
        clients?.close();
        await target?.cleanup();
      }
    });

    // What the plugin offers, for skipping.
    const controller = (): boolean => adv.plugin.has(ServiceType.CONTROLLER_SERVICE);
    const ctl = (rpc: ControllerRpc): boolean => controller() && adv.controller.has(rpc);
    const hasNode = (): boolean => nodeId !== '';
    const stages = (): boolean => adv.node.has(NodeRpc.STAGE_UNSTAGE_VOLUME);
    const skipUnless = (t: TestContext, cond: boolean, why: string): boolean => {
      if (!cond) t.skip(why);
      return !cond;
    };

    const volumeRequest = (prefix: string, extra: DeepPartial<CreateVolumeRequest> = {}): DeepPartial<CreateVolumeRequest> => ({
      name: uniqueName(prefix),
      volumeCapabilities: [mountCapability()],
      capacityRange: { requiredBytes: VOLUME_SIZE },
      ...(nodeTopology ? { accessibilityRequirements: { requisite: [nodeTopology] } } : {}),
      ...extra,
    });

    /** A fresh staging directory, created as a CO does. */
    const stagingPath = async (): Promise<string> => {
      assert.ok(target);
      const p = path.join(target.stagingRoot, uniqueName('stage'));
      await mkdir(p, { recursive: true });
      return p;
    };

    /** A fresh target path whose parent exists (the CO's part); the plugin creates the target itself. */
    const targetPath = async (): Promise<string> => {
      assert.ok(target);
      const parent = path.join(target.targetRoot, uniqueName('pod'));
      await mkdir(parent, { recursive: true });
      return path.join(parent, 'mount');
    };

    /** ControllerPublish (when advertised) + NodeStage (when advertised) + NodePublish; returns the target path. */
    const mountVolume = async (
      volume: Volume,
      opts: { readonly?: boolean; capability?: DeepPartial<VolumeCapability> } = {},
    ): Promise<{ target: string; staging: string; publishContext: Record<string, string> }> => {
      const capability = opts.capability ?? mountCapability();
      let publishContext: Record<string, string> = {};
      if (ctl(ControllerRpc.PUBLISH_UNPUBLISH_VOLUME)) {
        const r = await c().controller.controllerPublishVolume({ volumeId: volume.volumeId, nodeId, volumeCapability: capability, volumeContext: volume.volumeContext });
        res.attached(volume.volumeId, nodeId);
        publishContext = r.publishContext;
      }
      let staging = '';
      if (stages()) {
        staging = await stagingPath();
        await c().node.nodeStageVolume({ volumeId: volume.volumeId, stagingTargetPath: staging, volumeCapability: capability, publishContext, volumeContext: volume.volumeContext });
        res.staged(volume.volumeId, staging);
      }
      const target = await targetPath();
      await c().node.nodePublishVolume({
        volumeId: volume.volumeId,
        stagingTargetPath: staging,
        targetPath: target,
        volumeCapability: capability,
        readonly: opts.readonly ?? false,
        publishContext,
        volumeContext: volume.volumeContext,
      });
      res.published(volume.volumeId, target);
      return { target, staging, publishContext };
    };

    /** The reverse of mountVolume, checking each step. */
    const unmountVolume = async (volumeId: string, m: { target: string; staging: string }): Promise<void> => {
      await c().node.nodeUnpublishVolume({ volumeId, targetPath: m.target });
      if (m.staging) await c().node.nodeUnstageVolume({ volumeId, stagingTargetPath: m.staging });
      if (ctl(ControllerRpc.PUBLISH_UNPUBLISH_VOLUME)) await c().controller.controllerUnpublishVolume({ volumeId, nodeId });
    };

    describe('Identity', () => {
      it('GetPluginInfo names the plugin in domain form (<= 63 chars) with a vendor version', async () => {
        const info = await c().identity.getPluginInfo({});
        assert.ok(info.name.length > 0 && info.name.length <= 63, `name ${JSON.stringify(info.name)} must be 1..63 characters`);
        assert.match(info.name, PLUGIN_NAME_PATTERN, 'name must begin and end with an alphanumeric, with only [a-zA-Z0-9.-] between');
        assert.notEqual(info.vendorVersion, '', 'vendor_version is required');
      });

      it('GetPluginCapabilities lists only capabilities the spec defines', async () => {
        const caps = await c().identity.getPluginCapabilities({});
        for (const cap of caps.capabilities) {
          assert.ok(cap.service || cap.volumeExpansion, 'each capability must set a type');
          if (cap.service) assert.ok(KNOWN_SERVICES.has(cap.service.type), `unknown service type ${cap.service.type}`);
        }
      });

      it('Probe answers without error and reports ready (or leaves ready unset)', async () => {
        const probe = await c().identity.probe({});
        assert.notEqual(probe.ready, false, 'a plugin that finished starting must not report ready=false');
      });
    });

    describe('Controller', () => {
      it('ControllerGetCapabilities lists only capabilities the spec defines', async (t) => {
        if (skipUnless(t, controller(), 'no Controller service')) return;
        for (const rpc of adv.controller) assert.ok(KNOWN_CONTROLLER_RPCS.has(rpc), `unknown controller capability ${rpc}`);
      });

      describe('CreateVolume', () => {
        it('refuses a request without a name, without capabilities or with a capability lacking an access mode (INVALID_ARGUMENT)', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
          const ctrl = c().controller;
          await expectCode(ctrl.createVolume({ volumeCapabilities: [mountCapability()] }), Status.INVALID_ARGUMENT, 'no name');
          await expectCode(ctrl.createVolume({ name: uniqueName('nocaps') }), Status.INVALID_ARGUMENT, 'no capabilities');
          await expectCode(
            ctrl.createVolume({ name: uniqueName('nomode'), volumeCapabilities: [{ mount: {} }] }),
            Status.INVALID_ARGUMENT,
            'capability without access_mode',
          );
        });

        it('creates a volume with an id and at least the required capacity, also with a 128-byte name', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
          const vol = await res.createVolume(volumeRequest('create'));
          assert.ok(vol.capacityBytes === 0n || vol.capacityBytes >= VOLUME_SIZE, `capacity ${vol.capacityBytes} < required ${VOLUME_SIZE}`);
          const long = await res.createVolume(volumeRequest('create', { name: uniqueName('maxlen', MAX_NAME_BYTES) }));
          assert.notEqual(long.volumeId, '');
          if (adv.plugin.has(ServiceType.VOLUME_ACCESSIBILITY_CONSTRAINTS) && nodeTopology) {
            assert.ok(vol.accessibleTopology.length > 0, 'a plugin with accessibility constraints reports accessible_topology');
          }
        });

        it('is idempotent: the same name and arguments give the same volume', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
          const req = volumeRequest('twice');
          const a = await res.createVolume(req);
          const b = await res.createVolume(req);
          assert.equal(b.volumeId, a.volumeId);
          assert.equal(b.capacityBytes, a.capacityBytes);
        });

        it('answers ALREADY_EXISTS for the same name with an incompatible capacity', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
          const req = volumeRequest('conflict', { capacityRange: { requiredBytes: VOLUME_SIZE, limitBytes: VOLUME_SIZE } });
          await res.createVolume(req);
          await expectCode(
            c().controller.createVolume({ ...req, capacityRange: { requiredBytes: 2n * VOLUME_SIZE, limitBytes: 2n * VOLUME_SIZE } }),
            Status.ALREADY_EXISTS,
            'same name, twice the size',
          );
        });

        it('refuses limit_bytes below required_bytes (INVALID_ARGUMENT)', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
          await expectCode(
            c().controller.createVolume(volumeRequest('range', { capacityRange: { requiredBytes: 2n * VOLUME_SIZE, limitBytes: VOLUME_SIZE } })),
            Status.INVALID_ARGUMENT,
            'limit < required',
          );
        });

        it('refuses more than GetCapacity says is available (OUT_OF_RANGE or RESOURCE_EXHAUSTED)', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME) && ctl(ControllerRpc.GET_CAPACITY), 'needs CREATE_DELETE_VOLUME and GET_CAPACITY')) return;
          const { availableCapacity } = await c().controller.getCapacity({ volumeCapabilities: [mountCapability()] });
          if (skipUnless(t, availableCapacity < 2n ** 60n, 'capacity too large to exceed')) return;
          const code = await codeOf(res.createVolume(volumeRequest('toobig', { capacityRange: { requiredBytes: availableCapacity + 1024n ** 3n } })));
          assert.ok(code === Status.OUT_OF_RANGE || code === Status.RESOURCE_EXHAUSTED, `expected OUT_OF_RANGE, got ${Status[code]}`);
        });

        it('answers NOT_FOUND for an unknown content source', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT) || ctl(ControllerRpc.CLONE_VOLUME), 'no snapshots or clones')) return;
          if (ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT)) {
            await expectCode(
              c().controller.createVolume(volumeRequest('nosnap', { volumeContentSource: { snapshot: { snapshotId: 'no-such-snapshot' } } })),
              Status.NOT_FOUND,
              'from unknown snapshot',
            );
          }
          if (ctl(ControllerRpc.CLONE_VOLUME)) {
            await expectCode(
              c().controller.createVolume(volumeRequest('novol', { volumeContentSource: { volume: { volumeId: 'no-such-volume' } } })),
              Status.NOT_FOUND,
              'from unknown volume',
            );
          }
        });
      });

      describe('DeleteVolume', () => {
        it('refuses a request without volume_id (INVALID_ARGUMENT)', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
          await expectCode(c().controller.deleteVolume({}), Status.INVALID_ARGUMENT, 'no volume_id');
        });

        it('succeeds for an unknown volume and when repeated', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
          await c().controller.deleteVolume({ volumeId: 'no-such-volume' });
          const vol = await res.createVolume(volumeRequest('delete'));
          await c().controller.deleteVolume({ volumeId: vol.volumeId });
          await c().controller.deleteVolume({ volumeId: vol.volumeId });
        });
      });

      describe('ValidateVolumeCapabilities', () => {
        it('refuses a request without volume_id or capabilities (INVALID_ARGUMENT) and an unknown volume (NOT_FOUND)', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'needs CREATE_DELETE_VOLUME to make a volume')) return;
          const vol = await res.createVolume(volumeRequest('validate'));
          await expectCode(c().controller.validateVolumeCapabilities({ volumeCapabilities: [mountCapability()] }), Status.INVALID_ARGUMENT, 'no volume_id');
          await expectCode(c().controller.validateVolumeCapabilities({ volumeId: vol.volumeId }), Status.INVALID_ARGUMENT, 'no capabilities');
          await expectCode(
            c().controller.validateVolumeCapabilities({ volumeId: 'no-such-volume', volumeCapabilities: [mountCapability()] }),
            Status.NOT_FOUND,
            'unknown volume',
          );
        });

        it('confirms the capability a volume was created with, echoing the capabilities', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'needs CREATE_DELETE_VOLUME to make a volume')) return;
          const vol = await res.createVolume(volumeRequest('validate'));
          const r = await c().controller.validateVolumeCapabilities({ volumeId: vol.volumeId, volumeCapabilities: [mountCapability()], volumeContext: vol.volumeContext });
          assert.ok(r.confirmed, `expected confirmed, got message ${JSON.stringify(r.message)}`);
          assert.ok(r.confirmed.volumeCapabilities.length > 0, 'confirmed must list the capabilities');
        });
      });

      describe('ControllerPublishVolume / ControllerUnpublishVolume', () => {
        const needs = (t: TestContext): boolean => skipUnless(t, ctl(ControllerRpc.PUBLISH_UNPUBLISH_VOLUME), 'PUBLISH_UNPUBLISH_VOLUME not advertised');

        it('refuses requests without volume_id, node_id or capability (INVALID_ARGUMENT)', async (t) => {
          if (needs(t)) return;
          const ctrl = c().controller;
          await expectCode(ctrl.controllerPublishVolume({ nodeId: 'n', volumeCapability: mountCapability() }), Status.INVALID_ARGUMENT, 'no volume_id');
          await expectCode(ctrl.controllerPublishVolume({ volumeId: 'v', volumeCapability: mountCapability() }), Status.INVALID_ARGUMENT, 'no node_id');
          await expectCode(ctrl.controllerPublishVolume({ volumeId: 'v', nodeId: 'n' }), Status.INVALID_ARGUMENT, 'no capability');
          await expectCode(ctrl.controllerUnpublishVolume({ nodeId: 'n' }), Status.INVALID_ARGUMENT, 'unpublish without volume_id');
        });

        it('answers NOT_FOUND for an unknown volume and for an unknown node', async (t) => {
          if (needs(t)) return;
          await expectCode(
            c().controller.controllerPublishVolume({ volumeId: 'no-such-volume', nodeId: nodeId || 'some-node', volumeCapability: mountCapability() }),
            Status.NOT_FOUND,
            'unknown volume',
          );
          const vol = await res.createVolume(volumeRequest('cpub'));
          await expectCode(
            c().controller.controllerPublishVolume({ volumeId: vol.volumeId, nodeId: 'no-such-node', volumeCapability: mountCapability() }),
            Status.NOT_FOUND,
            'unknown node',
          );
        });

        it('is idempotent: publishing twice gives the same publish_context; unpublishing twice succeeds', async (t) => {
          if (needs(t) || skipUnless(t, hasNode(), 'needs a node id from NodeGetInfo')) return;
          const vol = await res.createVolume(volumeRequest('cpub'));
          const req = { volumeId: vol.volumeId, nodeId, volumeCapability: mountCapability(), volumeContext: vol.volumeContext };
          const a = await c().controller.controllerPublishVolume(req);
          res.attached(vol.volumeId, nodeId);
          const b = await c().controller.controllerPublishVolume(req);
          assert.deepEqual(b.publishContext, a.publishContext);
          if (ctl(ControllerRpc.LIST_VOLUMES) && ctl(ControllerRpc.LIST_VOLUMES_PUBLISHED_NODES)) {
            const listed = (await listAllVolumes(c())).find((e) => e.volume?.volumeId === vol.volumeId);
            assert.deepEqual(listed?.status?.publishedNodeIds, [nodeId], 'ListVolumes reports the node it is published to');
          }
          await c().controller.controllerUnpublishVolume({ volumeId: vol.volumeId, nodeId });
          await c().controller.controllerUnpublishVolume({ volumeId: vol.volumeId, nodeId });
          const gone = await codeOf(c().controller.controllerUnpublishVolume({ volumeId: 'no-such-volume', nodeId }));
          assert.ok(gone === Status.OK || gone === Status.NOT_FOUND, `unpublishing an unknown volume: ${Status[gone]}`);
        });
      });

      describe('ListVolumes', () => {
        const needs = (t: TestContext): boolean =>
          skipUnless(t, ctl(ControllerRpc.LIST_VOLUMES) && ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'needs LIST_VOLUMES and CREATE_DELETE_VOLUME');

        it('lists a new volume and stops listing it once deleted', async (t) => {
          if (needs(t)) return;
          const before = await listAllVolumes(c());
          const vol = await res.createVolume(volumeRequest('list'));
          const during = await listAllVolumes(c());
          assert.equal(during.length, before.length + 1);
          assert.ok(during.some((e) => e.volume?.volumeId === vol.volumeId));
          await c().controller.deleteVolume({ volumeId: vol.volumeId });
          const afterDelete = await listAllVolumes(c());
          assert.ok(!afterDelete.some((e) => e.volume?.volumeId === vol.volumeId));
        });

        it('pages with max_entries and next_token, listing every volume exactly once', async (t) => {
          if (needs(t)) return;
          for (let i = 0; i < 3; i++) await res.createVolume(volumeRequest('page'));
          const all = (await c().controller.listVolumes({})).entries.map((e) => e.volume?.volumeId);
          assert.ok(all.length >= 3);
          const seen: (string | undefined)[] = [];
          let token = '';
          let pages = 0;
          do {
            const page = await c().controller.listVolumes({ maxEntries: 2, startingToken: token });
            assert.ok(page.entries.length <= 2, `page of ${page.entries.length} > max_entries 2`);
            seen.push(...page.entries.map((e) => e.volume?.volumeId));
            token = page.nextToken;
            assert.ok(++pages <= all.length, 'paging does not end');
          } while (token !== '');
          assert.equal(new Set(seen).size, seen.length, 'a volume was listed twice');
          assert.deepEqual([...seen].sort(), [...all].sort());
        });

        it('keeps a token usable (or answers ABORTED) after the last volume of its page is deleted', async (t) => {
          if (needs(t)) return;
          for (let i = 0; i < 3; i++) await res.createVolume(volumeRequest('token'));
          const first = await c().controller.listVolumes({ maxEntries: 1 });
          assert.notEqual(first.nextToken, '', 'more volumes exist, so a next_token is due');
          const deleted = first.entries[0]?.volume?.volumeId ?? '';
          await c().controller.deleteVolume({ volumeId: deleted });
          const rest = c().controller.listVolumes({ startingToken: first.nextToken });
          const code = await codeOf(rest);
          if (code !== Status.OK) {
            assert.equal(code, Status.ABORTED, `a stale token is either still good or ABORTED, got ${Status[code]}`);
            return;
          }
          assert.ok(!(await rest).entries.some((e) => e.volume?.volumeId === deleted), 'the deleted volume was listed');
        });

        it('answers ABORTED for a starting_token it never issued', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.LIST_VOLUMES), 'LIST_VOLUMES not advertised')) return;
          await expectCode(c().controller.listVolumes({ startingToken: 'not-a-token' }), Status.ABORTED, 'bad token');
        });
      });

      describe('GetCapacity', () => {
        it('answers with no arguments', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.GET_CAPACITY), 'GET_CAPACITY not advertised')) return;
          const r = await c().controller.getCapacity({});
          assert.ok(r.availableCapacity >= 0n);
        });
      });

      describe('Snapshots', () => {
        const needs = (t: TestContext): boolean =>
          skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT) && ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'needs CREATE_DELETE_SNAPSHOT');
        const snapshotOf = async (prefix: string, name = uniqueName(prefix)): Promise<{ volume: Volume; snapshot: Snapshot }> => {
          const volume = await res.createVolume(volumeRequest(`${prefix}-src`));
          const snapshot = await res.createSnapshot({ name, sourceVolumeId: volume.volumeId });
          return { volume, snapshot };
        };

        it('refuses CreateSnapshot without name or source volume (INVALID_ARGUMENT), and DeleteSnapshot without id', async (t) => {
          if (needs(t)) return;
          await expectCode(c().controller.createSnapshot({ sourceVolumeId: 'v' }), Status.INVALID_ARGUMENT, 'no name');
          await expectCode(c().controller.createSnapshot({ name: uniqueName('snap') }), Status.INVALID_ARGUMENT, 'no source_volume_id');
          await expectCode(c().controller.deleteSnapshot({}), Status.INVALID_ARGUMENT, 'delete without id');
        });

        it('answers NOT_FOUND for an unknown source volume', async (t) => {
          if (needs(t)) return;
          await expectCode(c().controller.createSnapshot({ name: uniqueName('snap'), sourceVolumeId: 'no-such-volume' }), Status.NOT_FOUND, 'unknown source');
        });

        it('creates a ready snapshot with id, source and creation time; repeating gives the same snapshot', async (t) => {
          if (needs(t)) return;
          const name = uniqueName('snap', MAX_NAME_BYTES);
          const { volume, snapshot } = await snapshotOf('snap', name);
          assert.notEqual(snapshot.snapshotId, '');
          assert.equal(snapshot.sourceVolumeId, volume.volumeId);
          assert.ok(snapshot.creationTime instanceof Date && snapshot.creationTime.getTime() > 0, 'creation_time is required');
          const again = await res.createSnapshot({ name, sourceVolumeId: volume.volumeId });
          assert.equal(again.snapshotId, snapshot.snapshotId);
        });

        it('answers ALREADY_EXISTS for the same name with a different source volume', async (t) => {
          if (needs(t)) return;
          const name = uniqueName('snapname');
          await snapshotOf('snapname', name);
          const other = await res.createVolume(volumeRequest('other'));
          await expectCode(c().controller.createSnapshot({ name, sourceVolumeId: other.volumeId }), Status.ALREADY_EXISTS, 'same name, other source');
        });

        it('deletes a snapshot, and succeeds for an unknown one and when repeated', async (t) => {
          if (needs(t)) return;
          const { snapshot } = await snapshotOf('snapdel');
          await c().controller.deleteSnapshot({ snapshotId: snapshot.snapshotId });
          await c().controller.deleteSnapshot({ snapshotId: snapshot.snapshotId });
          await c().controller.deleteSnapshot({ snapshotId: 'no-such-snapshot' });
          if (ctl(ControllerRpc.LIST_SNAPSHOTS)) {
            const listed = await c().controller.listSnapshots({ snapshotId: snapshot.snapshotId });
            assert.equal(listed.entries.length, 0, 'a deleted snapshot is still listed');
          }
        });
      });

      describe('ListSnapshots', () => {
        const needs = (t: TestContext): boolean =>
          skipUnless(t, ctl(ControllerRpc.LIST_SNAPSHOTS) && ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT), 'needs LIST_SNAPSHOTS and CREATE_DELETE_SNAPSHOT');

        it('filters by snapshot_id and by source_volume_id; unknown ids give an empty list', async (t) => {
          if (needs(t)) return;
          const made: { volume: Volume; snapshot: Snapshot }[] = [];
          for (let i = 0; i < 3; i++) {
            const volume = await res.createVolume(volumeRequest('lsnap'));
            made.push({ volume, snapshot: await res.createSnapshot({ name: uniqueName('lsnap'), sourceVolumeId: volume.volumeId }) });
          }
          const [, middle] = made;
          assert.ok(middle);
          const byId = await c().controller.listSnapshots({ snapshotId: middle.snapshot.snapshotId });
          assert.deepEqual(byId.entries.map((e) => e.snapshot?.snapshotId), [middle.snapshot.snapshotId]);
          const bySource = await c().controller.listSnapshots({ sourceVolumeId: middle.volume.volumeId });
          assert.deepEqual(bySource.entries.map((e) => e.snapshot?.snapshotId), [middle.snapshot.snapshotId]);
          assert.equal((await c().controller.listSnapshots({ snapshotId: 'no-such-snapshot' })).entries.length, 0);
          assert.equal((await c().controller.listSnapshots({ sourceVolumeId: 'no-such-volume' })).entries.length, 0);
        });

        it('pages with max_entries and next_token; ABORTED for a token it never issued', async (t) => {
          if (needs(t)) return;
          const volume = await res.createVolume(volumeRequest('psnap'));
          for (let i = 0; i < 3; i++) await res.createSnapshot({ name: uniqueName('psnap'), sourceVolumeId: volume.volumeId });
          const total = (await c().controller.listSnapshots({})).entries.length;
          const first = await c().controller.listSnapshots({ maxEntries: 2 });
          assert.equal(first.entries.length, 2);
          assert.notEqual(first.nextToken, '');
          const rest = await c().controller.listSnapshots({ startingToken: first.nextToken });
          assert.equal(rest.entries.length, total - 2, 'the rest come in one page without max_entries');
          const ids = [...first.entries, ...rest.entries].map((e) => e.snapshot?.snapshotId);
          assert.equal(new Set(ids).size, ids.length, 'a snapshot was listed twice');
          await expectCode(c().controller.listSnapshots({ startingToken: 'not-a-token' }), Status.ABORTED, 'bad token');
        });
      });

      describe('Content sources', () => {
        it('creates a volume from a snapshot, reporting the source and at least its size', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT), 'CREATE_DELETE_SNAPSHOT not advertised')) return;
          const src = await res.createVolume(volumeRequest('csrc'));
          const snap = await res.createSnapshot({ name: uniqueName('csnap'), sourceVolumeId: src.volumeId });
          const vol = await res.createVolume(volumeRequest('fromsnap', { volumeContentSource: { snapshot: { snapshotId: snap.snapshotId } } }));
          assert.equal(vol.contentSource?.snapshot?.snapshotId, snap.snapshotId);
          assert.ok(vol.capacityBytes === 0n || vol.capacityBytes >= snap.sizeBytes);
        });

        it('creates a volume from another volume, reporting the source', async (t) => {
          if (skipUnless(t, ctl(ControllerRpc.CLONE_VOLUME), 'CLONE_VOLUME not advertised')) return;
          const src = await res.createVolume(volumeRequest('vsrc'));
          const vol = await res.createVolume(volumeRequest('fromvol', { volumeContentSource: { volume: { volumeId: src.volumeId } } }));
          assert.equal(vol.contentSource?.volume?.volumeId, src.volumeId);
        });

        it('copies content: a file written before a snapshot or clone is in the new volumes', async (t) => {
          const cloneOrSnap = ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT) || ctl(ControllerRpc.CLONE_VOLUME);
          if (skipUnless(t, cloneOrSnap && hasNode(), 'needs snapshots or clones, and a Node service to look inside')) return;
          const src = await res.createVolume(volumeRequest('content'));
          const m = await mountVolume(src);
          await writeFile(path.join(m.target, 'hello.txt'), 'hello from the source');
          await unmountVolume(src.volumeId, m);
          const copies: Volume[] = [];
          if (ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT)) {
            const snap = await res.createSnapshot({ name: uniqueName('content'), sourceVolumeId: src.volumeId });
            copies.push(await res.createVolume(volumeRequest('content-snap', { volumeContentSource: { snapshot: { snapshotId: snap.snapshotId } } })));
          }
          if (ctl(ControllerRpc.CLONE_VOLUME)) {
            copies.push(await res.createVolume(volumeRequest('content-clone', { volumeContentSource: { volume: { volumeId: src.volumeId } } })));
          }
          for (const copy of copies) {
            const cm = await mountVolume(copy);
            assert.equal(await readFile(path.join(cm.target, 'hello.txt'), 'utf8'), 'hello from the source');
            await unmountVolume(copy.volumeId, cm);
          }
        });
      });

      describe('ControllerExpandVolume', () => {
        const needs = (t: TestContext): boolean => skipUnless(t, ctl(ControllerRpc.EXPAND_VOLUME), 'EXPAND_VOLUME not advertised');

        it('refuses a request without volume_id or capacity_range (INVALID_ARGUMENT); unknown volume is NOT_FOUND', async (t) => {
          if (needs(t)) return;
          await expectCode(c().controller.controllerExpandVolume({ capacityRange: { requiredBytes: EXPANDED_SIZE } }), Status.INVALID_ARGUMENT, 'no volume_id');
          const vol = await res.createVolume(volumeRequest('expand'));
          await expectCode(c().controller.controllerExpandVolume({ volumeId: vol.volumeId }), Status.INVALID_ARGUMENT, 'no capacity_range');
          await expectCode(
            c().controller.controllerExpandVolume({ volumeId: 'no-such-volume', capacityRange: { requiredBytes: EXPANDED_SIZE } }),
            Status.NOT_FOUND,
            'unknown volume',
          );
        });

        it('grows a volume to at least the requested size, idempotently', async (t) => {
          if (needs(t)) return;
          const vol = await res.createVolume(volumeRequest('expand'));
          const req = { volumeId: vol.volumeId, capacityRange: { requiredBytes: EXPANDED_SIZE }, volumeCapability: mountCapability() };
          const a = await c().controller.controllerExpandVolume(req);
          assert.ok(a.capacityBytes >= EXPANDED_SIZE, `capacity ${a.capacityBytes} < ${EXPANDED_SIZE}`);
          const b = await c().controller.controllerExpandVolume(req);
          assert.equal(b.capacityBytes, a.capacityBytes);
        });
      });
    });

    describe('Node', () => {
      const needsNode = (t: TestContext): boolean => skipUnless(t, hasNode(), 'no Node service');
      const needsVolumes = (t: TestContext): boolean =>
        skipUnless(t, hasNode() && ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'needs a Node service and CreateVolume');

      it('NodeGetCapabilities lists only capabilities the spec defines', async (t) => {
        if (needsNode(t)) return;
        for (const rpc of adv.node) assert.ok(KNOWN_NODE_RPCS.has(rpc), `unknown node capability ${rpc}`);
      });

      it('NodeGetInfo gives a node id (<= 256 bytes), a volume limit >= 0 and, with accessibility constraints, a topology', async (t) => {
        if (needsNode(t)) return;
        const info = await c().node.nodeGetInfo({});
        assert.ok(info.nodeId !== '' && Buffer.byteLength(info.nodeId) <= 256);
        assert.ok(info.maxVolumesPerNode >= 0n);
        if (adv.plugin.has(ServiceType.VOLUME_ACCESSIBILITY_CONSTRAINTS)) assert.ok(info.accessibleTopology, 'accessible_topology is due');
      });

      it('NodeStageVolume refuses missing volume_id, staging path or capability (INVALID_ARGUMENT), and an unknown volume (NOT_FOUND)', async (t) => {
        if (needsNode(t) || skipUnless(t, stages(), 'STAGE_UNSTAGE_VOLUME not advertised')) return;
        const staging = await stagingPath();
        const n = c().node;
        await expectCode(n.nodeStageVolume({ stagingTargetPath: staging, volumeCapability: mountCapability() }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(n.nodeStageVolume({ volumeId: 'v', volumeCapability: mountCapability() }), Status.INVALID_ARGUMENT, 'no staging path');
        await expectCode(n.nodeStageVolume({ volumeId: 'v', stagingTargetPath: staging }), Status.INVALID_ARGUMENT, 'no capability');
        await expectCode(
          n.nodeStageVolume({ volumeId: 'no-such-volume', stagingTargetPath: staging, volumeCapability: mountCapability() }),
          Status.NOT_FOUND,
          'unknown volume',
        );
      });

      it('NodeUnstageVolume refuses missing volume_id or staging path (INVALID_ARGUMENT)', async (t) => {
        if (needsNode(t) || skipUnless(t, stages(), 'STAGE_UNSTAGE_VOLUME not advertised')) return;
        await expectCode(c().node.nodeUnstageVolume({ stagingTargetPath: await stagingPath() }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(c().node.nodeUnstageVolume({ volumeId: 'v' }), Status.INVALID_ARGUMENT, 'no staging path');
      });

      it('NodePublishVolume refuses missing volume_id, target path or capability (INVALID_ARGUMENT), and an unknown volume (NOT_FOUND)', async (t) => {
        if (needsNode(t)) return;
        const target = await targetPath();
        const staging = stages() ? await stagingPath() : '';
        const n = c().node;
        await expectCode(n.nodePublishVolume({ targetPath: target, stagingTargetPath: staging, volumeCapability: mountCapability() }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(n.nodePublishVolume({ volumeId: 'v', stagingTargetPath: staging, volumeCapability: mountCapability() }), Status.INVALID_ARGUMENT, 'no target path');
        await expectCode(n.nodePublishVolume({ volumeId: 'v', targetPath: target, stagingTargetPath: staging }), Status.INVALID_ARGUMENT, 'no capability');
        await expectCode(
          n.nodePublishVolume({ volumeId: 'no-such-volume', targetPath: target, stagingTargetPath: staging, volumeCapability: mountCapability() }),
          Status.NOT_FOUND,
          'unknown volume',
        );
        assert.ok(!existsSync(target), 'a refused NodePublish left the target path behind');
      });

      it('NodeUnpublishVolume refuses missing volume_id or target path (INVALID_ARGUMENT)', async (t) => {
        if (needsNode(t)) return;
        await expectCode(c().node.nodeUnpublishVolume({ targetPath: await targetPath() }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(c().node.nodeUnpublishVolume({ volumeId: 'v' }), Status.INVALID_ARGUMENT, 'no target path');
      });

      it('NodeGetVolumeStats refuses missing fields (INVALID_ARGUMENT); unknown volume or a path it is not at is NOT_FOUND', async (t) => {
        if (needsNode(t) || skipUnless(t, adv.node.has(NodeRpc.GET_VOLUME_STATS), 'GET_VOLUME_STATS not advertised')) return;
        const n = c().node;
        await expectCode(n.nodeGetVolumeStats({ volumePath: '/some/path' }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(n.nodeGetVolumeStats({ volumeId: 'v' }), Status.INVALID_ARGUMENT, 'no volume_path');
        await expectCode(n.nodeGetVolumeStats({ volumeId: 'no-such-volume', volumePath: '/some/path' }), Status.NOT_FOUND, 'unknown volume');
        if (!ctl(ControllerRpc.CREATE_DELETE_VOLUME)) return;
        const vol = await res.createVolume(volumeRequest('stats'));
        await mountVolume(vol);
        await expectCode(n.nodeGetVolumeStats({ volumeId: vol.volumeId, volumePath: 'some/path' }), Status.NOT_FOUND, 'relative path');
        await expectCode(n.nodeGetVolumeStats({ volumeId: vol.volumeId, volumePath: await targetPath() }), Status.NOT_FOUND, 'path it is not at');
      });

      it('NodeExpandVolume refuses missing fields (INVALID_ARGUMENT); an unknown volume is NOT_FOUND', async (t) => {
        if (needsNode(t) || skipUnless(t, adv.node.has(NodeRpc.EXPAND_VOLUME), 'node EXPAND_VOLUME not advertised')) return;
        const n = c().node;
        await expectCode(n.nodeExpandVolume({ volumePath: '/some/path' }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(n.nodeExpandVolume({ volumeId: 'no-such-volume', volumePath: 'some/path' }), Status.NOT_FOUND, 'unknown volume');
        if (!ctl(ControllerRpc.CREATE_DELETE_VOLUME)) return;
        const vol = await res.createVolume(volumeRequest('nexpand'));
        await expectCode(n.nodeExpandVolume({ volumeId: vol.volumeId }), Status.INVALID_ARGUMENT, 'no volume_path');
      });

      it('runs the whole lifecycle, every step repeated once (idempotency), and NodeUnpublish removes the target', async (t) => {
        if (needsVolumes(t)) return;
        const vol = await res.createVolume(volumeRequest('life'));
        const capability = mountCapability();
        let publishContext: Record<string, string> = {};
        const attach = ctl(ControllerRpc.PUBLISH_UNPUBLISH_VOLUME);
        for (let i = 0; i < 2 && attach; i++) {
          publishContext = (await c().controller.controllerPublishVolume({ volumeId: vol.volumeId, nodeId, volumeCapability: capability, volumeContext: vol.volumeContext })).publishContext;
          res.attached(vol.volumeId, nodeId);
        }
        const staging = stages() ? await stagingPath() : '';
        for (let i = 0; i < 2 && staging; i++) {
          await c().node.nodeStageVolume({ volumeId: vol.volumeId, stagingTargetPath: staging, volumeCapability: capability, publishContext, volumeContext: vol.volumeContext });
          res.staged(vol.volumeId, staging);
        }
        const target = await targetPath();
        for (let i = 0; i < 2; i++) {
          await c().node.nodePublishVolume({ volumeId: vol.volumeId, stagingTargetPath: staging, targetPath: target, volumeCapability: capability, publishContext, volumeContext: vol.volumeContext });
          res.published(vol.volumeId, target);
        }
        assert.ok(existsSync(target), 'NodePublish must create the target path');

        if (adv.node.has(NodeRpc.GET_VOLUME_STATS)) {
          const stats = await c().node.nodeGetVolumeStats({ volumeId: vol.volumeId, volumePath: target, stagingTargetPath: staging });
          assert.ok(stats.usage.length > 0, 'stats report some usage');
          for (const u of stats.usage) assert.ok(u.total === 0n || u.available <= u.total, 'available <= total');
        }

        if (adv.node.has(NodeRpc.EXPAND_VOLUME) && adv.onlineExpansion) {
          if (ctl(ControllerRpc.EXPAND_VOLUME)) {
            await c().controller.controllerExpandVolume({ volumeId: vol.volumeId, capacityRange: { requiredBytes: EXPANDED_SIZE }, volumeCapability: capability });
          }
          const grown = await c().node.nodeExpandVolume({ volumeId: vol.volumeId, volumePath: target, stagingTargetPath: staging, capacityRange: { requiredBytes: EXPANDED_SIZE }, volumeCapability: capability });
          assert.ok(grown.capacityBytes === 0n || grown.capacityBytes >= EXPANDED_SIZE);
        }

        for (let i = 0; i < 2; i++) await c().node.nodeUnpublishVolume({ volumeId: vol.volumeId, targetPath: target });
        assert.ok(!existsSync(target), 'NodeUnpublish must remove the target path the plugin created');
        for (let i = 0; i < 2 && staging; i++) await c().node.nodeUnstageVolume({ volumeId: vol.volumeId, stagingTargetPath: staging });
        for (let i = 0; i < 2 && attach; i++) await c().controller.controllerUnpublishVolume({ volumeId: vol.volumeId, nodeId });
        for (let i = 0; i < 2; i++) await c().controller.deleteVolume({ volumeId: vol.volumeId });
      });

      it('publishes one volume at two targets with different readonly flags, but refuses a changed flag at the same target (ALREADY_EXISTS)', async (t) => {
        if (needsVolumes(t)) return;
        const vol = await res.createVolume(volumeRequest('twotargets'));
        const rw = await mountVolume(vol);
        const ro = await targetPath();
        const req = { volumeId: vol.volumeId, stagingTargetPath: rw.staging, volumeCapability: mountCapability(), publishContext: rw.publishContext, volumeContext: vol.volumeContext };
        await c().node.nodePublishVolume({ ...req, targetPath: ro, readonly: true });
        res.published(vol.volumeId, ro);
        await expectCode(c().node.nodePublishVolume({ ...req, targetPath: rw.target, readonly: true }), Status.ALREADY_EXISTS, 'same target, now readonly');
        await expectCode(
          c().node.nodePublishVolume({ ...req, targetPath: rw.target, volumeCapability: mountCapability(AccessMode.MULTI_NODE_MULTI_WRITER) }),
          Status.ALREADY_EXISTS,
          'same target, other access mode',
        );
      });

      it('refuses a block capability for a mount-only plugin, or accepts it consistently', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'needs CreateVolume')) return;
        const code = await codeOf(res.createVolume(volumeRequest('block', { volumeCapabilities: [blockCapability()] })));
        if (code === Status.OK) return;
        assert.equal(code, Status.INVALID_ARGUMENT, `a block capability the plugin cannot serve is INVALID_ARGUMENT, got ${Status[code]}`);
        const vol = await res.createVolume(volumeRequest('block-validate'));
        const r = await c().controller.validateVolumeCapabilities({ volumeId: vol.volumeId, volumeCapabilities: [blockCapability()] });
        assert.equal(r.confirmed, undefined, 'a plugin that refuses block volumes must not confirm a block capability');
      });
    });
  });
}

/** Probes until the plugin reports ready (a plugin may say ready=false while starting). */
async function waitUntilReady(c: CsiClients): Promise<void> {
  await eventually('the plugin to report ready', async () => (await c.identity.probe({})).ready !== false, { intervalMs: 100 });
}

async function listAllVolumes(c: CsiClients): Promise<Awaited<ReturnType<CsiClients['controller']['listVolumes']>>['entries']> {
  const out = [];
  let token = '';
  do {
    const page = await c.controller.listVolumes({ startingToken: token });
    out.push(...page.entries);
    token = page.nextToken;
  } while (token !== '');
  return out;
}
