// Blocking queries (`?index=N&wait=30s`), as Nomad's: a read that names the
// index it last saw waits until one of its tables passes that index, or until
// `wait` runs out, and then answers; `X-Berth-Index` tells the caller the
// index to send next time.

import { durationMs } from '../../structs/index.js';
import type { DataTable, StateReader, StateStore, TableName } from '../state/index.js';
import { ApiError } from './api-error.js';
import { TouchedKeys } from './touched-keys.js';

/** Default and longest wait of a blocking query. */
export const DEFAULT_WAIT_MS = 5 * 60_000;
export const MAX_WAIT_MS = 10 * 60_000;

export interface BlockingQuery {
  /** Wait until a table's index passes this; undefined: answer at once. */
  index?: number;
  waitMs: number;
}

/** Reads `index` and `wait` from a query string. Throws ApiError INVALID for malformed values. */
export function parseBlockingQuery(query: Record<string, unknown>): BlockingQuery {
  const rawIndex = query['index'];
  const rawWait = query['wait'];
  let index: number | undefined;
  if (rawIndex !== undefined && rawIndex !== '') {
    index = Number(rawIndex);
    if (!Number.isSafeInteger(index) || index < 0) throw new ApiError('INVALID', 'index must be a non-negative integer', { field: 'index' });
  }
  let waitMs = DEFAULT_WAIT_MS;
  if (rawWait !== undefined && rawWait !== '') {
    const text = String(rawWait);
    try {
      waitMs = /^\d+$/.test(text) ? Number(text) * 1000 : durationMs(text);
    } catch {
      throw new ApiError('INVALID', 'wait must be a duration such as "30s" or "5m"', { field: 'wait' });
    }
  }
  return index === undefined ? { waitMs: Math.min(waitMs, MAX_WAIT_MS) } : { index, waitMs: Math.min(waitMs, MAX_WAIT_MS) };
}

/**
 * Runs a read, first waiting as the query asks. Resolves with the result and
 * the index to report (the highest index of `tables`, at least 1). Rejects
 * with AbortedError when `signal` fires (the client went away).
 */
export async function blockingRead<T>(
  store: StateStore,
  tables: readonly TableName[],
  query: BlockingQuery,
  signal: AbortSignal,
  read: (snap: StateReader) => T,
): Promise<{ index: number; result: T }> {
  if (query.index !== undefined) await store.blockUntil(tables, query.index, { signal, timeoutMs: query.waitMs });
  const snap = store.snapshot();
  const index = Math.max(1, ...tables.map((t) => snap.tableIndex(t)));
  return { index, result: read(snap) };
}

/** Which rows of a table a reader cares for: those whose `key` is `is` (a node's allocations: `nodeId` is the node's ID). */
export interface RowScope {
  key: (row: unknown) => string | undefined;
  is: string;
}

/**
 * Like `blockingRead` over one table, but the wait ends only when a write
 * touches a row in `scope` (a put or a delete), or `wait` runs out: a reader
 * of a few rows (a node's own allocations) is not woken, and does not read
 * and answer its whole list again, for every write to the table. The store's
 * event history says what each write touched; when it no longer reaches back
 * to the index asked for, the wait ends at the table's next write, as a plain
 * blocking read's does. The index reported is the table's, as `blockingRead`
 * reports it. Rejects with AbortedError when `signal` fires.
 */
export async function blockingReadOf<T>(
  store: StateStore,
  table: DataTable,
  scope: RowScope,
  query: BlockingQuery,
  signal: AbortSignal,
  read: (snap: StateReader) => T,
): Promise<{ index: number; result: T }> {
  if (query.index !== undefined) {
    const deadline = Date.now() + query.waitMs;
    let seen = query.index;
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      // The scope lets a store that can (etcd) leave this reader asleep through writes to other rows.
      const at = await store.blockUntil([table], seen, { signal, timeoutMs: remaining, scope: { table, key: scope.key, is: scope.is } });
      if (at <= seen) break;
      // Touched, or the history no longer reaches back to `seen` (then no one can say): read again.
      if (touchedKeysOf(store, table, scope.key).touchedAfter(store.snapshot(), seen, scope.is)) break;
      seen = at;
    }
  }
  return blockingRead(store, [table], { waitMs: 0 }, signal, read);
}

/** Per store, table and key function, the last write under each scope key (touched-keys.ts): shared by every reader. */
const touchedOf = new WeakMap<StateStore, Map<DataTable, WeakMap<RowScope['key'], TouchedKeys>>>();

function touchedKeysOf(store: StateStore, table: DataTable, key: RowScope['key']): TouchedKeys {
  let tables = touchedOf.get(store);
  if (!tables) touchedOf.set(store, (tables = new Map()));
  let keys = tables.get(table);
  if (!keys) tables.set(table, (keys = new WeakMap()));
  let touched = keys.get(key);
  if (!touched) keys.set(key, (touched = new TouchedKeys(table, key)));
  return touched;
}
