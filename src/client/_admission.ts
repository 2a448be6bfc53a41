// The client's admission window for new allocations: at most `limit` of
// them between "its runner runs" and "its first task is handed to its
// driver". Without it, a burst of 200 allocations placed at once moved
// through every shared queue together (the agent's loop, the mount helper,
// libuv's thread pool, the state store's commits), and the first task
// started only once the last allocation had cleared every step before the
// executors, which idled until then (docs/benchmarks.md, issue 40's tenth
// pass). Through the window the first allocations reach their executors
// while the rest are still being set up: the agent and the executors work
// side by side. Private to src/client (applyAllocList uses it).

import type { Clock } from '../lib/index.js';

/**
 * Allocations in the window at once by default: enough to keep the executors
 * and the agent both busy and the commits and status pushes batched, few
 * enough that each clears the shared queues quickly (node-burst at load
 * 11-15: all running 4.1-6.6 s with 48, 5.4-8.9 s with 24; 64 no better).
 */
export const DEFAULT_START_WINDOW = 48;

/**
 * How long an allocation holds its slot by default before it lets go of it
 * without its first task handed over: a prerun or prestart step that waits on
 * something outside the node's control (a CSI plugin or claim, a template's
 * service, an artifact download) must not keep the allocations behind it
 * from starting.
 */
export const DEFAULT_START_HOLD_MS = 2_000;

export interface AdmissionWindowOptions {
  /** Allocations admitted at once (at least 1). */
  limit: number;
  /** Longest an admitted allocation holds its slot (see hold()). */
  holdMs: number;
  clock: Clock;
}

interface Waiter {
  grant: (release: () => void) => void;
  done: boolean;
}

/**
 * A counting window in FIFO order. Not shared across clients. Nothing in it
 * blocks the event loop; a slot is freed by the release function its
 * admission gave (safe to call more than once).
 */
export class AdmissionWindow {
  readonly #opts: AdmissionWindowOptions;
  readonly #waiting: Waiter[] = [];
  #inFlight = 0;

  constructor(opts: AdmissionWindowOptions) {
    this.#opts = { ...opts, limit: Math.max(1, Math.floor(opts.limit)) };
  }

  /** Allocations admitted and not yet released. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Allocations waiting for a slot. */
  get waiting(): number {
    return this.#waiting.filter((w) => !w.done).length;
  }

  /**
   * Resolves with the slot's release function once a slot is free (in the
   * order asked), or with undefined as soon as `signal` aborts first (the
   * allocation was stopped or destroyed while it waited, or the client
   * stops): it then holds no slot. Never rejects.
   */
  enter(signal: AbortSignal): Promise<(() => void) | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        done: false,
        grant: (release) => {
          signal.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      const onAbort = (): void => {
        waiter.done = true;
        resolve(undefined);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
      this.#next();
    });
  }

  /**
   * Holds an admitted allocation's slot until `launched` settles (its first
   * task handed to its driver, or its run ended) or holdMs passed, whichever
   * comes first; then calls `release`. Never rejects.
   */
  async hold(launched: Promise<unknown>, release: () => void): Promise<void> {
    const timer = new AbortController();
    const expired = this.#opts.clock.sleep(this.#opts.holdMs, timer.signal).catch(() => undefined);
    try {
      await Promise.race([launched.catch(() => undefined), expired]);
    } finally {
      timer.abort();
      release();
    }
  }

  #admit(): () => void {
    this.#inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inFlight--;
      this.#next();
    };
  }

  #next(): void {
    while (this.#inFlight < this.#opts.limit && this.#waiting.length > 0) {
      const waiter = this.#waiting.shift() as Waiter;
      if (waiter.done) continue;
      waiter.done = true;
      waiter.grant(this.#admit());
    }
  }
}
