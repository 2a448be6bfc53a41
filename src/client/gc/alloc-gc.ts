// Client garbage collection (Nomad's client/gc.go): finished allocations are
// destroyed on this node (their directory, secrets tmpfs, records and the
// runner's memory) once they are old, too many, or the disk is filling up.
// The policy is a pure function; the collector runs it in a loop on an
// injectable clock and on demand.

import { AbortedError, describeError, Lifecycle, silentLogger, systemClock, type Clock, type LifecycleState, type Logger } from '../../lib/index.js';

/** The client's `gc_*` settings. */
export interface GcLimits {
  /** How often the collector looks (Nomad gc_interval). Default 1 minute. */
  intervalMs: number;
  /** A finished allocation older than this is collected. Default 1 hour. */
  maxAgeMs: number;
  /** Most finished allocations kept; the oldest beyond it are collected (Nomad gc_max_allocs). Default 50. */
  maxAllocs: number;
  /** Disk use (percent) of the allocation directory's file system above which the oldest are collected until below (Nomad gc_disk_usage_threshold). Default 80. */
  diskUsageThreshold: number;
}

export const DEFAULT_GC_LIMITS: GcLimits = { intervalMs: 60_000, maxAgeMs: 3_600_000, maxAllocs: 50, diskUsageThreshold: 80 };

/** A finished allocation that may be collected: nothing of it runs and nothing is mounted for it. */
export interface GcCandidate {
  allocId: string;
  /** When its last task ended (milliseconds since the epoch). */
  finishedAt: number;
}

/**
 * Which candidates the age and count limits collect, oldest first: every one
 * at least `maxAgeMs` old, then the oldest of the rest while more than
 * `maxAllocs` remain. Pure.
 */
export function overLimits(candidates: readonly GcCandidate[], limits: Pick<GcLimits, 'maxAgeMs' | 'maxAllocs'>, now: number): string[] {
  const sorted = [...candidates].sort((a, b) => a.finishedAt - b.finishedAt || a.allocId.localeCompare(b.allocId));
  const out: string[] = [];
  let kept = sorted.length;
  for (const c of sorted) {
    if (now - c.finishedAt >= limits.maxAgeMs || kept > limits.maxAllocs) {
      out.push(c.allocId);
      kept -= 1;
    }
  }
  return out;
}

export interface AllocGarbageCollectorOptions {
  /** The finished allocations that may be collected now. Must not throw. */
  candidates: () => GcCandidate[];
  /** Destroys one allocation on this node; a rejection is logged and the allocation is tried again next time. */
  collect: (allocId: string) => Promise<void>;
  /** Percent of the allocation directory's file system in use; undefined when unknown. */
  diskUsagePercent: () => number | undefined;
  limits?: Partial<GcLimits>;
  clock?: Clock;
  logger?: Logger;
}

/**
 * Collects finished allocations. Lifecycle: `start()` begins the loop (every
 * `intervalMs`, the limits apply); `collect({ all: true })` collects every
 * candidate now (the on-demand trigger); `stop()` ends the loop and waits
 * for a collection in flight; safe twice. One collection runs at a time.
 */
export class AllocGarbageCollector {
  readonly limits: GcLimits;
  readonly #o: AllocGarbageCollectorOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #life: Lifecycle;
  #chain: Promise<unknown> = Promise.resolve();
  #collected = 0;

  constructor(opts: AllocGarbageCollectorOptions) {
    this.#o = opts;
    this.limits = { ...DEFAULT_GC_LIMITS, ...opts.limits };
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'client-gc' });
    this.#life = new Lifecycle({ logger: this.#log });
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  /** Allocations collected since start. */
  get collectedCount(): number {
    return this.#collected;
  }

  /** Starts the loop; returns at once. A no-op after the first call. */
  start(): void {
    this.#life.startLoop(async (signal) => {
      for (;;) {
        try {
          await this.#clock.sleep(this.limits.intervalMs, signal);
        } catch (err) {
          if (err instanceof AbortedError) return;
          throw err;
        }
        await this.collect().catch((err: unknown) => this.#log.warn({ err: describeError(err) }, 'garbage collection failed'));
      }
    });
  }

  /**
   * Runs one collection and resolves with the IDs collected: with `all`,
   * every candidate; otherwise those the age and count limits name, then
   * the oldest while the disk is above its threshold. Waits for a
   * collection in flight first. Never rejects (failures are logged).
   */
  collect(opts: { all?: boolean } = {}): Promise<string[]> {
    const run = this.#chain.then(() => this.#collectOnce(opts.all === true));
    this.#chain = run.catch(() => undefined);
    return this.#life.state === 'stopped' ? Promise.resolve([]) : this.#track(run);
  }

  /** Ends the loop and waits for a collection in flight. Safe twice. */
  stop(): Promise<void> {
    return this.#life.stop(async () => {
      await this.#chain;
    });
  }

  #track(p: Promise<string[]>): Promise<string[]> {
    if (this.#life.state === 'running') void this.#life.track(p.catch(() => undefined));
    return p;
  }

  async #collectOnce(all: boolean): Promise<string[]> {
    const candidates = this.#o.candidates();
    if (candidates.length === 0) return [];
    const byAge = [...candidates].sort((a, b) => a.finishedAt - b.finishedAt).map((c) => c.allocId);
    const chosen = all ? byAge : overLimits(candidates, this.limits, this.#clock.now());
    const done: string[] = [];
    const collectOne = async (allocId: string, reason: string): Promise<void> => {
      try {
        await this.#o.collect(allocId);
        done.push(allocId);
        this.#collected += 1;
        this.#log.info({ allocId, reason }, 'allocation garbage-collected');
      } catch (err) {
        this.#log.warn({ allocId, err: describeError(err) }, 'collecting an allocation failed');
      }
    };
    for (const id of chosen) await collectOne(id, all ? 'requested' : 'age or count limit');
    if (!all) {
      for (const id of byAge) {
        if (done.includes(id)) continue;
        const usage = this.#o.diskUsagePercent();
        if (usage === undefined || usage <= this.limits.diskUsageThreshold) break;
        await collectOne(id, `disk usage ${usage.toFixed(1)}% above ${this.limits.diskUsageThreshold}%`);
      }
    }
    return done;
  }
}
