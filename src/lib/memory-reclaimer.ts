// Gives memory back once a burst of work is over. V8 grows its heap to meet
// a burst (200 jobs at once commit some 60 MiB more of old space) and keeps
// those pages after the work ends: an agent that is idle allocates too
// little to start another major GC, and V8's memory reducer did not run in
// our measurements, so the agent's RSS stayed where the burst left it. The
// reclaimer watches the event loop and the heap; when a quiet interval
// follows a busy one and the heap has grown, it runs one full, compacting
// GC, which frees the garbage and hands the emptied pages back to the
// kernel. It never runs while the agent is busy, and at most once per burst,
// so a heap that grew with live data costs one GC per burst, not one per
// interval.

import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
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
  /** An interval counts as quiet when the event loop worked less than this share of it (else busy). Default 0.25: an idle agent works ~1 %, a burst ~100 %, and on a loaded machine the idle share reads high. */
  quietUtilization?: number;
  /** Reclaim only when the committed heap is this much above the smallest it has been. Default 16 MiB. */
  growthBytes?: number;
  /** Takes a sample. Default: the event loop utilization since the previous call and V8's heap statistics. */
  sample?: () => LoadSample;
  /** Collects all garbage and compacts. Default: V8's full GC (see `fullGc`). */
  collect?: () => void;
}

const MiB = 2 ** 20;

/**
 * Watches the load and the heap and runs a full GC when a quiet interval
 * follows a busy one (with no reclaim between) and the committed heap is
 * `growthBytes` above its floor (the smallest seen: at start, or after a
 * reclaim). `start()` returns at once (the watching runs in the
 * background, on the clock it is given); `stop()` is safe twice and waits
 * for the watch loop to end. Never throws from its loop: a
 * failed collection is logged and the loop goes on.
 */
export class MemoryReclaimer {
  readonly #clock: Clock;
  readonly #log: Logger | undefined;
  readonly #intervalMs: number;
  readonly #quiet: number;
  readonly #growth: number;
  readonly #sample: () => LoadSample;
  readonly #collect: () => void;
  readonly #life: Lifecycle;
  #floor = 0;
  #busySinceReclaim = false;
  #reclaims = 0;

  constructor(opts: MemoryReclaimerOptions = {}) {
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger?.child({ component: 'memory-reclaimer' });
    this.#intervalMs = opts.intervalMs ?? 2_000;
    this.#quiet = opts.quietUtilization ?? 0.25;
    this.#growth = opts.growthBytes ?? 16 * MiB;
    this.#sample = opts.sample ?? processSampler();
    this.#collect = opts.collect ?? fullGc();
    this.#life = new Lifecycle(this.#log ? { logger: this.#log } : {});
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  /** How many times it has collected. */
  get reclaims(): number {
    return this.#reclaims;
  }

  /** Takes the first sample (the heap's first floor) and starts watching. Returns at once. */
  async start(): Promise<void> {
    await this.#life.start(() => {
      this.#floor = this.#sample().heapCommitted;
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
      this.#floor = Math.min(this.#floor, s.heapCommitted);
      if (s.utilization >= this.#quiet) {
        this.#busySinceReclaim = true;
        continue;
      }
      if (!this.#busySinceReclaim || s.heapCommitted - this.#floor < this.#growth) continue;
      const started = performance.now();
      try {
        this.#collect();
      } catch (err) {
        this.#log?.warn({ err }, 'full GC failed');
      }
      this.#reclaims += 1;
      this.#busySinceReclaim = false;
      const after = this.#sample();
      this.#floor = Math.min(this.#floor, after.heapCommitted);
      this.#log?.debug(
        { beforeMiB: Math.round(s.heapCommitted / MiB), afterMiB: Math.round(after.heapCommitted / MiB), ms: Math.round(performance.now() - started) },
        'heap reclaimed after a quiet interval',
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
