// The evaluation worker: runs the scheduler for the evaluations left pending
// (a job registered: the POST answered once the job and its evaluation were
// durable), and evaluates jobs again when the world changes under them,
// without anyone asking. It follows the store's change events:
// - pending evaluations appear: every one is run, oldest first, several per
//   store write; before each write it yields to the event loop and waits
//   until the API is quiet (RequestsInFlight; at most MAX_DEFER_MS, or
//   MAX_BURST_DEFER_MS while a burst is still being answered), so that the
//   API's requests are answered before the next batch (a user's POST never
//   waits behind a burst of 200 evaluations);
// - a node joins, goes down or changes what it can run: system jobs (run on
//   every eligible node) and jobs with allocations there are evaluated;
// - an allocation fails: its job is evaluated (rescheduling per policy, at
//   once or, after the policy's delay, by a timer on the injectable clock);
// - a claim is freed or a plugin changes: blocked evaluations are retried;
// - on start, pending/blocked evaluations and jobs with delayed reschedules
//   left by a previous server are picked up.

import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { AbortedError, describeError, Lifecycle, linkSignals, WAIT_ENDED, systemClock, type Clock, type LifecycleState, type Logger } from '../../lib/index.js';
import { isClientTerminal, type Allocation, type Evaluation, type Job, type Node } from '../../structs/index.js';
import { rowKey, type DataTable, type StateStore, type StoreEvent } from '../state/index.js';
import { DEFAULT_EVAL_BATCH, type JobService } from './job-service.js';

export interface EvalWorkerOptions {
  store: StateStore;
  jobs: JobService;
  clock?: Clock;
  logger: Logger;
  /** Pending evaluations run in one store write (default DEFAULT_EVAL_BATCH). */
  batch?: number;
  /**
   * Resolves when the API serves no write request (the server's
   * RequestsInFlight): each batch of evaluations waits for it, MAX_DEFER_MS
   * at most over a pass, so a burst of submissions is answered before the
   * scheduler takes the event loop. Absent: batches only yield a turn.
   */
  quiet?: () => Promise<void>;
  /**
   * Whether the API is still answering a burst of write requests (the
   * server's RequestsInFlight.inBurst): while it is, the wait for quiet runs
   * past MAX_DEFER_MS, up to MAX_BURST_DEFER_MS. Absent: never.
   */
  inBurst?: () => boolean;
}

/**
 * The longest one pass of the worker (its batches, or the jobs a change
 * re-evaluates) waits for the API to go quiet, in all: under a steady stream
 * of writes it runs anyway. 500 ms cut into a burst of 200 submissions (about
 * half a second of answering on a 2-core machine) and left its last answers
 * a second behind the rest.
 */
export const MAX_DEFER_MS = 1000;

/**
 * How long one pass waits for the API to go quiet, in all, while a burst is
 * still being answered (requests overlapping, or beginning within
 * RequestsInFlight's BURST_SETTLE_MS of each other). A loaded machine (load
 * 13-25 on 2 cores) answers 200 submissions over 1-2.5 s: after
 * MAX_DEFER_MS the scheduler took the event loop mid-burst (~1-1.5 ms a
 * job), the CPU a registration doubled until all were answered and so did
 * the latencies. The cap bounds what a stream that never stops overlapping
 * delays its evaluations by.
 */
export const MAX_BURST_DEFER_MS = 3000;

/** Past MAX_DEFER_MS, how often the worker asks again whether the API's burst goes on. */
const BURST_RECHECK_MS = 20;

/** How long after a failed pass (etcd unavailable, a write that timed out) the pending evaluations are run again. */
export const PENDING_RETRY_MS = 1000;

const TOPICS: readonly DataTable[] = ['nodes', 'allocations', 'claims', 'plugins', 'jobs', 'evaluations'];

/** What about a node matters to placement: a change here re-evaluates. */
function nodeSignature(n: Node): string {
  const drivers = Object.entries(n.drivers).map(([k, d]) => `${k}:${d.detected}:${d.healthy}:${d.networkModes.join(',')}:${d.cgroups ?? 'none'}`);
  const plugins = Object.entries(n.csiNodePlugins).map(([k, p]) => `${k}:${p.healthy}`);
  // Class, meta and attributes are what constraints read: a change may unblock (or strand) placements.
  const rules = JSON.stringify([n.nodeClass ?? '', Object.entries(n.meta ?? {}).sort(), Object.entries(n.attributes).sort()]);
  return `${n.status}|${n.schedulingEligibility ?? 'eligible'}|${n.drainStrategy ? 'draining' : ''}|${n.registerIndex ?? 0}|${n.datacenter}|${n.resources.cpuMhz}/${n.resources.memoryMb}|${drivers.sort().join(';')}|${plugins.sort().join(';')}|${rules}`;
}

export class EvalWorker {
  readonly #store: StateStore;
  readonly #jobs: JobService;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #life: Lifecycle;
  #nodeSigs = new Map<string, string>();
  /** `namespace\0jobId` -> the timer of its delayed re-evaluation. */
  readonly #timers = new Map<string, { at: number; abort: AbortController }>();
  #lastIndex = 0;
  readonly #batch: number;
  readonly #quiet: (() => Promise<void>) | undefined;
  readonly #inBurst: () => boolean;
  /** A retry of the pending evaluations is scheduled (#retryPendingLater). */
  #pendingRetry = false;

  constructor(opts: EvalWorkerOptions) {
    this.#store = opts.store;
    this.#jobs = opts.jobs;
    this.#batch = opts.batch ?? DEFAULT_EVAL_BATCH;
    this.#quiet = opts.quiet;
    this.#inBurst = opts.inBurst ?? (() => false);
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger.child({ component: 'eval-worker' });
    this.#life = new Lifecycle({ logger: this.#log });
  }

  /** Started and not asked to stop. */
  get running(): boolean {
    return this.#life.state !== 'new' && !this.#life.stopRequested;
  }

  /** The lib Lifecycle's state: new, starting, running, stopping, stopped. */
  get state(): LifecycleState {
    return this.#life.state;
  }

  /** The store index up to which changes have been handled. */
  get handledIndex(): number {
    return this.#lastIndex;
  }

  /**
   * Starts following changes; returns once the start-up sweep is done. Safe
   * to call when running, and after stop (both no-ops).
   */
  start(): Promise<void> {
    if (this.#life.state !== 'new') return Promise.resolve();
    return this.#life.start((signal) => this.#start(signal));
  }

  async #start(signal: AbortSignal): Promise<void> {
    const snap = this.#store.snapshot();
    for (const n of snap.list('nodes')) this.#nodeSigs.set(n.id, nodeSignature(n));
    this.#lastIndex = snap.index;
    await this.#sweep();
    void this.#life.track(this.#run(signal));
  }

  /** Stops following changes and cancels delayed evaluations; waits for the loop to end. Safe twice. */
  stop(): Promise<void> {
    return this.#life.stop(() => {
      for (const t of this.#timers.values()) t.abort.abort();
      this.#timers.clear();
    });
  }

  /** Runs every pending evaluation; evaluates every job that has blocked evaluations, or may owe a reschedule. */
  async #sweep(): Promise<void> {
    await this.#runPending();
    const snap = this.#store.snapshot();
    const jobs = new Set<string>();
    for (const e of snap.list('evaluations', { filter: (e) => e.status === 'blocked' })) {
      jobs.add(`${e.namespace}\0${e.jobId}`);
    }
    for (const a of snap.list('allocations', { filter: (a) => a.desiredStatus === 'run' && a.clientStatus === 'failed' })) {
      jobs.add(`${a.namespace}\0${a.jobId}`);
    }
    for (const j of snap.list('jobs', { filter: (j) => j.type === 'system' && !j.stop })) jobs.add(`${j.namespace}\0${j.id}`);
    for (const key of jobs) await this.#evaluate(key, 'blocked-retry');
  }

  async #run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const index = await this.#store.blockUntil(TOPICS, this.#lastIndex, { signal });
        if (index <= this.#lastIndex) continue;
        const snap = this.#store.snapshot();
        const events = snap.events(this.#lastIndex, { topics: TOPICS });
        const trimmed = snap.oldestEventIndex > this.#lastIndex + 1 && this.#lastIndex > 0;
        this.#lastIndex = snap.index;
        if (trimmed) await this.#sweep();
        else await this.#handle(events);
      } catch (err) {
        if (err instanceof AbortedError || signal.aborted) return;
        if (this.#store.closed) return;
        this.#log.error({ err: describeError(err) }, 'evaluation worker failed; continuing');
        await this.#clock.sleep(1000, signal).catch(() => undefined);
      }
    }
  }

  /**
   * Runs the pending evaluations, a batch per store write, until none is
   * left; before each batch it yields to the event loop, so requests that
   * arrived meanwhile (more registrations among them, which then join the
   * next batch) are served first. A failed batch is logged and left pending
   * for the next wake or sweep.
   */
  async #runPending(): Promise<void> {
    const since = this.#clock.now();
    for (;;) {
      await this.#afterRequests(since);
      if (this.#life.stopRequested) return;
      let pass;
      try {
        pass = await this.#jobs.evaluatePending({ max: this.#batch });
      } catch (err) {
        if (this.#store.closed) return;
        this.#log.error({ err: describeError(err), retryMs: PENDING_RETRY_MS }, 'running pending evaluations failed; retrying');
        this.#retryPendingLater();
        return;
      }
      for (const [key, at] of pass.followUps) this.#schedule(key, at);
      if (pass.evaluations.length) this.#log.debug({ evaluated: pass.evaluations.length, remaining: pass.remaining }, 'pending evaluations run');
      if (pass.remaining === 0 || pass.evaluations.length === 0) return;
    }
  }

  /**
   * Runs the pending evaluations again after PENDING_RETRY_MS (once, however
   * many passes failed meanwhile). A failed pass leaves its evaluations
   * pending, and no change announces them again: only a new pending
   * evaluation wakes #runPending, so a large plan cut off by a write etcd
   * could not take in time waited for the next registration.
   */
  #retryPendingLater(): void {
    if (this.#pendingRetry) return;
    this.#pendingRetry = true;
    this.#clock.sleep(PENDING_RETRY_MS, this.#life.signal).then(
      () => {
        this.#pendingRetry = false;
        void this.#life.track(this.#runPending());
      },
      () => undefined,
    );
  }

  async #handle(events: readonly StoreEvent[]): Promise<void> {
    if (events.some((ev) => ev.topic === 'evaluations' && ev.op === 'put' && (ev.row as Evaluation).status === 'pending')) await this.#runPending();
    const snap = this.#store.snapshot();
    const due = new Map<string, { trigger: 'node-update' | 'alloc-failure' | 'blocked-retry'; nodeId?: string }>();
    let retryBlocked = false;
    // Read once for all the node events (a registration storm's writes carry hundreds of nodes; a read for
    // each one went over every job and allocation): the system jobs, and the live allocations by node.
    let systemJobs: Job[] | undefined;
    let allocsByNode: Map<string, Allocation[]> | undefined;
    const nodeJobs = (nodeId: string): { system: Job[]; allocs: Allocation[] } => {
      if (!systemJobs || !allocsByNode) {
        systemJobs = snap.list('jobs', { filter: (j) => j.type === 'system' && !j.stop });
        const ids = new Set(events.filter((ev) => ev.topic === 'nodes').map((ev) => (ev.row as Node).id));
        allocsByNode = new Map();
        for (const a of snap.list('allocations', { filter: (a) => a.desiredStatus === 'run' && ids.has(a.nodeId) })) {
          const list = allocsByNode.get(a.nodeId) ?? [];
          list.push(a);
          allocsByNode.set(a.nodeId, list);
        }
      }
      return { system: systemJobs, allocs: allocsByNode.get(nodeId) ?? [] };
    };
    for (const ev of events) {
      if (ev.topic === 'nodes') {
        const node = ev.op === 'put' ? (ev.row as Node) : undefined;
        const sig = node ? nodeSignature(node) : undefined;
        if (sig === this.#nodeSigs.get(ev.key)) continue;
        if (sig) this.#nodeSigs.set(ev.key, sig);
        else this.#nodeSigs.delete(ev.key);
        const nodeId = node?.id ?? (ev.row as Node).id;
        const { system, allocs } = nodeJobs(nodeId);
        for (const j of system) {
          due.set(`${j.namespace}\0${j.id}`, { trigger: 'node-update', nodeId });
        }
        for (const a of allocs) {
          due.set(`${a.namespace}\0${a.jobId}`, { trigger: 'node-update', nodeId });
        }
        retryBlocked = true;
      } else if (ev.topic === 'allocations' && ev.op === 'put') {
        const a = ev.row as Allocation;
        // A batch allocation that completed is done: its job has nothing to decide (ten thousand of them
        // completing would otherwise evaluate a large job again after every status write).
        const done = a.clientStatus === 'complete' && snap.get('jobs', rowKey(a.namespace, a.jobId))?.type === 'batch';
        if (a.desiredStatus === 'run' && (a.clientStatus === 'failed' || (a.clientStatus === 'complete' && !done))) {
          due.set(`${a.namespace}\0${a.jobId}`, { trigger: 'alloc-failure' });
        }
        // Resources came free: a stopped allocation, or one that finished on its own (a batch
        // task that completed); a job blocked on capacity may fit now.
        if (a.desiredStatus !== 'run' || isClientTerminal(a.clientStatus)) retryBlocked = true;
      } else if ((ev.topic === 'claims' && ev.op === 'delete') || ev.topic === 'plugins') {
        retryBlocked = true;
      }
    }
    if (retryBlocked) {
      for (const e of snap.list('evaluations', { filter: (e) => e.status === 'blocked' })) {
        const key = `${e.namespace}\0${e.jobId}`;
        if (!due.has(key)) due.set(key, { trigger: 'blocked-retry' });
      }
    }
    const since = this.#clock.now();
    for (const [key, why] of due) {
      // One write per job: let the requests that arrived meanwhile in between (a node change may touch hundreds of jobs).
      await this.#evaluate(key, why.trigger, why.nodeId);
      await this.#afterRequests(since);
    }
  }

  /**
   * Yields a turn of the event loop, then waits until the API serves no
   * write request, but not past MAX_DEFER_MS after `since` (clock time, the
   * pass's start: one pass, however many writes it makes, waits that long at
   * most in all), or, while the API is still answering a burst, not past
   * MAX_BURST_DEFER_MS after it: the scheduler runs after the requests that
   * arrived, a burst of POSTs before the evaluations it queued.
   */
  async #afterRequests(since: number): Promise<void> {
    await yieldToLoop();
    if (!this.#quiet || this.#deferLeft(since) <= 0) return;
    const quiet = this.#quiet().then(() => true);
    for (;;) {
      const left = this.#deferLeft(since);
      if (left <= 0) {
        this.#log.debug({ waitedMs: this.#clock.now() - since }, 'evaluations run before the API went quiet');
        return;
      }
      const deadline = new AbortController();
      const signal = linkSignals([deadline.signal, this.#life.signal]).signal; // unlinked by deadline.abort()
      const done = await Promise.race([quiet, this.#clock.sleep(left, signal).then(() => false, () => true)]);
      deadline.abort(WAIT_ENDED);
      if (done) return;
    }
  }

  /**
   * How long #afterRequests may wait yet, from `since`: up to MAX_DEFER_MS;
   * past it, while a burst is still being answered, BURST_RECHECK_MS at a
   * time (whether it goes on is asked again each time) up to
   * MAX_BURST_DEFER_MS. Zero or less: wait no more.
   */
  #deferLeft(since: number): number {
    const now = this.#clock.now();
    const left = since + MAX_DEFER_MS - now;
    if (left > 0 || !this.#inBurst()) return left;
    return Math.min(since + MAX_BURST_DEFER_MS - now, BURST_RECHECK_MS);
  }

  async #evaluate(key: string, trigger: 'node-update' | 'alloc-failure' | 'blocked-retry' | 'reschedule', nodeId?: string): Promise<void> {
    const [namespace, jobId] = key.split('\0') as [string, string];
    try {
      const evals = this.#store.snapshot().list('evaluations', { filter: (e) => e.jobId === jobId && e.namespace === namespace });
      // A pending evaluation of the job (one not run yet, or one written in parts) reconciles all of it when it runs.
      if (evals.some((e) => e.status === 'pending')) return;
      const blocked = evals.filter((e) => e.status === 'blocked');
      const evalId = blocked.at(-1)?.id;
      const out = await this.#jobs.evaluate(namespace, jobId, {
        trigger,
        ...(nodeId ? { nodeId } : {}),
        ...(evalId ? { evalId } : {}),
      });
      // Older blocked evaluations of the job are superseded by this one.
      if (out.evaluation) {
        for (const e of blocked.slice(0, -1)) await this.#store.write((txn) => txn.put('evaluations', { ...e, status: 'canceled', statusDescription: 'superseded' }));
      }
      if (out.followUpAt !== undefined) this.#schedule(key, out.followUpAt);
    } catch (err) {
      this.#log.error({ jobId, namespace, err: describeError(err) }, 'evaluation failed');
    }
  }

  /** Re-evaluates the job at `at` (clock time), keeping only the earliest timer per job. */
  #schedule(key: string, at: number): void {
    const cur = this.#timers.get(key);
    if (cur && cur.at <= at) return;
    cur?.abort.abort();
    const abort = new AbortController();
    this.#timers.set(key, { at, abort });
    const link = linkSignals([abort.signal, this.#life.signal]);
    this.#clock.sleep(Math.max(0, at - this.#clock.now()), link.signal).then(
      () => {
        link.unlink();
        if (this.#timers.get(key)?.abort === abort) this.#timers.delete(key);
        void this.#life.track(this.#evaluate(key, 'reschedule'));
      },
      () => undefined,
    );
  }
}
