// The API's write requests in flight: what the scheduler waits out so that a
// burst of submissions is answered before the evaluations it queued are run
// (a user's POST is never held behind the scheduler on the one event loop).

/**
 * Counts the API's write requests (POST, PUT, DELETE: registrations, status
 * reports, heartbeats) from their headers until their response closed.
 * Reads are left out: blocking queries and event streams stay open for
 * minutes and would never let the count fall to zero.
 */
export class RequestsInFlight {
  #count = 0;
  #waiters: Array<() => void> = [];

  /** Write requests being served now. */
  get count(): number {
    return this.#count;
  }

  /** A request began; pair with one `leave()` when it ended, however it ended. */
  enter(): void {
    this.#count++;
  }

  /** A request ended. */
  leave(): void {
    this.#count = Math.max(0, this.#count - 1);
    if (this.#count > 0 || this.#waiters.length === 0) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  /** Resolves once no write request is in flight (at once when none is). Never rejects. */
  whenQuiet(): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}
