// A write transaction that is never committed: puts and deletes overlay a
// read view in memory and vanish with the object. `job plan` runs the same
// registration and evaluation code as `job run` inside one, so what the plan
// shows is what the run would do at that index.

import { keyOf } from './keys.js';
import { deepFreeze } from './_store-view.js';
import type { DataTable, ListOptions, RowInput, StateReader, StoreEvent, TableName, TableRow, WriteTxn } from './state-store.js';

/** A change of one row: what it is now (null: deleted), and the committed row before it. */
interface Change {
  table: DataTable;
  key: string;
  row: unknown;
  before: unknown;
}

/** A write transaction over `base` whose changes are only ever seen by itself. */
export class ScratchTxn implements WriteTxn {
  readonly #base: StateReader;
  /**
   * `table\0key` -> the row after this transaction's changes (null: deleted)
   * and the committed row it replaces, read once, when the key is first
   * changed.
   */
  readonly #changes = new Map<string, Change>();
  /** The same changes by table, for lists. */
  readonly #byTable = new Map<DataTable, Map<string, Change>>();

  constructor(base: StateReader) {
    this.#base = base;
  }

  get index(): number {
    return this.#base.index;
  }

  /** The index a real write would stamp next (a lower bound, as on etcd). */
  get writeIndex(): number {
    return this.#base.index + 1;
  }

  get oldestEventIndex(): number {
    return this.#base.oldestEventIndex;
  }

  get<T extends DataTable>(table: T, key: string): TableRow<T> | undefined {
    const c = this.#changes.get(`${table}\0${key}`);
    if (c) return (c.row ?? undefined) as TableRow<T> | undefined;
    return this.#base.get(table, key);
  }

  list<T extends DataTable>(table: T, opts: ListOptions<TableRow<T>> = {}): TableRow<T>[] {
    const mine = this.#byTable.get(table);
    if (!mine?.size) return this.#base.list(table, opts);
    const rows = new Map<string, TableRow<T>>();
    for (const r of this.#base.list(table)) rows.set(keyOf(table, r), r);
    for (const c of mine.values()) {
      if (c.row) rows.set(c.key, c.row as TableRow<T>);
      else rows.delete(c.key);
    }
    const keys = [...rows.keys()].sort();
    const out: TableRow<T>[] = [];
    for (const k of keys) {
      const row = rows.get(k) as TableRow<T>;
      if (opts.prefix !== undefined && !k.startsWith(opts.prefix)) continue;
      if (opts.filter && !opts.filter(row)) continue;
      out.push(row);
    }
    return out;
  }

  tableIndex(table: TableName): number {
    return this.#base.tableIndex(table);
  }

  events(afterIndex: number, opts?: { topics?: readonly DataTable[]; limit?: number }): StoreEvent[] {
    return this.#base.events(afterIndex, opts);
  }

  put<T extends DataTable>(table: T, input: RowInput<T>): TableRow<T> {
    const key = keyOf(table, input);
    const at = `${table}\0${key}`;
    const change = this.#changes.get(at);
    const before = change ? change.before : this.#base.get(table, key);
    const current = (change ? change.row : before) as TableRow<T> | null | undefined;
    const row = detached(input);
    row['createIndex'] = current?.createIndex ?? this.writeIndex;
    row['modifyIndex'] = this.writeIndex;
    this.#change(at, { table, key, row: deepFreeze(row), before });
    return row as unknown as TableRow<T>;
  }

  delete(table: DataTable, key: string): boolean {
    const at = `${table}\0${key}`;
    const change = this.#changes.get(at);
    if (change ? !change.row : !this.#base.get(table, key)) return false;
    this.#change(at, { table, key, row: null, before: change ? change.before : this.#base.get(table, key) });
    return true;
  }

  #change(at: string, c: Change): void {
    this.#changes.set(at, c);
    let mine = this.#byTable.get(c.table);
    if (!mine) this.#byTable.set(c.table, (mine = new Map()));
    mine.set(at, c);
  }

  /** Every row this transaction put (not deleted), with the committed row it replaces. */
  changed<T extends DataTable>(table: T): Array<{ row: TableRow<T>; before: TableRow<T> | undefined }> {
    const out: Array<{ row: TableRow<T>; before: TableRow<T> | undefined }> = [];
    for (const c of this.#byTable.get(table)?.values() ?? []) {
      if (c.row) out.push({ row: c.row as TableRow<T>, before: (c.before ?? undefined) as TableRow<T> | undefined });
    }
    return out;
  }
}

/**
 * A copy of `input` the caller's later changes cannot reach. Frozen parts are
 * shared, not cloned: rows read from a store, and rows this transaction put,
 * are deep-frozen, and a plan that updates a thousand allocations in place
 * puts a thousand rows made of their parts.
 */
function detached(input: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(input)) {
    const v = (input as Record<string, unknown>)[k];
    out[k] = copied(v);
  }
  return out;
}

/**
 * A deep copy of a row's part, sharing what is frozen. Rows are JSON data
 * (the stores keep them as JSON): plain objects and arrays are copied, and a
 * recursive copy costs a fraction of `structuredClone`'s fixed cost a call,
 * which a plan placing hundreds of allocations pays four times each.
 */
function copied(v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Object.isFrozen(v)) return v;
  if (Array.isArray(v)) return v.map(copied);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) out[k] = copied((v as Record<string, unknown>)[k]);
  return out;
}
