// One simulated client node: it talks to the servers exactly as a real
// agent does, through the agent's own serverconn parts (NodeRegistration
// for register and heartbeats, AllocWatcher for the blocking allocation
// reads, StatusReporter for batched status updates, NodeConnection for the
// server's calls, and ServerApi for volume claims), but runs no task: an
// allocation it is given "runs" at once and, for a batch job, completes
// after `taskRunMs`. CSI: the node reports a node plugin in its
// fingerprint (and a controller when it is given the controller's
// CsiClient); it claims an allocation's volumes before "running" it and
// releases them once it is done, and answers the server's node calls
// (controller calls through the agent's own translation to the real
// controller plugin; node detach as done, since nothing was mounted).

import { connectionLivenessMs, controllerCallHandlers, errorAnswer, NodeConnection, NodeRegistration, ServerApi, ServerConnError, StatusReporter, AllocWatcher, type AllocUpdate, type AllocWatcherCounts, type NodeAllocation, type NodeRpcHandlers } from '../../../src/client/serverconn/index.js';
import { openSync, readFileSync, readSync } from 'node:fs';
import type { CsiClient, PluginFingerprint } from '../../../src/csi/index.js';
import { BACKOFF, backoffDelay, silentLogger, systemClock, type Logger } from '../../../src/lib/index.js';
import type { CsiPluginReport, NodeFingerprint, NodeRpcMethod, NodeRpcRequest, NodeRpcResponse, TaskState } from '../../../src/structs/index.js';

/** What a fleet shares with its nodes: where figures go. */
export interface SimRecorder {
  /**
   * One heartbeat's round trip, in ms (failed ones are not recorded), and how
   * long the thread that timed it waited for a CPU meanwhile (runnable, not
   * running): an answer that came in while the thread waited was timed late
   * by up to that much.
   */
  heartbeat(ms: number, simWaitMs: number): void;
  /** An allocation started "running" on `nodeId` (a second call for one ID means it ran twice). */
  started(allocId: string, nodeId: string): void;
  /** An allocation's tasks finished on `nodeId`. */
  finished(allocId: string, nodeId: string): void;
}

export interface SimCsiOptions {
  pluginId: string;
  /** A real fingerprint of the plugin (CsiClient.fingerprint({ node: true })); its node ID is replaced by this node's. */
  fingerprint: PluginFingerprint;
  /** The plugin's node ID for this node (what ControllerPublish is asked to attach to). */
  externalNodeId: string;
  /** This node also runs the plugin's controller, reached through this client. */
  controller?: CsiClient;
}

export interface SimNodeOptions {
  /** Every server's URL (the node tries them in this order, as an agent does). */
  servers: readonly string[];
  /** A token of the node role. */
  token: string;
  nodeId: string;
  name: string;
  datacenter?: string;
  /** Default 4,000 MHz and 8 GiB, a small machine: room for 40 of the sim jobs' allocations. */
  resources?: { cpuMhz: number; memoryMb: number };
  /** Drivers the node reports healthy. Default ['raw_exec']. */
  drivers?: readonly string[];
  /** How long a batch allocation "runs" before it completes. Default 0. */
  taskRunMs?: number;
  /** Heartbeat interval asked for (capped by the agent's code at a third of the server's TTL). */
  heartbeatIntervalMs?: number;
  csi?: SimCsiOptions;
  recorder: SimRecorder;
  logger?: Logger;
}

interface Running {
  alloc: NodeAllocation;
  done: boolean;
  timer?: NodeJS.Timeout;
}

/**
 * Lifecycle: `start()` begins registering and returns at once (the node's
 * loops then run in the background, retrying forever as an agent's do);
 * `stop()` ends them and waits (safe twice). The node never throws for a
 * server that is down.
 */
export class SimNode {
  readonly nodeId: string;
  readonly api: ServerApi;
  readonly registration: NodeRegistration;
  readonly connection: NodeConnection;
  readonly #opts: SimNodeOptions;
  readonly #reporter: StatusReporter;
  readonly #watcher: AllocWatcher;
  readonly #allocs = new Map<string, Running>();
  readonly #stop = new AbortController();
  readonly #work = new Set<Promise<void>>();

  constructor(opts: SimNodeOptions) {
    this.#opts = opts;
    this.nodeId = opts.nodeId;
    const logger = opts.logger ?? silentLogger();
    const recorder = opts.recorder;
    // The agent's own client, timing each heartbeat's round trip as the node sees it.
    this.api = new (class extends ServerApi {
      override async heartbeat(...args: Parameters<ServerApi['heartbeat']>): ReturnType<ServerApi['heartbeat']> {
        const t = performance.now();
        const w = threadCpuWaitMs();
        const answer = await super.heartbeat(...args);
        recorder.heartbeat(performance.now() - t, threadCpuWaitMs() - w);
        return answer;
      }
    })({ address: opts.servers, token: opts.token });
    this.registration = new NodeRegistration({
      api: this.api,
      nodeId: opts.nodeId,
      fingerprint: () => this.fingerprint(),
      logger,
      ...(opts.heartbeatIntervalMs !== undefined ? { heartbeatIntervalMs: opts.heartbeatIntervalMs } : {}),
    });
    this.#reporter = new StatusReporter({ api: this.api, nodeId: opts.nodeId, logger });
    this.#watcher = new AllocWatcher({ api: this.api, nodeId: opts.nodeId, logger, onAllocations: (_list, _index, update) => this.#onAllocations(update) });
    this.connection = new NodeConnection({
      address: opts.servers,
      authHeader: this.api.authHeader(),
      nodeId: () => opts.nodeId,
      handle: (req, o) => this.#handle(req, o.signal),
      livenessMs: () => connectionLivenessMs(this.registration.ttlMs),
      logger,
    });
  }

  /** The fingerprint the node registers with and heartbeats. */
  fingerprint(): NodeFingerprint {
    const o = this.#opts;
    const drivers: NodeFingerprint['drivers'] = {};
    for (const d of o.drivers ?? ['raw_exec']) drivers[d] = { detected: true, healthy: true, healthReason: 'healthy', networkModes: ['host'], cgroups: 'none' };
    const csiNodePlugins: Record<string, CsiPluginReport> = {};
    const csiControllerPlugins: Record<string, CsiPluginReport> = {};
    if (o.csi) {
      const fp = o.csi.fingerprint;
      const report = (type: CsiPluginReport['type'], fingerprint: PluginFingerprint): CsiPluginReport => ({
        pluginId: o.csi!.pluginId,
        type,
        allocId: `sim-plugin-${o.nodeId}`,
        healthy: true,
        healthReason: 'healthy',
        provider: fp.info.name,
        version: fp.info.vendorVersion,
        fingerprint,
        updatedAt: 0,
      });
      const nodeInfo = fp.node ? { ...fp.node, info: { ...fp.node.info, nodeId: o.csi.externalNodeId } } : undefined;
      const { node: _node, ...rest } = fp;
      csiNodePlugins[o.csi.pluginId] = report('csi-node', { ...rest, ...(nodeInfo ? { node: nodeInfo } : {}) });
      if (o.csi.controller) csiControllerPlugins[o.csi.pluginId] = report('csi-controller', fp);
    }
    return {
      name: o.name,
      datacenter: o.datacenter ?? 'dc1',
      httpAddr: '',
      drivers,
      resources: o.resources ?? { cpuMhz: 4_000, memoryMb: 8_192 },
      attributes: { 'kernel.name': 'linux', 'berth.simulated': 'true' },
      csiControllerPlugins,
      csiNodePlugins,
    };
  }

  /** Allocations this node holds that have not finished. */
  get active(): number {
    let n = 0;
    for (const r of this.#allocs.values()) if (!r.done) n++;
    return n;
  }

  start(): void {
    this.registration.start();
    void this.registration.waitRegistered().then(() => {
      if (this.#stop.signal.aborted) return;
      this.connection.start();
      this.#watcher.start();
    });
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    for (const r of this.#allocs.values()) clearTimeout(r.timer);
    await Promise.all([this.#watcher.stop(), this.connection.stop(), this.registration.stop()]);
    await Promise.allSettled([...this.#work]);
    await this.#reporter.stop();
    this.api.close();
  }

  /** What the agent's watcher reads, for the figures: reads, pulls, allocations and jobs received. */
  get watchCounts(): AllocWatcherCounts {
    return this.#watcher.counts;
  }

  /** Status POSTs the node's reporter made, for the figures. */
  get statusPosts(): number {
    return this.#reporter.counts.batches;
  }

  #onAllocations({ changed, removed }: AllocUpdate): void {
    // Collected by the server: forgotten here too, as the agent destroys them.
    for (const id of removed) {
      const known = this.#allocs.get(id);
      if (!known?.done) continue;
      clearTimeout(known.timer);
      this.#allocs.delete(id);
    }
    for (const alloc of changed) {
      const known = this.#allocs.get(alloc.id);
      if (known) {
        if (!known.done && alloc.desiredStatus !== 'run') this.#track(this.#finish(known, 'stopped by the server'));
        continue;
      }
      if (alloc.desiredStatus !== 'run' || ['complete', 'failed', 'lost'].includes(alloc.clientStatus)) continue;
      const running: Running = { alloc, done: false };
      this.#allocs.set(alloc.id, running);
      this.#track(this.#run(running));
    }
  }

  #track(p: Promise<void>): void {
    this.#work.add(p);
    void p.finally(() => this.#work.delete(p));
  }

  async #run(r: Running): Promise<void> {
    const { alloc } = r;
    const signal = this.#stop.signal;
    for (const v of alloc.csiVolumes ?? []) {
      // As the agent's CSI hook: retry what may cure itself (another writer, the server unreachable).
      for (let attempt = 1; ; attempt++) {
        try {
          await this.api.claim({ namespace: alloc.namespace, volumeId: v.volumeId, allocId: alloc.id, mode: v.readOnly ? 'read' : 'write' }, { signal });
          break;
        } catch (err) {
          if (signal.aborted) return;
          if (!(err instanceof ServerConnError) || !err.retryable) {
            this.#report(alloc, 'failed', `claiming volume ${v.volumeId}: ${String((err as Error).message)}`, 'dead', true);
            r.done = true;
            return;
          }
          await systemClock.sleep(backoffDelay(BACKOFF.reconnect, attempt), signal).catch(() => undefined);
          if (signal.aborted) return;
        }
      }
    }
    if (r.done) return;
    this.#opts.recorder.started(alloc.id, this.nodeId);
    this.#report(alloc, 'running', 'Tasks are running', 'running', false);
    if (alloc.job?.type === 'batch') {
      r.timer = setTimeout(() => this.#track(this.#finish(r, 'All tasks have completed')), this.#opts.taskRunMs ?? 0);
    }
  }

  async #finish(r: Running, why: string): Promise<void> {
    if (r.done) return;
    r.done = true;
    clearTimeout(r.timer);
    const { alloc } = r;
    this.#opts.recorder.finished(alloc.id, this.nodeId);
    this.#report(alloc, 'complete', why, 'dead', false);
    const signal = this.#stop.signal;
    for (const v of alloc.csiVolumes ?? []) {
      for (let attempt = 1; !signal.aborted; attempt++) {
        try {
          await this.api.release({ namespace: alloc.namespace, volumeId: v.volumeId, allocId: alloc.id }, { signal });
          break;
        } catch (err) {
          if (err instanceof ServerConnError && (err.apiCode === 'NOT_FOUND' || !err.retryable)) break;
          await systemClock.sleep(backoffDelay(BACKOFF.reconnect, attempt), signal).catch(() => undefined);
        }
      }
    }
  }

  #report(alloc: NodeAllocation, clientStatus: 'running' | 'complete' | 'failed', description: string, state: TaskState['state'], failed: boolean): void {
    const now = Date.now();
    const group = alloc.job?.groups.find((g) => g.name === alloc.taskGroup);
    const taskStates: Record<string, TaskState> = {};
    for (const t of group?.tasks ?? []) {
      taskStates[t.name] = {
        state,
        failed,
        restarts: 0,
        startedAt: now,
        finishedAt: state === 'dead' ? now : 0,
        events: [{ at: now, type: state === 'dead' ? 'Terminated' : 'Started', message: description, details: {} }],
      };
    }
    // As the agent does: a batch allocation's `running` waits a moment for its end, to go in one POST with it.
    this.#reporter.report({ id: alloc.id, clientStatus, clientDescription: description, taskStates }, { hold: clientStatus === 'running' && alloc.job?.type === 'batch' });
  }

  /** The server's calls on this node: controller calls to the real controller plugin; node detach is done (nothing was mounted). */
  async #handle(req: NodeRpcRequest, signal: AbortSignal): Promise<NodeRpcResponse> {
    const handlers = (this.#handlers ??= this.#makeHandlers());
    const handler = handlers[req.method] as ((p: unknown, s: AbortSignal) => Promise<unknown>) | undefined;
    if (!handler) return { id: req.id, error: { code: 'NODE_UNKNOWN_METHOD', message: `this simulated node does not serve ${req.method}`, final: true, retryable: false } };
    try {
      return { id: req.id, result: await handler(req.params, signal) };
    } catch (err) {
      return { id: req.id, error: errorAnswer(err) };
    }
  }

  #handlers: Partial<NodeRpcHandlers<NodeRpcMethod>> | undefined;

  #makeHandlers(): Partial<NodeRpcHandlers<NodeRpcMethod>> {
    const controller = this.#opts.csi?.controller;
    return {
      ...(controller ? controllerCallHandlers(() => Promise.resolve(controller)) : {}),
      'csi.node.detach': () => Promise.resolve({ alreadyDone: true }),
      'csi.node.inventory': () => Promise.resolve({ records: [], strayMounts: [] }),
    };
  }
}

/** This thread's schedstat, kept open: each heartbeat reads it twice (open, read and close cost 35-50 us a read here, a read at offset 0 of the open file 5-6 us). */
let ownSchedstat: { fd: number; buf: Buffer } | undefined;

/**
 * How long a thread has been runnable but not running so far (ms), from
 * Linux's schedstat: the calling thread's, or with `pid` that process's main
 * thread's; 0 where there is none (or `pid` is gone). A round
 * trip timed by a thread that waited for a CPU includes that wait. The
 * calling thread's file stays open for the thread's life (one descriptor a
 * thread: a worker thread has its own copy of this module).
 */
export function threadCpuWaitMs(pid?: number): number {
  try {
    if (pid !== undefined) return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'latin1').split(' ')[1]) / 1e6 || 0;
    ownSchedstat ??= { fd: openSync('/proc/thread-self/schedstat', 'r'), buf: Buffer.alloc(128) };
    const { fd, buf } = ownSchedstat;
    const n = readSync(fd, buf, 0, buf.length, 0);
    return Number(buf.toString('latin1', 0, n).split(' ')[1]) / 1e6 || 0;
  } catch {
    return 0;
  }
}
