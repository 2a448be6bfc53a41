// Watches the node's allocations with blocking reads (GET
// /v1/node/:id/allocations?index=N&wait=..) and hands every new list to the
// agent, in order, one at a time. A list older than one already seen (a
// server that came back with stale state) is never handed on.

import {
  BACKOFF,
  backoffDelay,
  describeError,
  Lifecycle,
  silentLogger,
  systemClock,
  type BackoffPolicy,
  type Clock,
  type LifecycleState,
  type Logger,
} from '../../lib/index.js';
import type { NodeAllocation, ServerApi } from './server-api.js';

export interface AllocWatcherOptions {
  api: ServerApi;
  nodeId: string;
  /**
   * Told of each new list with its index. Called one at a time; the next
   * read starts after it resolves. A throw is logged, and the same list is
   * offered again after a backoff.
   */
  onAllocations: (allocs: NodeAllocation[], index: number) => Promise<void> | void;
  /** The highest index handed on before (the agent keeps it across restarts); lists below it are ignored. */
  minIndex?: number;
  /** How long one blocking read may wait on the server. Default 5 min. */
  waitMs?: number;
  clock?: Clock;
  logger?: Logger;
  backoff?: BackoffPolicy;
  random?: () => number;
}

/**
 * Lifecycle (lib Lifecycle): `start()` begins watching in the background (a
 * second start, or one after stop, does nothing); `stop()` aborts the read
 * in flight and waits for the loop (and a callback in progress); safe
 * twice. `waitFirstList()` resolves once the first list was handed on.
 * Never throws for a server that is down: it retries with backoff.
 */
export class AllocWatcher {
  readonly #opts: AllocWatcherOptions;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #life: Lifecycle;
  readonly #waiters = new Set<() => void>();
  #index: number;
  #lists = 0;

  constructor(opts: AllocWatcherOptions) {
    this.#opts = opts;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'alloc-watcher' });
    this.#clock = opts.clock ?? systemClock;
    this.#index = opts.minIndex ?? 0;
    this.#life = new Lifecycle({ logger: this.#logger });
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  /** The index of the last list handed on (0 before the first). */
  get index(): number {
    return this.#index;
  }

  /** How many lists were handed on. */
  get lists(): number {
    return this.#lists;
  }

  start(): void {
    this.#life.startLoop((signal) => this.#run(signal));
  }

  /** Resolves after the first list was handed on, or on stop. */
  waitFirstList(): Promise<void> {
    if (this.#lists > 0 || this.#life.stopRequested) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.add(resolve));
  }

  stop(): Promise<void> {
    const stopped = this.#life.stop();
    for (const w of this.#waiters) w();
    this.#waiters.clear();
    return stopped;
  }

  async #run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    // The first read answers at once; later ones block until something changed.
    let blocking = false;
    while (!signal.aborted) {
      try {
        const { index, allocations } = await this.#opts.api.allocations(this.#opts.nodeId, {
          ...(blocking ? { index: this.#index, waitMs: this.#opts.waitMs ?? 300_000 } : {}),
          signal,
        });
        if (index < this.#index) {
          // The server's state is older than what we acted on: wait for it to catch up.
          this.#logger.warn({ index, seen: this.#index }, 'the server sent an allocation list older than one already seen; ignoring it');
          // Before the first list is handed on, poll: a blocking read would wait for the server to pass an index it may already be at.
          blocking = this.#lists > 0;
          failures++;
          await this.#clock.sleep(backoffDelay(this.#opts.backoff ?? BACKOFF.reconnect, failures, this.#opts.random), signal);
          continue;
        }
        if (this.#lists > 0 && index === this.#index) {
          blocking = true;
          continue;
        }
        await this.#opts.onAllocations(allocations, index);
        this.#index = index;
        this.#lists++;
        blocking = true;
        failures = 0;
        for (const w of this.#waiters) w();
        this.#waiters.clear();
      } catch (err) {
        if (signal.aborted) break;
        failures++;
        const delayMs = backoffDelay(this.#opts.backoff ?? BACKOFF.reconnect, failures, this.#opts.random);
        this.#logger.warn({ err: describeError(err), failures, delayMs }, 'reading the allocations failed');
        try {
          await this.#clock.sleep(delayMs, signal);
        } catch {
          break;
        }
      }
    }
  }
}
