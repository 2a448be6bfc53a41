// Pieces both state stores share: frozen rows, a read view over fixed
// table maps, and the write transaction that overlays a write's changes on
// such a view. Private to src/server/state.
import { keyOf } from './keys.js';
import { deepFreeze } from './_deep-freeze.js';
import { copyWithout, defineLazyPart, freezeRow, LazyPart, lazyPartOf, partOf } from './_lazy-part.js';
import type { DataTable, ListOptions, RowInput, StateReader, StoreEvent, TableName, TableRow, WriteTxn } from './state-store.js';

export { deepFreeze };

export type Row = { createIndex: number; modifyIndex: number } & Record<string, unknown>;

export interface Change {
  table: DataTable;
  key: string;
  /** The row after the write; null for a delete. */
  row: Row | null;
  /** The row's JSON as the store writes it: without the part it keeps apart (`part`), if any. */
  json: string | null;
  /** The committed row before the write. */
  before: Row | undefined;
  /**
   * The row's part the store keeps apart (Txn's `detached`), when the row
   * has one: its field, and its JSON when the write gave the part another
   * value than the committed row's; undefined when the row carries the
   * committed row's own part (the same object: a status report spreads the
   * stored row), which need not be sent again.
   */
  part?: { field: string; json: string | undefined };
}

/**
 * Drops the oldest of `events` (sorted by index) once they pass `limit` by a
 * quarter (in batches, so a steady stream of writes does not shift the array
 * every time), whole writes at a time: the events of one write are all kept
 * or all dropped, so the write at the oldest index kept is complete and a
 * reader at the index just before it misses nothing. A write with more events
 * than the limit is kept whole.
 */
export function trimEventHistory(events: StoreEvent[], limit: number): void {
  const excess = events.length - limit;
  if (excess <= limit / 4) return;
  const boundary = events[excess - 1]!.index;
  let cut = excess;
  while (cut < events.length && events[cut]!.index === boundary) cut++;
  // The newest write alone passes the limit: keep it whole, drop what is before it.
  if (cut === events.length) while (cut > 0 && events[cut - 1]!.index === boundary) cut--;
  events.splice(0, cut);
}

/** Index of the first event with index > after (events are sorted by index). */
export function firstAfter(events: readonly StoreEvent[], after: number): number {
  let lo = 0;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (events[mid]!.index <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A read view over fixed table maps, bounded at `index`. */
export class View implements StateReader {
  constructor(
    readonly index: number,
    protected readonly tables: ReadonlyMap<DataTable, ReadonlyMap<string, Row>>,
    protected readonly tableIndexes: ReadonlyMap<TableName, number>,
    private readonly eventLog: readonly StoreEvent[],
    /** Where the history starts when it holds no event (a store that loaded without history: its load index + 1). */
    private readonly historyStart = 0,
  ) {}

  get oldestEventIndex(): number {
    return this.eventLog[0]?.index ?? this.historyStart;
  }

  get<T extends DataTable>(table: T, key: string): TableRow<T> | undefined {
    return this.tables.get(table)?.get(key) as TableRow<T> | undefined;
  }

  list<T extends DataTable>(table: T, opts: ListOptions<TableRow<T>> = {}): TableRow<T>[] {
    return collect(this.tables.get(table) ?? NO_ROWS, opts);
  }

  tableIndex(table: TableName): number {
    return this.tableIndexes.get(table) ?? 0;
  }

  events(afterIndex: number, opts: { topics?: readonly DataTable[]; limit?: number } = {}): StoreEvent[] {
    const out: StoreEvent[] = [];
    const limit = opts.limit ?? Infinity;
    const topics = opts.topics && opts.topics.length > 0 ? new Set(opts.topics) : undefined;
    for (let i = firstAfter(this.eventLog, afterIndex); i < this.eventLog.length && out.length < limit; i++) {
      const e = this.eventLog[i]!;
      if (e.index > this.index) break;
      if (!topics || topics.has(e.topic)) out.push(e);
    }
    return out;
  }
}

/** The rows of a table that has none. */
const NO_ROWS: ReadonlyMap<string, Row> = new Map();

/**
 * The rows of `rows` that `opts` picks, sorted by key unless
 * `opts.unordered`. `overlay` (a write's own changes: the row, or null for a
 * delete) replaces the entries of its keys. Read with forEach, and a row
 * taken without a [key, row] pair unless the list is sorted: an evaluation
 * lists the 10,000 allocations of a large job once per part of its plan, and
 * an iterator's entry and result objects for each were much of what the
 * leader allocated while placing them.
 */
export function collect<R>(rows: ReadonlyMap<string, unknown>, opts: ListOptions<R>, overlay?: ReadonlyMap<string, unknown>): R[] {
  const { prefix, filter } = opts;
  const sorted = !opts.unordered;
  const picked: R[] = [];
  const pairs: Array<[string, R]> = [];
  const take = (row: unknown, key: string): void => {
    if (prefix !== undefined && !key.startsWith(prefix)) return;
    if (filter && !filter(row as R)) return;
    if (sorted) pairs.push([key, row as R]);
    else picked.push(row as R);
  };
  rows.forEach((row, key) => {
    if (!overlay?.has(key)) take(row, key);
  });
  overlay?.forEach((row, key) => {
    if (row !== null) take(row, key);
  });
  if (!sorted) return picked;
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return pairs.map(([, r]) => r);
}

/**
 * What JSON.parse(json) gives, where `json` is JSON.stringify(shape): the
 * same keys in the same order with the same values, but a field `kept` says
 * is taken as it is, neither parsed nor frozen again (see Txn.put: the very
 * object the row's stored version holds under that key, or a row this write
 * put). A status report spreads the stored row and replaces a few fields:
 * only those are read back from JSON. With nothing kept, or for a key
 * JSON.parse would treat apart (`__proto__`), the JSON is parsed.
 */
function parsedRow(json: string, shape: Record<string, unknown>, kept: ((k: string, v: unknown) => boolean) | undefined): Row {
  if (!kept) return JSON.parse(json) as Row;
  const body: Record<string, unknown> = {};
  for (const k of Object.keys(shape)) {
    if (k === '__proto__') return JSON.parse(json) as Row;
    const v = shape[k];
    if (typeof v === 'string' || typeof v === 'boolean' || v === null) body[k] = v;
    // As JSON writes numbers: -0 as 0, NaN and the infinities as null.
    else if (typeof v === 'number') body[k] = Number.isFinite(v) ? v + 0 : null;
    else if (typeof v === 'object' && kept(k, v)) body[k] = v;
    else {
      // An object of its own (or what JSON leaves out: undefined, functions, symbols; toJSON applied).
      const text = JSON.stringify(v);
      if (text !== undefined) body[k] = JSON.parse(text) as unknown;
    }
  }
  return body as Row;
}

/**
 * JSON.stringify(shape), with the fields `known` has JSON for written as
 * that JSON rather than serialized again. `known` holds only rows, which
 * are JSON data (no toJSON, which could read its key). Fields in
 * Object.keys order, undefined ones left out: as JSON.stringify writes them.
 */
function splicedJson(shape: Record<string, unknown>, known: WeakMap<object, string>): string {
  let parts = '';
  for (const k of Object.keys(shape)) {
    const v = shape[k];
    const text = (typeof v === 'object' && v !== null ? known.get(v) : undefined) ?? JSON.stringify(v);
    if (text !== undefined) parts += `${parts ? ',' : ''}${JSON.stringify(k)}:${text}`;
  }
  return `{${parts}}`;
}

/** What a write put or deleted so far, to go back to when a later step of it must not apply (see Txn.savepoint). */
export interface Savepoint {
  changes: Map<string, Change>;
  bytes: number;
}

/** The bytes a change adds to a write: its key, its row's JSON and its part's when that is sent, and what the store sends beside them (`framing`). */
function changeBytes(c: Change, framing: ((c: Change) => number) | undefined): number {
  return c.table.length + c.key.length + (c.json?.length ?? 0) + (c.part?.json?.length ?? 0) + (framing?.(c) ?? 0);
}

export class Txn extends View implements WriteTxn {
  readonly changes = new Map<string, Change>();
  /**
   * The JSON of each row this write put whole (no part apart), which is
   * JSON.stringify(row) since the row was parsed from it: a later row that
   * holds one (a job version holds its job) splices it in, and takes the
   * row itself, rather than serializing and parsing the job again.
   */
  readonly #rowJson = new WeakMap<object, string>();
  /** The bytes of every change so far (keys and rows' JSON): what the commit will send. */
  bytes = 0;

  constructor(
    readonly writeIndex: number,
    latest: number,
    tables: ReadonlyMap<DataTable, ReadonlyMap<string, Row>>,
    tableIndexes: ReadonlyMap<TableName, number>,
    eventLog: readonly StoreEvent[],
    /** Told of every read of committed state: a key (`get`) or a whole table (`list`, key undefined). */
    private readonly onRead?: (table: DataTable, key: string | undefined) => void,
    historyStart = 0,
    /** How many bytes of changes one commit may carry (undefined: no limit). */
    private readonly budget?: number,
    /** The field of a table's rows the store keeps apart (the etcd store's placement metrics): left out of the row's JSON. */
    private readonly detached?: (table: DataTable) => string | undefined,
    /** What the store's request carries for a change beyond its table, key and JSON (the etcd keys' prefixes, a part's key, each operation's framing): counted against `budget`. */
    private readonly framing?: (c: Change) => number,
  ) {
    super(latest, tables, tableIndexes, eventLog, historyStart);
  }

  get bytesLeft(): number | undefined {
    return this.budget === undefined ? undefined : this.budget - this.bytes;
  }

  /** The changes so far, to `restore` when what follows must not apply. */
  savepoint(): Savepoint {
    return { changes: new Map(this.changes), bytes: this.bytes };
  }

  restore(sp: Savepoint): void {
    this.changes.clear();
    for (const [k, v] of sp.changes) this.changes.set(k, v);
    this.bytes = sp.bytes;
  }

  override get<T extends DataTable>(table: T, key: string): TableRow<T> | undefined {
    const change = this.changes.get(`${table}\u0000${key}`);
    if (change) return (change.row ?? undefined) as TableRow<T> | undefined;
    this.onRead?.(table, key);
    return super.get(table, key);
  }

  override list<T extends DataTable>(table: T, opts: ListOptions<TableRow<T>> = {}): TableRow<T>[] {
    this.onRead?.(table, undefined);
    const committed = this.tables.get(table) ?? NO_ROWS;
    let mine: Map<string, Row | null> | undefined;
    for (const c of this.changes.values()) if (c.table === table) (mine ??= new Map()).set(c.key, c.row);
    // The committed rows this write did not change, then its own puts: no copy of the whole table.
    return collect(committed, opts, mine);
  }

  put<T extends DataTable>(table: T, input: RowInput<T>): TableRow<T> {
    const key = keyOf(table, input);
    const id = `${table}\u0000${key}`;
    const pending = this.changes.get(id);
    const before = pending ? pending.before : this.#committed(table, key);
    const current = pending ? (pending.row ?? undefined) : before;
    const createIndex = current?.createIndex ?? this.writeIndex;
    const field = this.detached?.(table);
    // A lazy part (a row copied with rowWith) is taken as it is, not read.
    const value = field === undefined ? undefined : (lazyPartOf(input) ?? (input as Record<string, unknown>)[field]);
    if (field === undefined || value === undefined) {
      const shape: Record<string, unknown> = { ...input, createIndex, modifyIndex: this.writeIndex };
      // A field holding a row this write put (a job version's job) is that row, its JSON spliced in.
      const holdsRow = this.#holdsRow(shape);
      const json = holdsRow ? splicedJson(shape, this.#rowJson) : JSON.stringify(shape);
      const row = deepFreeze(parsedRow(json, shape, current || holdsRow ? (k, v) => this.#kept(current, k, v) : undefined));
      this.#rowJson.set(row, json);
      this.#set(id, { table, key, row, json, before });
      return row as unknown as TableRow<T>;
    }
    // The part apart: the row's JSON leaves it out, and a part the row already had (the same
    // object or LazyPart, read from JSON when it was stored) is neither serialized, parsed nor
    // compared again; the row carries it as it is. A new part is serialized once and kept as
    // that JSON (LazyPart), decoded only if something reads it: a placement's metrics are sent
    // to etcd and seldom read again.
    const shape = copyWithout(input, field);
    shape['createIndex'] = createIndex;
    shape['modifyIndex'] = this.writeIndex;
    const json = JSON.stringify(shape);
    const held = partOf(current, field);
    const kept = held !== undefined && (held === value || (held instanceof LazyPart && held.gave(value)));
    const partJson = kept ? (pending ? pending.part?.json : undefined) : value instanceof LazyPart ? value.json() : JSON.stringify(value);
    const body = parsedRow(json, shape, current ? (k, v) => this.#kept(current, k, v) : undefined);
    if (!kept) defineLazyPart(body, new LazyPart(field, partJson as string));
    else if (held instanceof LazyPart) defineLazyPart(body, held);
    else body[field] = held;
    const row = freezeRow(body);
    this.#set(id, { table, key, row, json, before, part: { field, json: partJson } });
    return row as unknown as TableRow<T>;
  }

  delete(table: DataTable, key: string): boolean {
    const id = `${table}\u0000${key}`;
    const pending = this.changes.get(id);
    const before = pending ? pending.before : this.#committed(table, key);
    const current = pending ? pending.row : before;
    if (!current) return false;
    if (!before) this.#set(id, undefined);
    else this.#set(id, { table, key, row: null, json: null, before });
    return true;
  }

  /** Whether a field of `shape` holds a row this write put. */
  #holdsRow(shape: Record<string, unknown>): boolean {
    for (const k in shape) {
      const v = shape[k];
      if (typeof v === 'object' && v !== null && this.#rowJson.has(v)) return true;
    }
    return false;
  }

  /**
   * Whether a field's object is taken into a row as it is: the very object
   * (frozen, read from JSON) the row's stored version holds there, or a row
   * this write put (frozen, read from the JSON it is written as).
   */
  #kept(current: Row | undefined, k: string, v: unknown): boolean {
    return (current !== undefined && v === current[k] && Object.isFrozen(v)) || this.#rowJson.has(v as object);
  }

  #set(id: string, change: Change | undefined): void {
    const old = this.changes.get(id);
    if (old) this.bytes -= changeBytes(old, this.framing);
    if (change) {
      this.changes.set(id, change);
      this.bytes += changeBytes(change, this.framing);
    } else this.changes.delete(id);
  }

  #committed(table: DataTable, key: string): Row | undefined {
    this.onRead?.(table, key);
    return super.get(table, key) as Row | undefined;
  }
}
