// A fleet spread over worker threads (sim-thread-worker.ts), so that the
// simulator is not what limits a run of thousands of nodes: each thread runs
// a SimFleet of a contiguous slice of the nodes, and reports every 100 ms
// what the main thread mirrors here (which nodes are registered and
// connected and to which server, heartbeat counts and round trips, the
// allocations started and finished, the sync counts, its event-loop use).
// It answers what the scale scenarios ask of a SimFleet; the mirror lags the
// threads by at most one report.

import { Worker } from 'node:worker_threads';
import type { PluginFingerprint } from '../../../src/csi/index.js';
import { push, type HeartbeatTimes, type SimFleet, type SimFleetOptions } from './sim-fleet.js';

const WORKER = new URL('./sim-thread-worker.ts', import.meta.url);

/** What the scale scenarios ask of a fleet, in one thread or several. */
export type Fleet = Pick<
  SimFleet,
  'start' | 'waitRegistered' | 'registeredCount' | 'waitConnected' | 'connectedCount' | 'takeHeartbeats' | 'heartbeatCounts' | 'started' | 'finished' | 'syncCounts' | 'doubled' | 'until' | 'stop' | 'loopTotals' | 'fresh'
>;

type SyncCounts = ReturnType<SimFleet['syncCounts']>;

/** What a shard is started with (structured-cloned into the worker). */
export interface ShardInit {
  servers: readonly string[];
  token: string;
  first: number;
  count: number;
  taskRunMs?: number;
  heartbeatIntervalMs?: number;
  startPerSecond?: number;
  /** The plugin every node reports; the shard opens its own client to the controller at `endpoint` when it holds a controller node. */
  csi?: { pluginId: string; fingerprint: PluginFingerprint; endpoint: string; controllers?: number };
}

/**
 * A shard's report: flags bit 0 registered, bit 1 connected; serverIndex -1
 * for none. The per-node counts (`heartbeatCounts`, `sync`) come once a
 * second or when the main thread asked ('full'): reading them walks every
 * node's counters, and ten times a second it held each thread's loop ~2 ms
 * (round trips waiting behind it) for figures read only at a scenario's end.
 */
export interface ShardReport {
  flags: Uint8Array;
  serverIndex: Int8Array;
  heartbeatCounts?: number[];
  heartbeats: HeartbeatTimes;
  started: Array<[string, string]>;
  finished: Array<[string, string]>;
  sync?: SyncCounts;
  /** Event-loop idle and active ms since the last report, and the longest event-loop delay (ms) in that time. */
  loop: { idle: number; active: number; maxDelayMs: number; cpuWaitMs: number };
  /** The nodes' warnings since the last report, counted by message and error. */
  warnings: Array<[string, number]>;
  stopped?: true;
}

export interface ThreadedFleetOptions extends Omit<SimFleetOptions, 'csi' | 'logger' | 'tap' | 'first'> {
  threads: number;
  csi?: ShardInit['csi'];
}

interface Shard {
  worker: Worker;
  last?: ShardReport;
  /** The per-node counts of the last full report, and how many full reports came. */
  counts: { heartbeats: number[]; sync?: SyncCounts; reports: number };
  loop: { idle: number; active: number; cpuWaitMs: number; delays: number[] };
  stopped?: () => void;
  failed?: Error;
}

/**
 * Lifecycle: `start()` starts the threads and returns at once; the wait
 * helpers resolve once the mirrored state holds; `stop()` stops every
 * thread's nodes, then the threads (safe twice).
 */
export class ThreadedFleet implements Fleet {
  readonly #opts: ThreadedFleetOptions;
  readonly #shards: Shard[] = [];
  #heartbeats: HeartbeatTimes = { ms: [], simWaitMs: [] };
  readonly #warnings = new Map<string, number>();
  readonly #started = new Map<string, string[]>();
  readonly #finished = new Map<string, string[]>();

  constructor(opts: ThreadedFleetOptions) {
    if (!(opts.threads >= 1)) throw new Error(`a threaded fleet needs at least one thread, not ${opts.threads}`);
    this.#opts = opts;
  }

  start(): void {
    const { threads, count } = this.#opts;
    const per = Math.ceil(count / threads);
    for (let first = 0; first < count; first += per) {
      const init: ShardInit = {
        servers: this.#opts.servers,
        token: this.#opts.token,
        first,
        count: Math.min(per, count - first),
        ...(this.#opts.taskRunMs !== undefined ? { taskRunMs: this.#opts.taskRunMs } : {}),
        ...(this.#opts.heartbeatIntervalMs !== undefined ? { heartbeatIntervalMs: this.#opts.heartbeatIntervalMs } : {}),
        // Each thread starts its share of the fleet's rate.
        ...(this.#opts.startPerSecond ? { startPerSecond: this.#opts.startPerSecond / Math.ceil(count / per) } : {}),
        ...(this.#opts.csi ? { csi: this.#opts.csi } : {}),
      };
      // The worker's TypeScript is loaded through tsx, registered in the worker itself (a loader registered here does not reach it).
      const boot = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(WORKER.href)}); });`;
      const shard: Shard = { worker: new Worker(boot, { eval: true, workerData: init }), loop: { idle: 0, active: 0, cpuWaitMs: 0, delays: [] }, counts: { heartbeats: [], reports: 0 } };
      shard.worker.on('message', (r: ShardReport) => this.#merge(shard, r));
      shard.worker.on('error', (err) => {
        shard.failed = err;
      });
      shard.worker.on('exit', () => shard.stopped?.());
      this.#shards.push(shard);
    }
  }

  #merge(shard: Shard, r: ShardReport): void {
    shard.last = r;
    if (r.heartbeatCounts && r.sync) shard.counts = { heartbeats: r.heartbeatCounts, sync: r.sync, reports: shard.counts.reports + 1 };
    shard.loop.idle += r.loop.idle;
    shard.loop.active += r.loop.active;
    shard.loop.cpuWaitMs = r.loop.cpuWaitMs;
    shard.loop.delays.push(r.loop.maxDelayMs);
    for (const [k, n] of r.warnings) this.#warnings.set(k, (this.#warnings.get(k) ?? 0) + n);
    for (const ms of r.heartbeats.ms) this.#heartbeats.ms.push(ms);
    for (const ms of r.heartbeats.simWaitMs) this.#heartbeats.simWaitMs.push(ms);
    for (const [id, node] of r.started) push(this.#started, id, node);
    for (const [id, node] of r.finished) push(this.#finished, id, node);
    if (r.stopped) void shard.worker.terminate();
  }

  /** Every node's flags in node order (0 for a shard not reported yet). */
  #each(f: (flags: number, server: number) => boolean): boolean {
    return this.#shards.length > 0 && this.#shards.every((s) => {
      if (s.failed) throw s.failed;
      const r = s.last;
      if (!r) return false;
      for (let i = 0; i < r.flags.length; i++) if (!f(r.flags[i] as number, r.serverIndex[i] as number)) return false;
      return true;
    });
  }

  waitRegistered(signal?: AbortSignal): Promise<void> {
    return this.until(() => this.#each((flags) => (flags & 1) !== 0), signal);
  }

  waitConnected(server?: string, signal?: AbortSignal): Promise<void> {
    const want = server === undefined ? -2 : this.#opts.servers.indexOf(server);
    return this.until(() => this.#each((flags, s) => (flags & 2) !== 0 && (want === -2 || s === want)), signal);
  }

  registeredCount(): number {
    let n = 0;
    for (const s of this.#shards) if (s.last) for (const f of s.last.flags) if ((f & 1) !== 0) n++;
    return n;
  }

  connectedCount(server?: string): number {
    const want = server === undefined ? -2 : this.#opts.servers.indexOf(server);
    let n = 0;
    for (const s of this.#shards) {
      const r = s.last;
      if (r) for (let i = 0; i < r.flags.length; i++) if (((r.flags[i] as number) & 2) !== 0 && (want === -2 || r.serverIndex[i] === want)) n++;
    }
    return n;
  }

  takeHeartbeats(): HeartbeatTimes {
    const out = this.#heartbeats;
    this.#heartbeats = { ms: [], simWaitMs: [] };
    return out;
  }

  /** Each node's successful heartbeats, as of each thread's last full report (at most a second old; `fresh()` waits for newer). */
  heartbeatCounts(): number[] {
    return this.#shards.flatMap((s) => s.counts.heartbeats);
  }

  /** Resolves once every thread sent its per-node counts again (heartbeatCounts, syncCounts), asked for now. */
  async fresh(signal?: AbortSignal): Promise<void> {
    const seen = this.#shards.map((s) => s.counts.reports);
    for (const s of this.#shards) s.worker.postMessage('full');
    await this.until(() => this.#shards.every((s, i) => s.counts.reports > (seen[i] ?? 0)), signal);
  }

  get started(): ReadonlyMap<string, readonly string[]> {
    return this.#started;
  }

  get finished(): ReadonlyMap<string, readonly string[]> {
    return this.#finished;
  }

  syncCounts(): SyncCounts {
    const sum: SyncCounts = { reads: 0, pulls: 0, allocations: 0, jobs: 0, statusPosts: 0, answers: 0, bytes: 0 };
    for (const s of this.#shards) for (const k of Object.keys(sum) as Array<keyof SyncCounts>) sum[k] += s.counts.sync?.[k] ?? 0;
    return sum;
  }

  doubled(): string[] {
    return [...this.#started].filter(([, nodes]) => nodes.length > 1).map(([id]) => id);
  }

  /** The nodes' warnings so far (a failed heartbeat or registration, and why), counted by message and error. */
  warningCounts(): Map<string, number> {
    return new Map(this.#warnings);
  }

  /** Each thread's event-loop idle and active time (ms) so far, and the longest event-loop delay of each of its reports (one a 100 ms) so far. */
  loopTotals(): Array<{ idle: number; active: number; cpuWaitMs: number; delays: readonly number[] }> {
    return this.#shards.map((s) => ({ idle: s.loop.idle, active: s.loop.active, cpuWaitMs: s.loop.cpuWaitMs, delays: [...s.loop.delays] }));
  }

  async until(check: () => boolean, signal?: AbortSignal): Promise<void> {
    while (!check()) {
      if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('the fleet did not get there in time');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.#shards.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.stopped = resolve;
            if (s.worker.threadId < 0) return resolve();
            s.worker.postMessage('stop');
          }),
      ),
    );
  }
}
