import { AbortedError } from './errors.js';
import { WAIT_ENDED } from './linked-signal.js';

/**
 * What a sleep ended by its owner rejects with (its signal aborted with
 * WAIT_ENDED: a loop woken early, by a store change or a status update): one
 * frozen error, not a new one with its stack trace at every wake-up. A
 * batch allocation's end wakes its node's status reporter once, 10,000 times
 * for the simulator's large job, and every store write wakes the leader's
 * watchers; that error was the largest part of a wake-up.
 */
const SLEEP_ENDED: AbortedError = Object.freeze(new AbortedError('sleep ended by its owner', { cause: WAIT_ENDED }));

/** The error a sleep rejects with when `signal` fired. */
function sleepAborted(signal: AbortSignal | undefined): AbortedError {
  return signal?.reason === WAIT_ENDED ? SLEEP_ENDED : new AbortedError('sleep aborted', { cause: signal?.reason });
}

/**
 * Time as Berth's time-dependent logic sees it. Production code takes a Clock
 * in its options and defaults to `systemClock`; tests pass a `ManualClock`.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Resolves after `ms` milliseconds; rejects with AbortedError as soon as
   * `signal` fires (one shared, frozen AbortedError when it fired with
   * WAIT_ENDED: the wait's owner ended it). A pending sleep keeps the
   * process alive, as any wait that work depends on must (a retry backoff is
   * work in progress).
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The longest delay setTimeout keeps (2^31 - 1 ms, about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The real clock: Date.now and ordinary timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms, signal) {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(sleepAborted(signal));
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(sleepAborted(signal));
      };
      // Node fires a timer of more than MAX_TIMER_MS at once: a longer sleep
      // waits in steps of at most that (a periodic job a month away).
      let timer: ReturnType<typeof setTimeout>;
      const arm = (left: number): void => {
        const step = Math.min(Math.max(0, left), MAX_TIMER_MS);
        timer = setTimeout(() => {
          if (left > step) return arm(left - step);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        }, step);
      };
      arm(ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
};

interface Sleeper {
  at: number;
  resolve: () => void;
}

/**
 * A clock that moves only when told to. `advance(ms)` wakes every sleeper
 * that is due, in order, letting promise callbacks run between wake-ups so
 * that code which sleeps again inside the same advance is woken too.
 */
export class ManualClock implements Clock {
  #now: number;
  #sleepers: Sleeper[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  /** How many sleeps are waiting. */
  get pending(): number {
    return this.#sleepers.length;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(sleepAborted(signal));
        return;
      }
      const sleeper: Sleeper = {
        at: this.#now + Math.max(0, ms),
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        reject(sleepAborted(signal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#sleepers.push(sleeper);
    });
  }

  /** Moves time forward by `ms`, waking due sleepers. Resolves once they have run. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      await flushMicrotasks();
      const due = this.#sleepers.filter((s) => s.at <= target).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.#sleepers = this.#sleepers.filter((s) => s !== due);
      this.#now = Math.max(this.#now, due.at);
      due.resolve();
    }
    this.#now = target;
    await flushMicrotasks();
  }

  /**
   * Moves time forward by `ms` at once, as a process that was paused (SIGSTOP)
   * sees it when it resumes: every due sleeper wakes with the clock already at
   * the new time. Resolves once they have run.
   */
  async jump(ms: number): Promise<void> {
    this.#now += ms;
    const due = this.#sleepers.filter((s) => s.at <= this.#now).sort((a, b) => a.at - b.at);
    this.#sleepers = this.#sleepers.filter((s) => s.at > this.#now);
    for (const s of due) s.resolve();
    await flushMicrotasks();
  }

  /** Waits (in real time, briefly) until at least `count` sleepers are pending. */
  async waitForSleepers(count = 1, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.#sleepers.length < count) {
      if (Date.now() > deadline) throw new Error(`expected ${count} sleepers, have ${this.#sleepers.length}`);
      await new Promise((r) => setImmediate(r));
    }
  }
}

async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
  await new Promise((r) => setImmediate(r));
}
