// Server garbage collection: what is finished is deleted from the state once
// nobody needs it any more, so that the store (and every list, every
// evaluation that scans it) does not grow with history. Allocations of a
// purged job go as soon as they have stopped and hold no claim; terminal
// allocations, finished evaluations and stopped jobs go once older than an
// age limit or beyond a count limit; `collect({ force: true })` (berth system
// gc) ignores both limits. A node drops an allocation the server no longer
// lists (after it has stopped, which is all that is ever collected).

import { AbortedError, describeError, Lifecycle, systemClock, type Clock, type LifecycleState, type Logger } from '../../lib/index.js';
import { isClientTerminal, type Allocation, type Evaluation, type Job } from '../../structs/index.js';
import { rowKey, StateStoreError, type StateReader, type StateStore, type StoreEvent, type WriteTxn } from '../state/index.js';

export interface GcLimits {
  /** Terminal allocations, finished evaluations and stopped jobs older than this (ms, by last change) are collected. Default 1 h. */
  maxAgeMs: number;
  /** At most this many collectable allocations are kept, the newest. Default 1000. */
  maxAllocations: number;
  /** At most this many finished evaluations are kept, the newest. Default 1000. */
  maxEvaluations: number;
}

export const DEFAULT_GC_LIMITS: GcLimits = { maxAgeMs: 60 * 60_000, maxAllocations: 1000, maxEvaluations: 1000 };

/** What one collection deleted. */
export interface GcResult {
  allocations: string[];
  evaluations: string[];
  /** `namespace/id` of each stopped job deleted. */
  jobs: string[];
  /** The store index of the write (the latest index when nothing was deleted). */
  index: number;
}

/**
 * True when the allocation has stopped on its node (client-terminal) and
 * holds no claim, being released or not: deleting it loses nothing a node
 * or a claim release still needs. Pure over `reader`.
 */
export function isCollectable(reader: StateReader, alloc: Allocation): boolean {
  if (!isClientTerminal(alloc.clientStatus)) return false;
  return !(alloc.csiVolumes ?? []).some((v) => reader.get('claims', rowKey(alloc.namespace, v.volumeId, alloc.id)) !== undefined);
}

/** An allocation that no longer stands for its job's state: its job is gone or stopped, or it was told to stop. */
function isHistory(alloc: Allocation, job: Job | undefined): boolean {
  return !job || job.stop || alloc.desiredStatus !== 'run';
}

function finished(e: Evaluation): boolean {
  return e.status === 'complete' || e.status === 'failed' || e.status === 'canceled';
}

/** The rows beyond the newest `keep` (by `time`), and those older than `cutoff`. */
function overLimits<T>(rows: T[], time: (r: T) => number, keep: number, cutoff: number): T[] {
  const newestFirst = [...rows].sort((a, b) => time(b) - time(a));
  return newestFirst.filter((r, i) => i >= keep || time(r) < cutoff);
}

/**
 * One collection inside `txn`: deletes collectable allocations of purged
 * jobs (always), collectable terminal allocations and finished evaluations
 * over the limits, and stopped, dead jobs older than the age limit that have
 * no allocation left. With `force`, every collectable row regardless of the
 * limits. Synchronous and free of side effects beyond the txn.
 */
export function collectGarbage(txn: WriteTxn, now: number, limits: GcLimits, force: boolean): Omit<GcResult, 'index'> {
  const cutoff = force ? Number.POSITIVE_INFINITY : now - limits.maxAgeMs;
  const keepAllocs = force ? 0 : limits.maxAllocations;
  const keepEvals = force ? 0 : limits.maxEvaluations;
  const jobs = new Map(txn.list('jobs').map((j) => [rowKey(j.namespace, j.id), j]));
  const out: Omit<GcResult, 'index'> = { allocations: [], evaluations: [], jobs: [] };

  const candidates: Allocation[] = [];
  for (const a of txn.list('allocations', { filter: (a) => isClientTerminal(a.clientStatus) })) {
    const job = jobs.get(rowKey(a.namespace, a.jobId));
    if (!isHistory(a, job) || !isCollectable(txn, a)) continue;
    if (!job) out.allocations.push(a.id);
    else candidates.push(a);
  }
  for (const a of overLimits(candidates, (a) => a.modifyTime, keepAllocs, cutoff)) out.allocations.push(a.id);
  for (const id of out.allocations) txn.delete('allocations', rowKey(id));

  const left = new Set(txn.list('allocations').map((a) => rowKey(a.namespace, a.jobId)));
  for (const [key, job] of jobs) {
    if (!job.stop || job.status !== 'dead' || left.has(key) || job.submitTime >= cutoff) continue;
    txn.delete('jobs', key);
    out.jobs.push(key);
  }
  const gone = new Set(out.jobs);
  const evals = txn.list('evaluations', { filter: finished });
  const dropped = new Set(overLimits(evals, (e) => e.modifyTime, keepEvals, cutoff).map((e) => e.id));
  for (const e of evals) if (gone.has(rowKey(e.namespace, e.jobId))) dropped.add(e.id);
  for (const id of dropped) {
    txn.delete('evaluations', rowKey(id));
    out.evaluations.push(id);
  }
  return out;
}

export interface GarbageCollectorOptions {
  store: StateStore;
  clock?: Clock;
  logger: Logger;
  /** How often the limits are applied. Default 5 min. */
  intervalMs?: number;
  limits?: Partial<GcLimits>;
}

/**
 * Runs `collectGarbage` every `intervalMs` (on the injectable clock), and,
 * following the store's changes, deletes the allocations of purged jobs as
 * soon as they have stopped and released their claims.
 *
 * Lifecycle (lib Lifecycle): start() returns once the loop runs; a second
 * start is a no-op, a start after stop rejects with LIFECYCLE_STOPPED.
 * stop() is safe twice and waits for the loop.
 */
export class GarbageCollector {
  readonly #store: StateStore;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #intervalMs: number;
  readonly #limits: GcLimits;
  readonly #life: Lifecycle;

  constructor(opts: GarbageCollectorOptions) {
    this.#store = opts.store;
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger.child({ component: 'gc' });
    this.#intervalMs = opts.intervalMs ?? 5 * 60_000;
    this.#limits = { ...DEFAULT_GC_LIMITS, ...opts.limits };
    this.#life = new Lifecycle({ logger: this.#log });
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  /**
   * Collects now, in one store write; with `force` regardless of the age
   * and count limits (what `berth system gc` asks for). Safe to repeat;
   * rejects with the store's error when the write fails.
   */
  async collect(opts: { force?: boolean } = {}): Promise<GcResult> {
    const now = this.#clock.now();
    const { index, result } = await this.#store.write((txn) => collectGarbage(txn, now, this.#limits, opts.force ?? false), { freesSpace: true });
    const total = result.allocations.length + result.evaluations.length + result.jobs.length;
    if (total > 0) {
      this.#log.info({ allocations: result.allocations.length, evaluations: result.evaluations.length, jobs: result.jobs.length, force: Boolean(opts.force) }, 'garbage collected');
    }
    return { ...result, index };
  }

  start(): Promise<void> {
    return this.#life.start((signal) => this.#start(signal));
  }

  #start(signal: AbortSignal): void {
    let seen = this.#store.latestIndex();
    let nextRun = this.#clock.now() + this.#intervalMs;
    // The two waits outlive a wake-up: a store write settles the change only, and the
    // interval's timer keeps running (no timer, controller and abort per write).
    let change: Promise<'change'> | undefined;
    let due: Promise<'due'> | undefined;
    void this.#life.track((async () => {
      while (!signal.aborted && !this.#store.closed) {
        try {
          if (this.#clock.now() >= nextRun) {
            nextRun = this.#clock.now() + this.#intervalMs;
            due = undefined;
            await this.collect();
          }
          due ??= this.#clock.sleep(Math.max(1, nextRun - this.#clock.now()), signal).then(() => 'due' as const);
          change ??= this.#store.blockUntil(['allocations', 'claims'], seen, { signal }).then(() => 'change' as const);
          if ((await Promise.race([change, due])) === 'change') change = undefined;
          else due = undefined;
          if (signal.aborted) return;
          const snap = this.#store.snapshot();
          const events = snap.events(seen, { topics: ['allocations', 'claims'] });
          seen = snap.index;
          await this.#dropPurged(events);
        } catch (err) {
          if (err instanceof AbortedError || signal.aborted) return;
          if (err instanceof StateStoreError && err.code === 'STORE_CLOSED') return;
          this.#log.error({ err: describeError(err) }, 'garbage collection failed; continuing');
          await this.#clock.sleep(1000, signal).catch(() => undefined);
        }
      }
    })());
  }

  /** Deletes the allocations these changes touched whose job was purged and that are now collectable. */
  async #dropPurged(events: readonly StoreEvent[]): Promise<void> {
    const ids = new Set<string>();
    for (const ev of events) {
      if (ev.topic === 'allocations' && ev.op === 'put') {
        const a = ev.row as Allocation;
        if (isClientTerminal(a.clientStatus)) ids.add(a.id);
      } else if (ev.topic === 'claims' && ev.op === 'delete') ids.add((ev.row as { allocId: string }).allocId);
    }
    if (ids.size === 0) return;
    const snap = this.#store.snapshot();
    const some = [...ids].some((id) => {
      const a = snap.get('allocations', rowKey(id));
      return a !== undefined && !snap.get('jobs', rowKey(a.namespace, a.jobId)) && isCollectable(snap, a);
    });
    if (!some) return;
    await this.#store.write((txn) => {
      for (const id of ids) {
        const a = txn.get('allocations', rowKey(id));
        if (a && !txn.get('jobs', rowKey(a.namespace, a.jobId)) && isCollectable(txn, a)) txn.delete('allocations', rowKey(id));
      }
    });
  }

  /** Ends the loop and waits for it. Safe twice; never rejects. */
  stop(): Promise<void> {
    return this.#life.stop();
  }
}
