// The API's write requests in flight: what the scheduler waits out so that a
// burst of submissions is answered before the evaluations it queued are run
// (a user's POST is never held behind the scheduler on the one event loop).

import { systemClock, type Clock } from '../../lib/index.js';

/**
 * How long the API must have been idle, after a burst, before it counts as
 * quiet. A burst's requests reach the event loop one by one, 2-5 ms apart
 * when 200 clients send at once (each is answered before the next is read),
 * so "nothing in flight" is true between any two of them; the scheduler then
 * ran its evaluations in those gaps and the burst's own placements and task
 * starts held up the rest of it (200 submissions from 200 threads: p50 1.4-
 * 2.1 s; with this wait 0.3-0.5 s). A request that comes alone (no other
 * within this window) is no burst and waits for nothing.
 */
export const BURST_SETTLE_MS = 20;

/**
 * How long a registration batch that is not full waits for more during a
 * burst (RequestsInFlight.burstLinger). Read one per turn, a burst's
 * registrations went one per store write; lingering 3-6 ms shares each
 * write among several (200 submissions from 200 threads: p50 352-390 ms
 * against 207-282 ms). A lone request never lingers.
 */
export const BURST_LINGER_MS = 5;

/**
 * How long an accepted connection that has sent no request yet counts as a
 * request on its way. 200 clients that each connect and then write their
 * request, on a loaded machine, are often descheduled between the two: the
 * API then saw no request in flight for more than BURST_SETTLE_MS while most
 * of the burst had connected, the scheduler placed the first jobs, the
 * client started their tasks on the same event loop, and the rest of the
 * burst waited behind that (200 submissions at load 16-21: p50 3.5 s, p99
 * 12 s, against 0.5 / 0.9 s when no gap opened). A connection that never
 * sends holds the scheduler this long at most.
 */
export const FRESH_CONNECTION_MS = 500;

/**
 * Counts the API's write requests (POST, PUT, DELETE: registrations, stops,
 * volume operations; the API leaves out a node's own writes) from their
 * headers until their response closed.
 * Reads are left out: blocking queries and event streams stay open for
 * minutes and would never let the count fall to zero. The server gives it
 * the system clock whatever its own: it follows sockets, which a test's
 * manual clock does not move.
 */
export class RequestsInFlight {
  readonly #clock: Clock;
  #count = 0;
  /**
   * Connections accepted that have not begun a request yet (nor closed, nor
   * waited FRESH_CONNECTION_MS): an id each -> when it was accepted, oldest
   * first. One timer expires them all (#expireFresh), not one a connection:
   * an AbortController and a timer for each of a burst's 200 connections, and
   * the AbortedError each aborted sleep built, were 4 % of the agent's CPU in
   * the burst.
   */
  readonly #fresh = new Map<number, number>();
  #nextFresh = 0;
  /** The expiry timer is armed. */
  #expiring = false;
  #waiters: Array<() => void> = [];
  /** When a request last began or ended (clock ms); -Infinity before the first. */
  #lastActivity = -Infinity;
  /** The latest request overlapped another or began within BURST_SETTLE_MS of the one before it. */
  #burst = false;
  #begun = 0;
  #entered = 0;

  constructor(opts: { clock?: Clock } = {}) {
    this.#clock = opts.clock ?? systemClock;
  }

  /** Write requests being served now. */
  get count(): number {
    return this.#count;
  }

  /** Write requests begun since the start, ended or not. */
  get entered(): number {
    return this.#entered;
  }

  /**
   * Requests of every kind (reads, nodes' heartbeats and reports too) begun
   * since the start: the traffic the agent's memory reclaimer stays out of
   * the way of. Counted by `began()`, apart from what enter() counts.
   */
  get begun(): number {
    return this.#begun;
  }

  /** A request of any kind began (see `begun`). */
  began(): void {
    this.#begun++;
  }

  /** A request began; pair with one `leave()` when it ended, however it ended. */
  enter(): void {
    const now = this.#clock.now();
    this.#count++;
    this.#entered++;
    // Whether this one is part of a burst: served beside another, or begun soon after the last one came or went.
    this.#burst = this.#count > 1 || now - this.#lastActivity < BURST_SETTLE_MS;
    this.#lastActivity = now;
  }

  /** A request ended. */
  leave(): void {
    this.#count = Math.max(0, this.#count - 1);
    this.#lastActivity = this.#clock.now();
    this.#wake();
  }

  /**
   * A connection was accepted. Until the returned function is called (at its
   * first request, after that request's `enter()`, or when it closes; safe
   * to call again) or FRESH_CONNECTION_MS passed, it counts as a write on its
   * way: the API is not quiet. Reads and nodes' requests settle it too; a
   * connection is fresh only for the moment between its connect and its
   * first request.
   */
  connectionOpened(): () => void {
    const id = this.#nextFresh++;
    this.#fresh.set(id, this.#clock.now());
    if (!this.#expiring) this.#expireFresh();
    return () => {
      if (this.#fresh.delete(id)) this.#wake();
    };
  }

  /**
   * Sleeps until the oldest fresh connection's FRESH_CONNECTION_MS is up,
   * forgets every connection whose time is up, and sleeps again while any is
   * left. Connections settled meanwhile only make a wake-up find less to do.
   */
  #expireFresh(): void {
    const oldest = this.#fresh.values().next();
    if (oldest.done) {
      this.#expiring = false;
      return;
    }
    this.#expiring = true;
    const left = oldest.value + FRESH_CONNECTION_MS - this.#clock.now();
    void this.#clock.sleep(Math.max(0, left)).then(() => {
      const now = this.#clock.now();
      for (const [id, at] of this.#fresh) {
        if (at + FRESH_CONNECTION_MS > now) break;
        this.#fresh.delete(id);
      }
      this.#wake();
      this.#expireFresh();
    });
  }

  /** Wakes whenQuiet's waiters once nothing is in flight or on its way. */
  #wake(): void {
    if (this.#count > 0 || this.#fresh.size > 0 || this.#waiters.length === 0) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  /**
   * Whether a burst is still being answered: the latest request overlapped
   * another or began within BURST_SETTLE_MS of the one before it, and a
   * request or a fresh connection is still open, or one began or ended less
   * than BURST_SETTLE_MS ago. What lets the evaluation worker wait for quiet
   * past its usual bound (a loaded machine answers 200 submissions over more
   * than a second); a stream of separate writes with gaps between them, or
   * one long request alone, is no burst.
   */
  get inBurst(): boolean {
    if (!this.#burst) return false;
    return this.#count > 0 || this.#fresh.size > 0 || this.#clock.now() - this.#lastActivity < BURST_SETTLE_MS;
  }

  /**
   * During a burst (the latest request overlapped another or came within
   * BURST_SETTLE_MS of the one before it, and that was less than
   * BURST_SETTLE_MS ago): a promise that resolves after BURST_LINGER_MS.
   * Otherwise undefined: nothing to wait for.
   */
  burstLinger(): Promise<void> | undefined {
    if (!this.#burst || (this.#count <= 1 && this.#clock.now() - this.#lastActivity >= BURST_SETTLE_MS)) return undefined;
    return this.#clock.sleep(BURST_LINGER_MS);
  }

  /**
   * Resolves once no write request is in flight and no fresh connection is
   * open (at once when none is and none came lately) and, after a burst,
   * none has begun or ended for `settleMs` (BURST_SETTLE_MS unless told; a
   * lone request never waits it). Never rejects; a caller that must not
   * wait forever races it with its own deadline.
   */
  async whenQuiet(settleMs = BURST_SETTLE_MS): Promise<void> {
    for (;;) {
      while (this.#count > 0 || this.#fresh.size > 0) await new Promise<void>((resolve) => this.#waiters.push(resolve));
      const left = this.#burst ? this.#lastActivity + settleMs - this.#clock.now() : 0;
      if (left <= 0) break;
      await this.#clock.sleep(left);
    }
  }
}
