// The blocked readers of a state store, by table, and the tables' indexes
// they wait on: what both stores' `blockUntil` is made of. Private to
// src/server/state.
import { AbortedError } from '../../lib/index.js';
import { StateStoreError } from './errors.js';
import type { BlockOptions, BlockScope, StoreEvent, TableName } from './state-store.js';

interface Waiter {
  tables: readonly TableName[];
  afterIndex: number;
  /** Woken only by a write whose events touch this scope, when the store gives `wake` them (BlockOptions.scope). */
  scope: BlockScope | undefined;
  settle: (outcome: { index: number } | { error: Error }) => void;
}

/**
 * Each table's last index, and the readers blocked until one of theirs
 * passes a given index. The store sets `indexes` as it applies writes, then
 * calls `wake` with the tables it touched. Never blocks; not thread-aware
 * (one event loop).
 */
export class TableWaiters {
  /** The index of the last write that touched each table. */
  readonly indexes = new Map<TableName, number>();
  readonly #waiters = new Map<TableName, Set<Waiter>>();

  /** The highest index among `tables` (0 when none was written). */
  highest(tables: readonly TableName[]): number {
    let max = 0;
    for (const t of tables) max = Math.max(max, this.indexes.get(t) ?? 0);
    return max;
  }

  /**
   * StateStore.blockUntil's contract, for a store that is open: resolves with
   * the highest index of `tables` once it passes `afterIndex` (at once if it
   * has), or with the current one after `timeoutMs`; rejects with
   * AbortedError on `signal`, and with whatever `closeAll` is given.
   */
  block(tables: readonly TableName[], afterIndex: number, opts: BlockOptions = {}): Promise<number> {
    const now = this.highest(tables);
    if (now > afterIndex) return Promise.resolve(now);
    const { signal, timeoutMs } = opts;
    if (signal?.aborted) return Promise.reject(new AbortedError('blocking read aborted', { cause: signal.reason }));
    return new Promise<number>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const onAbort = (): void => waiter.settle({ error: new AbortedError('blocking read aborted', { cause: signal?.reason }) });
      const waiter: Waiter = {
        tables,
        afterIndex,
        scope: opts.scope && tables.length === 1 && tables[0] === opts.scope.table ? opts.scope : undefined,
        settle: (outcome) => {
          for (const t of tables) this.#waiters.get(t)?.delete(waiter);
          if (timer) clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          if ('error' in outcome) reject(outcome.error);
          else resolve(outcome.index);
        },
      };
      for (const t of tables) {
        let set = this.#waiters.get(t);
        if (!set) this.#waiters.set(t, (set = new Set()));
        set.add(waiter);
      }
      if (timeoutMs !== undefined) timer = setTimeout(() => waiter.settle({ index: this.highest(tables) }), Math.max(0, timeoutMs));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Wakes the readers of `touched` that wait for less than `index`. With
   * `events` (every event of the write at `index`), a scoped reader
   * (BlockOptions.scope) whose scope none of them touches sleeps on: a
   * thousand nodes blocked on their allocations were each woken, took a
   * snapshot and blocked again for every write of any node's allocations.
   */
  wake(touched: readonly TableName[], index: number, events?: readonly StoreEvent[]): void {
    const due = new Set<Waiter>();
    // Per scope key function, the scope values this write touched (read once for all its readers).
    let touchedBy: Map<BlockScope['key'], Set<string | undefined>> | undefined;
    const touches = (scope: BlockScope): boolean => {
      touchedBy ??= new Map();
      let values = touchedBy.get(scope.key);
      if (!values) {
        values = new Set();
        for (const e of events ?? []) if (e.topic === scope.table) values.add(scope.key(e.row));
        touchedBy.set(scope.key, values);
      }
      return values.has(scope.is);
    };
    for (const t of touched) {
      const set = this.#waiters.get(t);
      if (!set) continue;
      for (const w of set) {
        if (index <= w.afterIndex) continue;
        if (w.scope && events && !touches(w.scope)) continue;
        due.add(w);
      }
    }
    for (const w of due) w.settle({ index: this.highest(w.tables) });
  }

  /** Wakes every reader whose tables moved past what it waits for (after the indexes were replaced wholesale). */
  wakeAll(): void {
    const due = new Set<Waiter>();
    for (const set of this.#waiters.values()) for (const w of set) if (this.highest(w.tables) > w.afterIndex) due.add(w);
    for (const w of due) w.settle({ index: this.highest(w.tables) });
  }

  /** Rejects every blocked reader with STORE_CLOSED. */
  closeAll(): void {
    const all = new Set<Waiter>();
    for (const set of this.#waiters.values()) for (const w of set) all.add(w);
    for (const w of all) w.settle({ error: new StateStoreError('STORE_CLOSED', 'the state store was closed') });
  }
}
