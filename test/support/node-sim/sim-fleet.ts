// Many simulated nodes in one process (see sim-node.ts), with what the
// scale scenarios measure and check: heartbeat round trips, which node ran
// each allocation (twice is a bug), and whether every node holds its node
// connection to the leader.

import type { CsiClient, PluginFingerprint } from '../../../src/csi/index.js';
import type { Logger } from '../../../src/lib/index.js';
import { performance } from 'node:perf_hooks';
import { SimNode, threadCpuWaitMs, type SimRecorder } from './sim-node.js';

export interface SimFleetOptions {
  servers: readonly string[];
  token: string;
  count: number;
  /** The index of the first node (its ID and name): a fleet may be one shard of a larger one. Default 0. */
  first?: number;
  /** Node names are `<prefix>-<n>`. Default 'sim'. */
  prefix?: string;
  taskRunMs?: number;
  heartbeatIntervalMs?: number;
  /** Every node reports this CSI node plugin; the first `controllers` nodes (default 1) also run its controller. */
  csi?: { pluginId: string; fingerprint: PluginFingerprint; controller: CsiClient; controllers?: number };
  logger?: Logger;
  /**
   * Nodes started a second (a fleet coming up, as machines boot), spread
   * evenly; unset: all at once (a cluster-wide restart, the worst storm).
   */
  startPerSecond?: number;
  /** Also told of every heartbeat, start and finish as it is recorded (a shard in a worker thread passes them on). */
  tap?: SimRecorder;
}

/** Heartbeat round trips (ms), and in the same order how long the thread that timed each waited for a CPU meanwhile. */
export interface HeartbeatTimes {
  ms: number[];
  simWaitMs: number[];
}

/** The node ID of simulated node `i` (a UUID, as agents make). */
export function simNodeId(i: number): string {
  return `5151a000-0000-4000-8000-${String(i).padStart(12, '0')}`;
}

/** The plugin's node ID of simulated node `i`: what the fake controller is asked to attach volumes to. */
export function simExternalNodeId(i: number): string {
  return `sim-ext-${i}`;
}

/**
 * Lifecycle: `start()` starts every node and returns at once; the wait
 * helpers resolve once the fleet reached a state (they poll the nodes'
 * own flags every 50 ms; no server is asked); `stop()` stops every node.
 */
export class SimFleet {
  readonly nodes: SimNode[] = [];
  /** Heartbeat round trips (ms) since the last `takeHeartbeats()`. */
  #heartbeats: HeartbeatTimes = { ms: [], simWaitMs: [] };
  readonly #started = new Map<string, string[]>();
  readonly #finished = new Map<string, string[]>();

  constructor(opts: SimFleetOptions) {
    this.#startPerSecond = opts.startPerSecond;
    const recorder: SimRecorder = {
      heartbeat: (ms, simWaitMs) => {
        this.#heartbeats.ms.push(ms);
        this.#heartbeats.simWaitMs.push(simWaitMs);
      },
      started: (allocId, nodeId) => {
        push(this.#started, allocId, nodeId);
        opts.tap?.started(allocId, nodeId);
      },
      finished: (allocId, nodeId) => {
        push(this.#finished, allocId, nodeId);
        opts.tap?.finished(allocId, nodeId);
      },
    };
    const first = opts.first ?? 0;
    for (let i = first; i < first + opts.count; i++) {
      // Each node lists the servers from a different one, as agents spread their first choice.
      const servers = opts.servers.map((_s, k) => opts.servers[(i + k) % opts.servers.length] as string);
      const csi = opts.csi;
      this.nodes.push(
        new SimNode({
          servers,
          token: opts.token,
          nodeId: simNodeId(i),
          name: `${opts.prefix ?? 'sim'}-${i}`,
          recorder,
          ...(opts.taskRunMs !== undefined ? { taskRunMs: opts.taskRunMs } : {}),
          ...(opts.heartbeatIntervalMs !== undefined ? { heartbeatIntervalMs: opts.heartbeatIntervalMs } : {}),
          ...(opts.logger ? { logger: opts.logger } : {}),
          ...(csi
            ? {
                csi: {
                  pluginId: csi.pluginId,
                  fingerprint: csi.fingerprint,
                  externalNodeId: simExternalNodeId(i),
                  ...(i < (csi.controllers ?? 1) ? { controller: csi.controller } : {}),
                },
              }
            : {}),
        }),
      );
    }
  }

  start(): void {
    const rate = this.#startPerSecond;
    if (!rate) {
      for (const n of this.nodes) n.start();
      return;
    }
    // Every 100 ms, the nodes whose turn came.
    const t0 = performance.now();
    let next = 0;
    const step = (): void => {
      const due = Math.min(this.nodes.length, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
      for (; next < due; next++) this.nodes[next]?.start();
      if (next < this.nodes.length && !this.#stopped) this.#starter = setTimeout(step, 100);
    };
    step();
  }

  readonly #startPerSecond: number | undefined;
  #starter: NodeJS.Timeout | undefined;
  #stopped = false;

  /** Resolves once every node is registered. */
  waitRegistered(signal?: AbortSignal): Promise<void> {
    return this.until(() => this.nodes.every((n) => n.registration.registered), signal);
  }

  /** Resolves once every node's connection is open (to `server` when given). */
  waitConnected(server?: string, signal?: AbortSignal): Promise<void> {
    return this.until(() => this.nodes.every((n) => n.connection.connected && (server === undefined || n.connection.server === server)), signal);
  }

  /** Each node's successful heartbeats (and registrations) so far, in node order. */
  heartbeatCounts(): number[] {
    return this.nodes.map((n) => n.registration.counts.heartbeats);
  }

  /** How many nodes are registered. */
  registeredCount(): number {
    return this.nodes.filter((n) => n.registration.registered).length;
  }

  /** How many nodes hold an open node connection (to `server` when given). */
  connectedCount(server?: string): number {
    return this.nodes.filter((n) => n.connection.connected && (server === undefined || n.connection.server === server)).length;
  }

  /** The heartbeat round trips recorded since the last call (with the timing thread's CPU wait in each), and starts a new batch. */
  takeHeartbeats(): HeartbeatTimes {
    const out = this.#heartbeats;
    this.#heartbeats = { ms: [], simWaitMs: [] };
    return out;
  }

  /** Allocation IDs that some node started, with the nodes that did. */
  get started(): ReadonlyMap<string, readonly string[]> {
    return this.#started;
  }

  /** Allocation IDs that some node finished, with the nodes that did. */
  get finished(): ReadonlyMap<string, readonly string[]> {
    return this.#finished;
  }

  /** Resolves at once: this fleet's counts are read live (a threaded fleet's mirror waits for its threads). */
  async fresh(_signal?: AbortSignal): Promise<void> {}

  /** What the nodes' allocation watches received so far, summed: reads, pulls, allocations, jobs, status POSTs, and every answer's bytes. */
  syncCounts(): { reads: number; pulls: number; allocations: number; jobs: number; statusPosts: number; answers: number; bytes: number } {
    const sum = { reads: 0, pulls: 0, allocations: 0, jobs: 0, statusPosts: 0, answers: 0, bytes: 0 };
    for (const n of this.nodes) {
      const w = n.watchCounts;
      const r = n.api.received;
      sum.reads += w.reads;
      sum.pulls += w.pulls;
      sum.allocations += w.allocations;
      sum.jobs += w.jobs;
      sum.statusPosts += n.statusPosts;
      sum.answers += r.answers;
      sum.bytes += r.bytes;
    }
    return sum;
  }

  /** This thread's event-loop idle and active time (ms) so far, and its time waiting for a CPU: the simulator's own load, beside every figure. */
  loopTotals(): Array<{ idle: number; active: number; cpuWaitMs: number; delays: readonly number[] }> {
    const { idle, active } = performance.eventLoopUtilization();
    return [{ idle, active, cpuWaitMs: threadCpuWaitMs(), delays: [] }];
  }

  /** Allocations started more than once (by one node or by several): what must never happen. */
  doubled(): string[] {
    return [...this.#started].filter(([, nodes]) => nodes.length > 1).map(([id]) => id);
  }

  /** Resolves once `check()` holds, checking every 50 ms; rejects when `signal` fires first. */
  async until(check: () => boolean, signal?: AbortSignal): Promise<void> {
    while (!check()) {
      if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('the fleet did not get there in time');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#starter);
    await Promise.all(this.nodes.map((n) => n.stop()));
  }
}

/** Appends `value` to `key`'s list. */
export function push(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
