// Reports allocation status changes to the server, batched: after a quiet
// spell the first update goes at once (the user waiting for `running` waits
// for no timer); an update within a short moment of the last POST waits out
// that moment for others, then all go in one POST (a burst is batched). One
// POST is on its way at a time: what came meanwhile goes as soon as it is
// answered (the server's answer paces those; holding them for the interval
// too made a burst's last reports later and saved no POSTs). While
// many allocations change (a burst of starts, each reported as it runs) the
// next waits longer, as Nomad's client sends its updates every 200 ms: each
// POST is a store write on the server and a round trip on the node's one
// event loop. One allocation going through its steps is no burst: its
// `running` is not held back, unless its caller says it is likely to be
// replaced at once (a batch allocation's `running`: its task may end in a
// moment): such an update waits up to `holdMs` for the one that replaces
// it, so that a task that ends at once costs one POST, not two (as Nomad's
// 200 ms batching makes it one update), and goes earlier with any POST
// that goes meanwhile. A failed batch is retried with backoff; an allocation the
// server refuses (gone, not on this node) is dropped so it cannot block the
// others.

import {
  AbortedError,
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
  WAIT_ENDED,
} from '../../lib/index.js';
import { ServerConnError, type AllocStatusReport, type ServerApi } from './server-api.js';

export interface StatusReporterOptions {
  api: ServerApi;
  nodeId: string;
  /**
   * The least time between the last POST and the next sender's first: updates within it wait for
   * others and go together. Default 20 ms. (Updates that come while a POST is on its way go when it is answered.)
   */
  batchMs?: number;
  /**
   * batchMs while many allocations change: once
   * the POSTs of the last twice this time carried `burstAllocations`
   * allocations or more. Default 100 ms: 200 tasks starting at once,
   * reported at 20 ms, made some 100 POSTs of one or two updates each (they
   * became running one by one).
   */
  burstBatchMs?: number;
  /** How many allocations reported within twice burstBatchMs make a burst. Default 4. */
  burstAllocations?: number;
  /**
   * How many of the node's allocations are on their way to their first task
   * now (the client's admission window: admitted or waiting for a slot). A
   * burst's longer wait is for updates still to come: while one allocation
   * or none is starting, nothing else is coming to share the POST, and
   * allocations started one after another (a script's `job run`s, each
   * waiting for the last) each report at batchMs. Default: not known, and
   * the POSTs alone say whether it is a burst.
   */
  starting?: () => number;
  /**
   * How long an update reported with `{ hold: true }` may wait for the one
   * that replaces it. Default 200 ms, Nomad's alloc sync interval.
   */
  holdMs?: number;
  clock?: Clock;
  logger?: Logger;
  backoff?: BackoffPolicy;
  random?: () => number;
}

/**
 * Lifecycle (lib Lifecycle): running from construction, no start();
 * `report()` queues an update and returns at once; `flush()` waits until
 * everything queued so far is sent (or dropped); `stop()` abandons what is
 * not sent (the server learns it at the next agent start) and waits for the
 * sender; safe twice. Never throws.
 */
export class StatusReporter {
  readonly #opts: StatusReporterOptions;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #life: Lifecycle;
  readonly #pending = new Map<string, AllocStatusReport>();
  /** Until when (clock ms) a pending update reported with `hold` may wait; pending updates not here go at once. */
  readonly #heldUntil = new Map<string, number>();
  /** Wakes a sender waiting out holds (an update that does not wait came). */
  #wake: (() => void) | undefined;
  #sender: Promise<void> | undefined;
  #sent = 0;
  #batches = 0;
  /** When the last POST went (clock ms); -Infinity before the first. */
  #lastPostAt = -Infinity;
  /** The allocations of recent POSTs, and when they went (clock ms), oldest first. */
  #recent: Array<{ at: number; id: string }> = [];

  constructor(opts: StatusReporterOptions) {
    this.#opts = opts;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'status-reporter' });
    this.#clock = opts.clock ?? systemClock;
    this.#life = new Lifecycle({ logger: this.#logger });
    void this.#life.start();
    // Stopping ends a wait for holds as an update that does not wait does (see #waitOutHolds).
    this.#life.signal.addEventListener('abort', () => this.#wake?.(), { once: true });
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  /** Updates sent and batches posted so far. */
  get counts(): { sent: number; batches: number } {
    return { sent: this.#sent, batches: this.#batches };
  }

  /**
   * Queues an update; a later update of the same allocation replaces it.
   * With `hold`, the update is likely to be replaced at once (a batch
   * allocation's `running`): it waits up to holdMs for that, counted from
   * the first held update of the allocation still pending, unless another
   * update goes first (all pending go together).
   */
  report(update: AllocStatusReport, opts: { hold?: boolean } = {}): void {
    const signal = this.#life.signal;
    if (signal.aborted) return;
    this.#pending.set(update.id, update);
    if (!opts.hold) {
      this.#heldUntil.delete(update.id);
      this.#wake?.();
    } else if (!this.#heldUntil.has(update.id)) {
      this.#heldUntil.set(update.id, this.#clock.now() + (this.#opts.holdMs ?? 200));
    }
    this.#sender ??= this.#startSender(signal);
  }

  /** One sender at a time; when it ends with updates left (they came in late), the next one starts. */
  #startSender(signal: AbortSignal): Promise<void> {
    return this.#life.track(
      this.#send(signal).finally(() => {
        this.#sender = undefined;
        if (this.#pending.size > 0 && !signal.aborted) this.#sender = this.#startSender(signal);
      }),
    );
  }

  /** Resolves when nothing is left to send (or on stop). */
  async flush(): Promise<void> {
    while (this.#sender) await this.#sender;
  }

  async stop(): Promise<void> {
    await this.#life.stop();
    this.#pending.clear();
    this.#heldUntil.clear();
  }

  async #send(signal: AbortSignal): Promise<void> {
    let failures = 0;
    try {
      const burstMs = this.#opts.burstBatchMs ?? 100;
      const waitMs = this.#lastPostAt + (this.#inBurst(burstMs) ? burstMs : (this.#opts.batchMs ?? 20)) - this.#clock.now();
      // Updates made in the same turn (a task's state and its allocation's) still go together.
      if (waitMs > 0) await this.#clock.sleep(waitMs, signal);
      else await new Promise<void>((resolve) => setImmediate(resolve));
      while (this.#pending.size > 0) {
        await this.#waitOutHolds(signal);
        const batch = [...this.#pending.values()];
        this.#lastPostAt = this.#clock.now();
        try {
          await this.#post(batch, signal);
          failures = 0;
          // Only what went: a batch retried through an outage would otherwise be counted again at every try.
          for (const u of batch) this.#recent.push({ at: this.#lastPostAt, id: u.id });
          this.#forgetOld(burstMs);
        } catch (err) {
          if (signal.aborted) return;
          failures++;
          const delayMs = backoffDelay(this.#opts.backoff ?? BACKOFF.reconnect, failures, this.#opts.random);
          this.#logger.warn({ err: describeError(err), updates: batch.length, delayMs }, 'reporting allocation status failed');
          await this.#clock.sleep(delayMs, signal);
        }
      }
    } catch {
      // Stopped while waiting.
    }
  }

  /**
   * While every pending update is held, waits until the first hold ends or
   * an update that does not wait comes. A hold that ended before this ran
   * (the loop was busy) still waits out one turn of the timers, so the
   * updates of timers due before it (a task's end right after its start)
   * come first: under load a node's loop can be 200 ms late. Rejects on stop.
   */
  async #waitOutHolds(signal: AbortSignal): Promise<void> {
    for (let timersRan = false; ; ) {
      let until = Infinity;
      for (const id of this.#pending.keys()) {
        const held = this.#heldUntil.get(id);
        if (held === undefined) return;
        until = Math.min(until, held);
      }
      const ms = until - this.#clock.now();
      if (ms <= 0 && timersRan) return;
      timersRan = true;
      // Ended by an update that does not wait, or by stop() (the listener the constructor put on the
      // lifecycle's signal): no signal linked per wait. Not a bare abort(): its DOMException (a stack
      // trace each) was most of a wake-up's cost, and a batch allocation's end wakes the sender once
      // each (10,000 times for the simulator's large job); WAIT_ENDED makes the sleep reject with one
      // shared error (lib clock.ts).
      const woken = new AbortController();
      this.#wake = () => woken.abort(WAIT_ENDED);
      try {
        if (signal.aborted) throw new AbortedError('the status reporter stopped');
        await this.#clock.sleep(Math.max(0, ms), woken.signal);
      } catch (err) {
        if (signal.aborted) throw err;
        // Woken by an update that does not wait: the others of its turn (the ends of a node's tasks that
        // ended together, each from its own timer) still go with it.
        await new Promise<void>((resolve) => setImmediate(resolve));
      } finally {
        this.#wake = undefined;
      }
    }
  }

  /** Whether the POSTs of the last 2 x burstMs carried burstAllocations allocations or more, and more than one allocation is still starting (when the client says). */
  #inBurst(burstMs: number): boolean {
    this.#forgetOld(burstMs);
    if ((this.#opts.starting?.() ?? Infinity) <= 1) return false;
    return new Set(this.#recent.map((r) => r.id)).size >= (this.#opts.burstAllocations ?? 4);
  }

  /** Drops what was posted more than 2 x burstMs ago. */
  #forgetOld(burstMs: number): void {
    const since = this.#clock.now() - 2 * burstMs;
    const firstKept = this.#recent.findIndex((r) => r.at >= since);
    this.#recent = firstKept < 0 ? [] : this.#recent.slice(firstKept);
  }

  /** Posts a batch; on a refusal, posts each update alone and drops the refused ones. */
  async #post(batch: AllocStatusReport[], signal: AbortSignal): Promise<void> {
    const done = (u: AllocStatusReport): void => {
      // Only if no newer update of the allocation came in meanwhile.
      if (this.#pending.get(u.id) === u) {
        this.#pending.delete(u.id);
        this.#heldUntil.delete(u.id);
      }
    };
    try {
      await this.#opts.api.updateAllocations(this.#opts.nodeId, batch, { signal });
      batch.forEach(done);
      this.#sent += batch.length;
      this.#batches++;
      return;
    } catch (err) {
      if (!(err instanceof ServerConnError) || err.code !== 'SERVER_REFUSED' || batch.length === 1) {
        if (err instanceof ServerConnError && err.code === 'SERVER_REFUSED') {
          this.#logger.warn({ allocId: batch[0]?.id, err: err.message }, 'the server refused an allocation status; dropping it');
          batch.forEach(done);
          return;
        }
        throw err;
      }
    }
    for (const u of batch) await this.#post([u], signal);
  }
}
