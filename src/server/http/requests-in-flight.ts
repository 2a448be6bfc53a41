// The API's write requests in flight: what the scheduler waits out so that a
// burst of submissions is answered before the evaluations it queued are run
// (a user's POST is never held behind the scheduler on the one event loop).

import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How long the API must have begun no write request before it counts as
 * quiet: a burst arrives over a few turns of the event loop (sockets become
 * readable one after another), and a gap of one turn is not its end.
 */
export const SETTLE_MS = 10;

/**
 * Counts the API's write requests (POST, PUT, DELETE: registrations, status
 * reports, heartbeats) from their headers until their response closed.
 * Reads are left out: blocking queries and event streams stay open for
 * minutes and would never let the count fall to zero. Real time, not a
 * Clock: it follows sockets, which a test's manual clock does not move.
 */
export class RequestsInFlight {
  #count = 0;
  #lastEnter = -Infinity;
  #waiters: Array<() => void> = [];

  /** Write requests being served now. */
  get count(): number {
    return this.#count;
  }

  /** A request began; pair with one `leave()` when it ended, however it ended. */
  enter(): void {
    this.#count++;
    this.#lastEnter = performance.now();
  }

  /** A request ended. */
  leave(): void {
    this.#count = Math.max(0, this.#count - 1);
    if (this.#count > 0 || this.#waiters.length === 0) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  /**
   * Resolves once no write request is in flight and none began in the last
   * SETTLE_MS (at once when that is so already). Never rejects; a caller
   * that must not wait forever races it with its own deadline.
   */
  async whenQuiet(): Promise<void> {
    for (;;) {
      if (this.#count > 0) await new Promise<void>((resolve) => this.#waiters.push(resolve));
      const settled = this.#lastEnter + SETTLE_MS - performance.now();
      if (this.#count === 0 && settled <= 0) return;
      if (this.#count === 0) await sleep(settled);
    }
  }
}
