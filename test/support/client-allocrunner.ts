// Test harness of the allocation runner's tests: a node's client parts wired
// the way the agent wires them (real SQLite state, registry, CSI manager,
// R1's drivers, network manager), a claimer fake that records claims and
// releases, jobs and allocations, and a teardown that stops every runner,
// kills every task and unmounts everything below its temp dir.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { systemClock, type Clock } from '../../src/lib/index.js';
import { parseJobSpec, type Allocation, type Job, type JobSpecInput, type NodeEvent } from '../../src/structs/index.js';
import { mountPointsUnder } from '../../src/client/allocdir/index.js';
import { CsiManager } from '../../src/client/csimanager/index.js';
import { createDrivers, type TaskDriver } from '../../src/client/drivers/index.js';
import { PluginRegistry } from '../../src/client/dynamicplugins/index.js';
import { NetworkManager } from '../../src/client/network/index.js';
import { SqliteClientStateStore } from '../../src/client/state/index.js';
import { AllocRunner } from '../../src/client/allocrunner/index.js';

export { mountPointsUnder };
import type { AllocStatusUpdate, ClaimedVolume, VolumeClaimer, VolumeClaimRequest } from '../../src/client/allocrunner/index.js';

export const BERTH = fileURLToPath(new URL('../../bin/berth.js', import.meta.url));

/** The one wait of the tests (see test/support/eventually.ts): `eventually(what, probe, timeoutMs?)`. */
export { eventually } from './eventually.js';

function unmountAllUnder(root: string): void {
  for (let i = 0; i < 128; i++) {
    // Deepest first, so a parent is never unmounted over its children.
    const left = mountPointsUnder(root);
    if (!left[0]) return;
    try {
      execFileSync('umount', ['-l', left[0]], { stdio: 'ignore' });
    } catch {
      // Gone meanwhile.
    }
  }
}

/** Records claims and releases; answers from its volume table; can be told to refuse. */
export class FakeClaimer implements VolumeClaimer {
  readonly claims: VolumeClaimRequest[] = [];
  readonly releases: Array<{ namespace: string; volumeId: string; allocId: string }> = [];
  readonly volumes = new Map<string, ClaimedVolume>();
  /** Errors the next claims throw, in order. */
  readonly failClaims: unknown[] = [];
  /** While true, claims of unknown volumes are refused as exhausted (retryable) rather than NOT_FOUND. */
  waitForVolumes = false;

  async claim(req: VolumeClaimRequest): Promise<{ volume: ClaimedVolume; publishContext: Record<string, string> }> {
    this.claims.push(req);
    const fail = this.failClaims.shift();
    if (fail) throw fail;
    const volume = this.volumes.get(req.volumeId);
    if (!volume && this.waitForVolumes) throw Object.assign(new Error(`volume ${req.volumeId} is not registered yet`), { code: 'CLAIM_EXHAUSTED' });
    if (!volume) throw Object.assign(new Error(`volume ${req.volumeId} not found`), { code: 'NOT_FOUND' });
    // A SecretMap keeps its values in a private field that structuredClone drops: hand it on as it is.
    const { secrets, ...plain } = volume;
    return { volume: { ...structuredClone(plain), ...(secrets ? { secrets } : {}) }, publishContext: { attachedBy: 'fake' } };
  }

  async release(req: { namespace: string; volumeId: string; allocId: string }): Promise<void> {
    this.releases.push(req);
  }

  /** Claims of one allocation. */
  claimsOf(allocId: string): VolumeClaimRequest[] {
    return this.claims.filter((c) => c.allocId === allocId);
  }

  /** Whether the allocation holds a claim on the volume (claimed, not released since). */
  holds(volumeId: string, allocId: string): boolean {
    const c = this.claims.filter((x) => x.volumeId === volumeId && x.allocId === allocId).length;
    const r = this.releases.filter((x) => x.volumeId === volumeId && x.allocId === allocId).length;
    return c > r && c > 0;
  }
}

let allocSeq = 0;

export function makeJob(spec: JobSpecInput): Job {
  const parsed = parseJobSpec(spec);
  return { ...parsed, stop: false, status: 'running', version: 0, groupVersions: {}, submitTime: 0, createIndex: 1, modifyIndex: 1 };
}

export function makeAlloc(job: Job, extra: Partial<Allocation> = {}): Allocation {
  allocSeq += 1;
  const id = `${process.pid.toString(16)}${allocSeq.toString(16).padStart(4, '0')}-aaaa-bbbb-cccc-${Date.now().toString(16).padStart(12, '0')}`;
  return {
    id,
    namespace: job.namespace,
    jobId: job.id,
    jobVersion: job.version,
    taskGroup: job.groups[0]!.name,
    index: 0,
    nodeId: 'node-1',
    desiredStatus: 'run',
    desiredDescription: '',
    clientStatus: 'pending',
    clientDescription: '',
    taskStates: {},
    rescheduleAttempts: 0,
    createIndex: 1,
    modifyIndex: 1,
    createTime: 0,
    modifyTime: 0,
    ...extra,
  };
}

/** A hostpath plugin job run by raw_exec, as a monolith. */
export function hostpathPluginJob(dataDir: string, id = 'hostpath-plugin'): Job {
  return makeJob({
    id,
    type: 'system',
    groups: [
      {
        name: 'plugin',
        restart: { attempts: 5, interval: '1m', delay: '200ms', mode: 'delay' },
        tasks: [
          {
            name: 'plugin',
            driver: 'raw_exec',
            config: { command: process.execPath, args: [BERTH, 'plugin', 'hostpath', '--node-id', 'node-1', '--data-dir', dataDir, '--log-level', 'silent'] },
            csiPlugin: { id: 'hostpath', type: 'monolith', mountDir: '/csi', healthTimeout: '20s' },
          },
        ],
      },
    ],
  });
}

/** The node agent's parts, wired as R3's Client wires them. */
export class Node {
  readonly dir: string;
  readonly statePath: string;
  store: SqliteClientStateStore;
  registry: PluginRegistry;
  csiManager: CsiManager;
  drivers: Map<string, TaskDriver>;
  readonly network: NetworkManager;
  readonly claimer: FakeClaimer;
  readonly runners = new Map<string, AllocRunner>();
  readonly statuses: AllocStatusUpdate[] = [];
  readonly nodeEvents: NodeEvent[] = [];
  readonly clock: Clock = systemClock;
  readonly hostVolumes: Record<string, string>;
  readonly extraPids: number[] = [];

  constructor(opts: { dir?: string; claimer?: FakeClaimer; hostVolumes?: Record<string, string>; network?: NetworkManager } = {}) {
    this.dir = opts.dir ?? mkdtempSync('/tmp/b2-');
    this.network = opts.network ?? new NetworkManager({ prefix: 'b2t-' });
    this.statePath = path.join(this.dir, 'state', 'client.db');
    this.claimer = opts.claimer ?? new FakeClaimer();
    this.hostVolumes = opts.hostVolumes ?? {};
    this.store = SqliteClientStateStore.open(this.statePath);
    this.registry = new PluginRegistry({ store: this.store });
    this.csiManager = this.#csiManager();
    this.drivers = createDrivers({ stateDir: path.join(this.dir, 'd') });
  }

  #csiManager(): CsiManager {
    return new CsiManager({
      registry: this.registry,
      store: this.store,
      updateNodePlugin: () => undefined,
      emitNodeEvent: (e) => {
        this.nodeEvents.push(e);
        for (const r of this.runners.values()) r.pluginEvent(e);
      },
      onHealthTimeout: (plugin, type, reason) => {
        this.runners.get(plugin.allocId)?.pluginHealthTimeout(plugin, type, reason);
      },
      probeIntervalMs: 200,
      healthTimeoutMs: 10_000,
      resyncIntervalMs: 1_000,
      retryBackoff: { maxAttempts: Infinity, initialDelayMs: 50, maxDelayMs: 300, multiplier: 2, jitter: 0 },
    });
  }

  async start(): Promise<void> {
    await this.csiManager.start();
  }

  runner(alloc: Allocation, job: Job): AllocRunner {
    const r = new AllocRunner({
      alloc,
      job,
      drivers: this.drivers,
      registry: this.registry,
      csiManager: this.csiManager,
      network: this.network,
      claimer: this.claimer,
      onStatus: (u) => this.statuses.push(structuredClone(u)),
      store: this.store,
      allocDirRoot: path.join(this.dir, 'allocs'),
      pluginDirRoot: path.join(this.dir, 'p'),
      hostVolumes: this.hostVolumes,
      clock: this.clock,
      retry: { initialDelayMs: 20, maxDelayMs: 200 },
      killTimeoutMs: 2_000,
    });
    this.runners.set(alloc.id, r);
    return r;
  }

  /** The agent stops (tasks keep running), as on SIGTERM. */
  async stopAgent(): Promise<void> {
    for (const r of this.runners.values()) await r.shutdown();
    this.runners.clear();
    await this.csiManager.stop();
    for (const d of this.drivers.values()) await d.shutdown();
    this.registry.close();
    this.store.close();
  }

  /** A new agent over the same state (after stopAgent). */
  async startAgentAgain(): Promise<void> {
    this.store = SqliteClientStateStore.open(this.statePath);
    this.registry = new PluginRegistry({ store: this.store });
    this.csiManager = this.#csiManager();
    this.drivers = createDrivers({ stateDir: path.join(this.dir, 'd') });
    await this.csiManager.start();
  }

  /** Host pid of a task of a runner (R1's inspectTask). */
  pidOf(r: AllocRunner, task: string): number {
    const id = r.taskIds()[task];
    if (!id) throw new Error(`task ${task} of ${r.id} does not run`);
    return this.drivers.get('raw_exec')!.inspectTask(id).pid;
  }

  statusOf(allocId: string): AllocStatusUpdate | undefined {
    return this.statuses.filter((s) => s.allocId === allocId).at(-1);
  }

  /** Destroys every runner, kills what is left, unmounts and removes the temp dir. */
  async cleanup(): Promise<void> {
    for (const r of this.runners.values()) await r.destroy().catch(() => undefined);
    await this.csiManager.stop().catch(() => undefined);
    for (const d of this.drivers.values()) await d.shutdown().catch(() => undefined);
    try {
      this.registry.close();
      this.store.close();
    } catch {
      // Closed already.
    }
    for (const pid of this.extraPids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone.
      }
    }
    await sleep(50);
    unmountAllUnder(this.dir);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
