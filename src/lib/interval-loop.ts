// A long-lived loop on the injectable clock: one round, a wait, the next
// round. The wait is the interval, or what the round asks for, or cut short
// by wake(). One copy of the loop the node's volume stats and the server's
// leader loops (controller conditions, drift) run on.

import type { Clock } from './clock.js';
import { AbortedError, describeError } from './errors.js';
import { Lifecycle, type LifecycleState } from './lifecycle.js';
import type { Logger } from './logger.js';

export interface IntervalLoopOptions {
  clock: Clock;
  /** The owner's child logger: a failed round is logged on it at warn. */
  logger: Logger;
  /** The wait between two rounds when a round does not ask for another (ms, at least 1). */
  intervalMs: number;
  /** The wait before the first round. Default `intervalMs`; 0 runs the first round at once. */
  firstDelayMs?: number;
  /**
   * One round. Resolves to the wait before the next one (ms, at least 1), or
   * to nothing for the interval. A rejection is logged and the loop goes on
   * (after the interval); once `signal` fired the loop ends instead.
   */
  step: (signal: AbortSignal) => Promise<number | void> | number | void;
}

/**
 * Lifecycle (lib Lifecycle): start() returns once the loop runs (its first
 * round comes after `firstDelayMs`); stop() is safe twice, aborts the signal
 * the round got and waits for the round in flight and for work handed to
 * track(). `state` says where it stands.
 */
export class IntervalLoop {
  readonly #o: IntervalLoopOptions;
  readonly #life: Lifecycle;
  /** Ends the current wait; undefined while a round runs. */
  #wake: (() => void) | undefined;
  /** wake() came while a round ran: the next wait is skipped. */
  #woken = false;

  constructor(opts: IntervalLoopOptions) {
    this.#o = opts;
    this.#life = new Lifecycle({ logger: opts.logger });
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  /** Starts the loop. Resolves once it runs; a no-op when it already does. Rejects after stop(). */
  start(): Promise<void> {
    return this.#life.start((signal) => {
      void this.#life.track(this.#run(signal));
    });
  }

  /** Stops the loop and waits for the round in flight and for tracked work. Safe to repeat. */
  stop(): Promise<void> {
    return this.#life.stop();
  }

  /** Runs the next round now rather than at the end of the wait (at once if waiting, else right after the round in flight). Never throws. */
  wake(): void {
    if (this.#wake) this.#wake();
    else this.#woken = true;
  }

  /** Work started by a round that outlives it (a call in flight): stop() waits for it too. Returns `work`. */
  track<T>(work: Promise<T>): Promise<T> {
    return this.#life.track(work);
  }

  async #run(signal: AbortSignal): Promise<void> {
    const interval = Math.max(1, this.#o.intervalMs);
    let delay = this.#o.firstDelayMs ?? interval;
    while (!signal.aborted) {
      if (!(await this.#wait(delay, signal))) return;
      delay = interval;
      try {
        const asked = await this.#o.step(signal);
        if (typeof asked === 'number') delay = Math.max(1, asked);
      } catch (err) {
        if (err instanceof AbortedError || signal.aborted) return;
        this.#o.logger.warn({ err: describeError(err) }, 'periodic step failed; trying again next interval');
      }
    }
  }

  /** Waits `ms` or until wake(); false once `signal` fired. */
  async #wait(ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.#woken || ms <= 0) {
      this.#woken = false;
      return !signal.aborted;
    }
    const woken = new Promise<void>((resolve) => (this.#wake = resolve));
    const cut = new AbortController();
    try {
      await Promise.race([this.#o.clock.sleep(ms, AbortSignal.any([signal, cut.signal])), woken]);
    } catch {
      // The sleep was cut: by stop(), or by a wake() that won the race.
    } finally {
      cut.abort();
      this.#wake = undefined;
    }
    return !signal.aborted;
  }
}
