// Gives memory back once a burst of work is over. V8 grows its heap to meet
// a burst (200 jobs at once commit some 60 MiB more of old space and make
// the whole 32 MiB of new space resident) and keeps those pages after the
// work ends: an idle agent allocates too little to start another major GC,
// and V8's memory reducer did not run in our measurements. The reclaimer
// samples the event loop and the heap; when an interval is quiet and the
// heap has grown since the last reclaim, it asks V8 for the GC it runs on a
// low-memory notification (the embedder's "give memory back" call): full
// collections that compact, shrink new space to its initial size and unmap
// the pages they freed. The agent's start counts as a burst: its first
// quiet interval reclaims what loading and opening the state committed.
//
// Why not "a quiet interval after a busy one" (the first version): a burst
// had to hold the loop 25 % busy through one whole sampling interval, and
// the agent's first reclaim waited for such a burst; in the bench's runs on
// a quiet machine the heap grew by 50 MiB and no reclaim ran. Growth alone,
// measured from the heap right after the last reclaim, needs no such window;
// a minimum spacing bounds what a steady load that never goes quiet enough
// for V8's own GCs can cost. A reclaim in a lull mid-burst leaves the rest
// of the burst's garbage, so the end of a burst (a few quiet intervals in a
// row) reclaims once more on a quarter of that growth.

import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type * as Inspector from 'node:inspector';
import { systemClock, type Clock } from './clock.js';
import { Lifecycle, type LifecycleState } from './lifecycle.js';
import type { Logger } from './logger.js';

/** One look at the process: how busy its event loop was since the previous look, and its heap. */
export interface LoadSample {
  /** Share of the last interval the event loop spent working, 0..1. */
  utilization: number;
  /** Bytes V8 has committed for its heap (`total_heap_size`). */
  heapCommitted: number;
}

export interface MemoryReclaimerOptions {
  clock?: Clock;
  logger?: Logger;
  /** How often to look. Default 2 s. */
  intervalMs?: number;
  /** An interval counts as quiet when the event loop worked less than this share of it. Default 0.25: an idle agent works ~1 %, a burst ~100 %, and on a loaded machine the idle share reads high. */
  quietUtilization?: number;
  /** Reclaim only when the committed heap is this much above its floor (the heap right after the last reclaim, or the smallest seen since). Default 8 MiB: a reclaim leaves new space at 1 MiB, so a burst shows as 8-31 MiB more. */
  growthBytes?: number;
  /** At least this long between two reclaims. Default 20 s. */
  minSpacingMs?: number;
  /** This many quiet intervals in a row end a burst: one reclaim follows if the heap is a quarter of `growthBytes` above its floor (a reclaim in a lull mid-burst leaves the rest of the burst's garbage). Default 3. */
  settleIntervals?: number;
  /** Takes a sample. Default: the event loop utilization since the previous call and V8's heap statistics. */
  sample?: () => LoadSample;
  /** Collects all garbage, compacts and gives the pages back. Default: `lowMemoryGc()`. */
  collect?: () => void | Promise<void>;
  /**
   * How many requests the agent's API has begun so far (any kind: nodes'
   * heartbeats too), read once an interval. Default: none counted.
   */
  requests?: () => number;
  /**
   * An interval in which more requests than this began is not quiet, however
   * idle the event loop: a reclaim stops the loop for 50-250 ms and every
   * request in flight or arriving waits it out. A server of 1,000 nodes takes
   * 50-100 heartbeats a second at 13-18 % of a core, under the utilization
   * bar; its reclaims, one per server in a 30 s rest, put the heartbeats' p99
   * at 40-144 ms against 5-30 ms without. A dev agent's own node asks a
   * request or two an interval. Default 10 (5 a second at the default interval).
   */
  quietRequests?: number;
}

const MiB = 2 ** 20;

/**
 * Watches the load and the heap and collects when an interval is quiet and
 * the committed heap is `growthBytes` above its floor: the heap right after
 * the last reclaim (the smallest seen since, if V8 shrank it itself), or 0
 * before the first, so the first quiet interval after start reclaims once;
 * and once at the `settleIntervals`-th quiet interval in a row (a burst
 * is over) if the heap is a quarter of that above its floor;
 * never twice within `minSpacingMs`. `start()` returns at once (the
 * watching runs in the background, on the clock it is given); `stop()` is
 * safe twice and waits for the watch loop to end. Never throws from its
 * loop: a failed collection is logged and the loop goes on.
 */
export class MemoryReclaimer {
  readonly #clock: Clock;
  readonly #log: Logger | undefined;
  readonly #intervalMs: number;
  readonly #quiet: number;
  readonly #growth: number;
  readonly #spacing: number;
  readonly #sample: () => LoadSample;
  readonly #collect: () => void | Promise<void>;
  readonly #requests: (() => number) | undefined;
  readonly #quietRequests: number;
  #requestsSeen = 0;
  readonly #life: Lifecycle;
  readonly #settle: number;
  #floor = 0;
  #lastReclaimAt = -Infinity;
  #quietStreak = 0;
  #reclaims = 0;

  constructor(opts: MemoryReclaimerOptions = {}) {
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger?.child({ component: 'memory-reclaimer' });
    this.#intervalMs = opts.intervalMs ?? 2_000;
    this.#quiet = opts.quietUtilization ?? 0.25;
    this.#growth = opts.growthBytes ?? 8 * MiB;
    this.#spacing = opts.minSpacingMs ?? 20_000;
    this.#settle = opts.settleIntervals ?? 3;
    this.#sample = opts.sample ?? processSampler();
    this.#collect = opts.collect ?? lowMemoryGc();
    this.#requests = opts.requests;
    this.#quietRequests = opts.quietRequests ?? 10;
    this.#requestsSeen = opts.requests?.() ?? 0;
    this.#life = new Lifecycle(this.#log ? { logger: this.#log } : {});
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  /** How many times it has collected. */
  get reclaims(): number {
    return this.#reclaims;
  }

  /** Starts watching. Returns at once. */
  async start(): Promise<void> {
    await this.#life.start(() => {
      void this.#life.track(this.#watch());
    });
  }

  /** Stops watching; waits for the loop to end. Safe twice. */
  async stop(): Promise<void> {
    await this.#life.stop();
  }

  async #watch(): Promise<void> {
    const signal = this.#life.signal;
    while (!signal.aborted) {
      try {
        await this.#clock.sleep(this.#intervalMs, signal);
      } catch {
        return; // stopped
      }
      const s = this.#sample();
      this.#floor = Math.min(this.#floor === 0 ? s.heapCommitted : this.#floor, s.heapCommitted);
      const requests = this.#requests?.() ?? 0;
      const busyRequests = requests - this.#requestsSeen > this.#quietRequests;
      this.#requestsSeen = requests;
      if (s.utilization >= this.#quiet || busyRequests) {
        this.#quietStreak = 0;
        continue;
      }
      this.#quietStreak += 1;
      const grown = this.#reclaims === 0 || s.heapCommitted - this.#floor >= this.#growth;
      const settled = this.#quietStreak === this.#settle && s.heapCommitted - this.#floor >= this.#growth / 4;
      if (!(grown || settled) || this.#clock.now() - this.#lastReclaimAt < this.#spacing) continue;
      const started = performance.now();
      try {
        await this.#collect();
      } catch (err) {
        this.#log?.warn({ err }, 'memory reclaim failed');
      }
      this.#reclaims += 1;
      this.#lastReclaimAt = this.#clock.now();
      const after = this.#sample();
      this.#floor = after.heapCommitted;
      this.#log?.debug(
        { beforeMiB: Math.round(s.heapCommitted / MiB), afterMiB: Math.round(after.heapCommitted / MiB), ms: Math.round(performance.now() - started) },
        'heap reclaimed in a quiet interval',
      );
    }
  }
}

/** A sampler of this process: event loop utilization since its previous call, and V8's committed heap. */
export function processSampler(): () => LoadSample {
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const window = performance.eventLoopUtilization(now, last);
    last = now;
    return { utilization: window.utilization, heapCommitted: getHeapStatistics().total_heap_size };
  };
}

/**
 * V8's full GC with compaction, without starting node with --expose-gc:
 * the flag is set for a moment, a fresh context is made (V8 installs `gc`
 * into contexts made while the flag is on) and the flag is cleared again,
 * so no other context (workers, vm) sees a `gc` global. Each call turns on
 * --compact-on-every-full-gc for its one collection: a plain full GC frees
 * the garbage but leaves the survivors spread over the pages the burst
 * committed (we saw 82 MiB committed before and after); compacting moves
 * them together so the emptied pages go back to the kernel. Blocks the event
 * loop for the collection (some 100-250 ms on a 100 MiB heap).
 */
export function fullGc(): () => void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  setFlagsFromString('--no-expose-gc');
  // No arguments: Node 20's V8 took `{ type: 'major' }` for a young-generation scavenge (--trace-gc showed it).
  return () => {
    setFlagsFromString('--compact-on-every-full-gc');
    try {
      gc();
    } finally {
      setFlagsFromString('--no-compact-on-every-full-gc');
    }
  };
}

/**
 * The GC V8 runs on a low-memory notification, asked for through an
 * in-process inspector session (`HeapProfiler.collectGarbage`: no port is
 * opened, nothing else is enabled; the session lives for the one call).
 * Unlike a full GC it collects with "reduce memory" set: it compacts, runs
 * again while weak callbacks free more, shrinks new space to its initial
 * 1 MiB (a burst leaves all 32 MiB of it resident) and unmaps the freed
 * pages at once. It acts on the isolate it is called from (a worker thread
 * reclaims its own heap). Blocks the event loop for the collection (some
 * 50-250 ms on a 100 MiB heap). Where node was built without the inspector,
 * falls back to `fullGc()`. The returned function rejects when the session
 * reports an error.
 */
export function lowMemoryGc(): () => Promise<void> {
  if (!process.features.inspector) {
    const gc = fullGc();
    return async () => gc();
  }
  // Loaded on first use: node:inspector throws at import where node lacks it.
  let inspector: Promise<typeof Inspector> | undefined;
  return async () => {
    const { Session } = await (inspector ??= import('node:inspector'));
    await new Promise<void>((resolve, reject) => {
      const session = new Session();
      session.connect();
      session.post('HeapProfiler.collectGarbage', (err) => {
        // Not from inside the callback: a disconnect there never returns (node 20).
        setImmediate(() => {
          session.disconnect();
          if (err) reject(err);
          else resolve();
        });
      });
    });
  };
}
