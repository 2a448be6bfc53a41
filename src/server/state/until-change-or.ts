// A watcher's wait: for a change of some tables, or for a time on its own
// (injectable) clock, whichever comes first. The store's own `timeoutMs`
// runs on real time, which a test's manual clock does not move.

import { linkSignals, WAIT_ENDED, type Clock } from '../../lib/index.js';
import type { StateStore, TableName } from './state-store.js';

/**
 * Resolves with the store's index once one of `tables` changed after
 * `afterIndex`, or with `afterIndex` once `clock` reached `at` (no `at`:
 * the change alone). Rejects with AbortedError when `signal` fires, and
 * with what the store's wait threw otherwise (a closed store). Leaves no
 * timer or listener behind.
 */
export async function untilChangeOr(
  store: StateStore,
  tables: readonly TableName[],
  afterIndex: number,
  at: number | undefined,
  clock: Clock,
  signal: AbortSignal,
): Promise<number> {
  if (at === undefined) return store.blockUntil(tables, afterIndex, { signal });
  const woken = new AbortController();
  const both = linkSignals([signal, woken.signal]).signal; // unlinked by woken.abort()
  clock.sleep(Math.max(0, at - clock.now()), both).then(
    () => woken.abort(WAIT_ENDED),
    () => undefined,
  );
  try {
    return await store.blockUntil(tables, afterIndex, { signal: both });
  } catch (err) {
    if (signal.aborted || !woken.signal.aborted) throw err;
    return afterIndex; // the clock reached `at`
  } finally {
    woken.abort(WAIT_ENDED);
  }
}
