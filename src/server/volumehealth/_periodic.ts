// A leader loop that runs one step every interval on the injectable clock:
// start() returns once it runs, stop() is safe twice and waits for the step
// in flight, `state` says where it stands. A failed step is logged and the
// loop goes on. Subclasses say what a step is.

import { AbortedError, describeError, Lifecycle, type Clock, type LifecycleState, type Logger } from '../../lib/index.js';

export abstract class PeriodicLoop {
  readonly #life: Lifecycle;
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #firstDelayMs: number;
  protected readonly log: Logger;

  constructor(opts: { clock: Clock; logger: Logger; intervalMs: number; firstDelayMs?: number }) {
    this.#clock = opts.clock;
    this.log = opts.logger;
    this.#intervalMs = Math.max(1, opts.intervalMs);
    this.#firstDelayMs = opts.firstDelayMs ?? this.#intervalMs;
    this.#life = new Lifecycle({ logger: opts.logger });
  }

  /** One round; rejecting logs the failure (the loop goes on). */
  protected abstract step(signal: AbortSignal): Promise<void>;

  get state(): LifecycleState {
    return this.#life.state;
  }

  start(): Promise<void> {
    return this.#life.start((signal) => {
      void this.#life.track(this.#run(signal));
    });
  }

  stop(): Promise<void> {
    return this.#life.stop();
  }

  async #run(signal: AbortSignal): Promise<void> {
    let delay = this.#firstDelayMs;
    for (;;) {
      try {
        await this.#clock.sleep(delay, signal);
      } catch {
        return;
      }
      delay = this.#intervalMs;
      try {
        await this.step(signal);
      } catch (err) {
        if (err instanceof AbortedError || signal.aborted) return;
        this.log.warn({ err: describeError(err) }, 'periodic step failed; trying again next interval');
      }
    }
  }
}
