// The one way tests wait for something to become true. A test that waits
// names what it waits for, has a deadline, and on failure says what it last
// saw; it never sleeps a fixed time and hopes. A check that something did
// NOT happen waits for an event proving the window in which it could have
// happened is closed (a log line, a state the step that could have done it
// leaves behind), never for a stretch of time.

import type { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { inspect } from 'node:util';

/** A probe's answers that mean "not yet". */
export type NotYet = undefined | null | false;

export interface EventuallyOptions {
  /** Give up after this many ms of real time. Default 30 000 (a busy machine is slow; a pass never waits for it). */
  timeoutMs?: number;
  /** Real time between two tries. Default 20. */
  intervalMs?: number;
  /**
   * Stops the wait early: eventually() rejects with an error naming what
   * was awaited and the signal's reason (e.g. "the process exited").
   */
  signal?: AbortSignal;
  /**
   * Runs after each failed try, before the pause: e.g. `() => clock.advance(0)`
   * so a manual clock's due timers fire, or a step of the manual clock.
   */
  between?: () => unknown;
}

/** Why eventually() or waitForEvent() gave up. `lastValue`/`lastError` are what the probe last gave. */
export class EventuallyError extends Error {
  readonly code = 'TEST_EVENTUALLY';
  readonly what: string;
  readonly lastValue: unknown;
  readonly lastError: unknown;

  constructor(what: string, why: string, last: { value?: unknown; error?: unknown }, options?: { cause?: unknown }) {
    const seen = last.error !== undefined ? `; last error: ${describe(last.error)}` : `; last value: ${inspect(last.value, { depth: 3, breakLength: Infinity })}`;
    super(`${why} waiting for ${what}${seen}`, options);
    this.name = 'EventuallyError';
    this.what = what;
    this.lastValue = last.value;
    this.lastError = last.error;
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Calls `probe` until it returns something other than undefined, null or
 * false, and resolves with that. A probe that throws counts as "not yet"
 * (the error is kept for the message). Rejects with EventuallyError after
 * `timeoutMs` (default 30 s) or when `signal` fires, naming `what` and the
 * last value or error the probe gave. A number as `opts` is the timeout.
 * Polls; for something that emits an event, prefer waitForEvent().
 */
export async function eventually<T>(what: string, probe: () => T | Promise<T>, opts: EventuallyOptions | number = {}): Promise<Exclude<T, NotYet>> {
  const o: EventuallyOptions = typeof opts === 'number' ? { timeoutMs: opts } : opts;
  const timeoutMs = o.timeoutMs ?? 30_000;
  const deadline = AbortSignal.timeout(timeoutMs);
  const stop = o.signal ? AbortSignal.any([o.signal, deadline]) : deadline;
  const last: { value?: unknown; error?: unknown } = {};
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== null && value !== false) return value as Exclude<T, NotYet>;
      last.value = value;
      delete last.error;
    } catch (err) {
      last.error = err;
    }
    if (stop.aborted) throw gaveUp(what, timeoutMs, o.signal, last);
    await o.between?.();
    try {
      await sleep(o.intervalMs ?? 20, undefined, { signal: stop });
    } catch {
      // The deadline or the caller's signal: one last try, then give up.
    }
  }
}

function gaveUp(what: string, timeoutMs: number, signal: AbortSignal | undefined, last: { value?: unknown; error?: unknown }): EventuallyError {
  if (signal?.aborted) return new EventuallyError(what, `stopped (${describe(signal.reason)})`, last, { cause: signal.reason });
  return new EventuallyError(what, `timed out after ${timeoutMs} ms`, last);
}

export interface WaitForEventOptions<A extends unknown[]> {
  /** Only an emission whose arguments pass this counts. */
  filter?: (...args: A) => boolean;
  /** Give up after this many ms of real time. Default 30 000 (a busy machine is slow; a pass never waits for it). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * Resolves with the arguments of the next `event` from `emitter` that
 * passes `filter`. Rejects with EventuallyError after `timeoutMs` or when
 * `signal` fires (showing the last emission the filter refused), and with
 * the emitter's error if it emits 'error' first. Subscribe before doing
 * what causes the event: it sees only later ones.
 */
export function waitForEvent<A extends unknown[] = unknown[]>(what: string, emitter: EventEmitter, event: string, opts: WaitForEventOptions<A> = {}): Promise<A> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  // A timer of our own, not AbortSignal.timeout: that one does not keep the process alive,
  // and a wait for an event that never comes must still end with its error.
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  const stop = opts.signal ? AbortSignal.any([opts.signal, deadline.signal]) : deadline.signal;
  return new Promise<A>((resolve, reject) => {
    let refused: unknown[] = [];
    const done = (): void => {
      clearTimeout(timer);
      emitter.off(event, onEvent);
      if (event !== 'error') emitter.off('error', onError);
      stop.removeEventListener('abort', onAbort);
    };
    const onEvent = (...args: unknown[]): void => {
      if (opts.filter && !opts.filter(...(args as A))) {
        refused = args;
        return;
      }
      done();
      resolve(args as A);
    };
    const onError = (err: unknown): void => {
      done();
      reject(err);
    };
    const onAbort = (): void => {
      done();
      const why = opts.signal?.aborted ? `stopped (${describe(opts.signal.reason)})` : `timed out after ${timeoutMs} ms`;
      reject(new EventuallyError(what, why, { value: refused.length ? { [`last '${event}' refused by the filter`]: refused } : `no '${event}' event` }));
    };
    if (stop.aborted) return onAbort();
    emitter.on(event, onEvent);
    if (event !== 'error') emitter.on('error', onError);
    stop.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Resolves on the next turn of the event loop, after every promise job
 * queued so far has run. For a check that a synchronous producer did not
 * produce something: once it returned, whatever it queued is there by then.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
