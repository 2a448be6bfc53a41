// A dev agent's client holds the start of new allocations while the agent's
// API answers users' writes (a burst of submissions): the client shares the
// API's one event loop, and a task start costs that loop 8-11 ms (its
// directory, its executor, its status report). Task starts begun while 200
// submissions were still being answered held the rest of them for seconds
// (issue 40's "bad mode": p50 3.5-15 s instead of 0.2-0.5 s, the agent's CPU
// until all were answered 13-22 ms a job instead of 2). The scheduler already
// waits for the same quiet (the evaluation worker, at most MAX_DEFER_MS a
// pass); when its bound ran out mid-burst, or it ran in a gap of the burst,
// the placed allocations' starts now wait too.

import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The longest a change with new allocations is held: a steady stream of
 * users' writes must not keep tasks from ever starting. With 2 s, a burst
 * answered over 2.4-11 s on a machine at load 20-30 had its task starts
 * begin beside the rest of it.
 */
export const MAX_START_HOLD_MS = 5000;

/**
 * After a burst of writes (never after a lone one), how long none must have
 * come before starts begin: on a loaded machine the submitting clients are
 * descheduled for tens of milliseconds, and the scheduler's 20 ms let the
 * starts in through those gaps.
 */
export const START_SETTLE_MS = 200;

/**
 * The client's `holdStarts` for an agent whose API runs on the client's
 * event loop: resolves once `quiet()` resolves (the server's
 * whenWritesQuiet: at once when no user's write is in flight), after
 * `maxMs` at the latest, or as soon as `signal` (the client stopping)
 * aborts. Never rejects.
 */
export function holdStartsWhileBusy(quiet: () => Promise<void>, maxMs = MAX_START_HOLD_MS): (signal: AbortSignal) => Promise<void> {
  return async (signal) => {
    const done = new AbortController();
    try {
      await Promise.race([quiet(), sleep(maxMs, undefined, { signal: AbortSignal.any([signal, done.signal]) }).catch(() => undefined)]);
    } finally {
      done.abort();
    }
  };
}
