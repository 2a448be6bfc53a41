import { BerthError } from './errors.js';
import { linkSignals } from './linked-signal.js';
import type { Logger } from './logger.js';

/**
 * Where a long-lived component is in its life. It only moves forward:
 * new -> starting -> running -> stopping -> stopped (a failed start goes
 * from starting to stopped; a stop before start from new to stopped).
 */
export type LifecycleState = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

export type LifecycleErrorCode = 'LIFECYCLE_STOPPED' | 'LIFECYCLE_NOT_RUNNING';

/**
 * A component was used outside its lifecycle: LIFECYCLE_STOPPED for start()
 * after stop(), LIFECYCLE_NOT_RUNNING for work refused because the component
 * is not (or no longer) running. Components may throw their own error
 * instead (LifecycleOptions.refuse).
 */
export class LifecycleError extends BerthError<LifecycleErrorCode> {}

export interface LifecycleOptions {
  /** The component's child logger; every transition is logged on it at debug. */
  logger?: Logger;
  /**
   * Builds the error for a refused start() (`what` 'start', after stop) or
   * refused work (`what` 'work', outside 'running'). Default: LifecycleError.
   */
  refuse?: (state: LifecycleState, what: 'start' | 'work') => Error;
  /** The reason `signal` is aborted with when stop() begins. Default: a LifecycleError. */
  stopReason?: () => unknown;
}

/**
 * One component's lifecycle: its state, a start that runs once, a stop that
 * is safe to repeat and waits for the work in flight, and the signal that
 * tells that work to end (STYLE.md "Explicit lifecycles"; modelled on
 * temporal's worker state, grpc-js tryShutdown and undici close).
 *
 * The component keeps a `Lifecycle`, passes its own start and teardown steps
 * to `start(fn)` and `stop(fn)`, runs requests through `run(fn)` and
 * background loops through `track(promise)`, and answers `state` from it.
 */
export class Lifecycle {
  readonly #logger: Logger | undefined;
  readonly #refuse: (state: LifecycleState, what: 'start' | 'work') => Error;
  readonly #stopReason: () => unknown;
  readonly #ac = new AbortController();
  readonly #inFlight = new Set<Promise<unknown>>();
  #state: LifecycleState = 'new';
  #starting: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  #startError: { err: unknown } | undefined;

  constructor(opts: LifecycleOptions = {}) {
    this.#logger = opts.logger;
    this.#refuse = opts.refuse ?? defaultRefusal;
    this.#stopReason = opts.stopReason ?? (() => new LifecycleError('LIFECYCLE_NOT_RUNNING', 'stopping'));
  }

  /** The current state. */
  get state(): LifecycleState {
    return this.#state;
  }

  /** True from the moment stop() is called. */
  get stopRequested(): boolean {
    return this.#ac.signal.aborted;
  }

  /**
   * Aborted when stop() begins (with `stopReason`). Loops and calls started
   * by the component listen on it; it never fires for any other reason.
   */
  get signal(): AbortSignal {
    return this.#ac.signal;
  }

  /** How many tracked promises have not settled yet. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /**
   * Runs the component's start step `fn` once: new -> starting -> running.
   * `fn` gets `signal`, which fires if stop() is called meanwhile. Resolves
   * when running. Calling again while starting or running returns the same
   * promise (a no-op). After stop() was called it rejects with `refuse`
   * ('start'; LifecycleError LIFECYCLE_STOPPED by default). When `fn`
   * rejects, the state becomes 'stopped' (fn must undo what it began) and
   * start() rejects with fn's error, now and on later calls.
   */
  start(fn?: (signal: AbortSignal) => void | Promise<void>): Promise<void> {
    if (this.#startError) return Promise.reject(this.#startError.err);
    if (this.#ac.signal.aborted) return Promise.reject(this.#refuse(this.#state, 'start'));
    if (this.#starting) return this.#starting;
    this.#move('starting');
    this.#starting = (async () => {
      try {
        await fn?.(this.#ac.signal);
      } catch (err) {
        this.#startError = { err };
        this.#move('stopped');
        throw err;
      }
      // Running even when stop() was called meanwhile: stop() waits for this and moves on from here.
      this.#move('running');
    })();
    return this.#starting;
  }

  /**
   * For a component that is one background loop: starts it once (new ->
   * running at once) with `signal`, tracked so stop() waits for it to end.
   * A no-op unless the state is 'new' (a second call, or one after stop()).
   * Does not block; the loop must handle its own errors (a rejection is
   * the caller's bug, kept as an unhandled rejection).
   */
  startLoop(loop: (signal: AbortSignal) => Promise<void>): void {
    if (this.#state !== 'new') return;
    void this.start((signal) => {
      void this.track(loop(signal));
    });
  }

  /**
   * Stops: aborts `signal`, waits for a start in progress, runs the
   * component's `teardown`, then waits until every tracked promise and run()
   * has settled (including ones they began meanwhile), and is 'stopped'.
   * Safe to call twice and concurrently: every call shares one promise and
   * the teardown runs once; the first call's teardown is the one used.
   * Before start() it goes straight to 'stopped' without a teardown. Never
   * rejects: a teardown error is logged at warn and the stop goes on.
   */
  stop(teardown?: () => void | Promise<void>): Promise<void> {
    if (this.#stopping) return this.#stopping;
    this.#ac.abort(this.#stopReason());
    if (this.#state === 'new' || this.#state === 'stopped') {
      this.#move('stopped');
      this.#stopping = Promise.resolve();
      return this.#stopping;
    }
    if (this.#state === 'running') this.#move('stopping');
    this.#stopping = (async () => {
      await this.#starting?.catch(() => undefined);
      // A start that failed has already moved to 'stopped' and undone itself.
      if (this.#state === 'stopped') return;
      this.#move('stopping');
      try {
        await teardown?.();
      } catch (err) {
        this.#logger?.warn({ err: err instanceof Error ? err.message : String(err) }, 'error while stopping');
      }
      await this.drained();
      this.#move('stopped');
    })();
    return this.#stopping;
  }

  /**
   * Runs one piece of work while running: `fn` gets a signal that fires when
   * `opts.signal` does or stop() begins, and stop() waits for it. Refused
   * (rejects with `refuse('work')`, fn not called) outside 'running'.
   */
  run<T>(fn: (signal: AbortSignal) => Promise<T>, opts: { signal?: AbortSignal } = {}): Promise<T> {
    if (this.#state !== 'running' || this.#ac.signal.aborted) return Promise.reject(this.#refuse(this.#state, 'work'));
    // A signal of its own per run: listeners attach to it, never pile up on the
    // shared one; unlinked once the work settles (linkSignals: AbortSignal.any leaks).
    const link = linkSignals(opts.signal ? [opts.signal, this.#ac.signal] : [this.#ac.signal]);
    let work: Promise<T>;
    try {
      work = fn(link.signal);
    } catch (err) {
      link.unlink();
      return Promise.reject(err);
    }
    work.then(link.unlink, link.unlink);
    return this.#add(work);
  }

  /**
   * Counts `work` (a background loop, a release in progress) as in flight so
   * stop() waits for it, and returns it. Never refuses: the component
   * decides whether to begin work (look at `state` or `stopRequested`);
   * work tracked during stop()'s teardown is waited for too. Does not change
   * how `work` settles; its rejection is the caller's to handle.
   */
  track<T>(work: Promise<T>): Promise<T> {
    return this.#add(work);
  }

  /** Resolves once no tracked work or run() is in flight. Never rejects. */
  async drained(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  #add<T>(work: Promise<T>): Promise<T> {
    this.#inFlight.add(work);
    const forget = (): void => {
      this.#inFlight.delete(work);
    };
    work.then(forget, forget);
    return work;
  }

  #move(to: LifecycleState): void {
    const from = this.#state;
    if (from === to) return;
    this.#state = to;
    this.#logger?.debug({ from, to }, 'lifecycle');
  }
}

function defaultRefusal(state: LifecycleState, what: 'start' | 'work'): Error {
  if (what === 'start') return new LifecycleError('LIFECYCLE_STOPPED', `cannot start: ${state}`);
  return new LifecycleError('LIFECYCLE_NOT_RUNNING', `refused: ${state}`);
}
