// The etcd StateStore's in-memory replica of its prefix: loaded by a Range
// at one revision, kept current by a Watch from the next (reloaded when that
// start was compacted), each watched revision applied as one write with its
// events, blocked readers woken and etcd's history compacted behind the
// oldest kept event. The store (etcd-state-store.ts) reads it and commits
// its Txns against it. Private to src/server/state.

import { ForkableMap } from './_forkable-map.js';
import type { Etcd3, IKeyValue, IWatchResponse, Watcher } from 'etcd3';
import { describeError, type Logger } from '../../lib/index.js';
import { StateStoreError } from './errors.js';
import { publicRow } from './keys.js';
import { deepFreeze, trimEventHistory, type Row } from './_store-view.js';
import { DATA_TABLES, type DataTable, type StoreEvent, type TableName } from './state-store.js';
import { TableWaiters } from './_table-waiters.js';
import { decodeJson, decodeRow, isUnavailable, unavailable, watchedRow, type SentRows, prefixEnd } from './_etcd-txn.js';
import { LazyPart, partOf } from './_lazy-part.js';
import { detachedField, parsePartKey } from './_etcd-row-parts.js';

/** The layout version this code writes under `<prefix>/schema`. */
export const ETCD_SCHEMA_VERSION = 1;
/** How many revisions of etcd history this store lets accumulate before it compacts up to its oldest kept event. */
const COMPACT_EVERY = 10_000;
const RANGE_PAGE = 1_000;

export interface TableState {
  rows: ForkableMap<Row>;
  /** Mod revision of each row (what a write compares). */
  revs: ForkableMap<number>;
  shared: boolean;
}

export interface EtcdReplicaOptions {
  client: Etcd3;
  prefix: string;
  logger: Logger;
  eventHistory: number;
  writeTimeoutMs: number;
}

/**
 * The rows, table indexes, store index and event history of one etcd
 * prefix as this server has seen them, with the waiters on them.
 */
export class EtcdReplica {
  readonly prefix: string;
  readonly #client: Etcd3;
  readonly #logger: Logger;
  readonly #eventHistory: number;
  readonly #writeTimeoutMs: number;
  readonly tables = new Map<DataTable, TableState>();
  readonly blocked = new TableWaiters();
  /** The index of the last write that touched each table (owned by blocked). */
  readonly tableIndexes = this.blocked.indexes;
  readonly #revisionWaiters = new Set<{ revision: number; resolve: () => void; reject: (err: Error) => void }>();
  #events: StoreEvent[] = [];
  /** Per table, the row keys whose detached part (_etcd-row-parts.ts) has a key in etcd: what the writer need not send again. */
  #parts = new Map<DataTable, Set<string>>();
  #historyStart = 0;
  #index = 0;
  #watcher: Watcher | undefined;
  #watchConnected = false;
  #closed = false;
  #lastCompact = 0;
  #reloading: Promise<void> | undefined;
  /** The rows of the Txn in flight, as sent: the watch brings them back (see watchedRow). */
  sent: SentRows | undefined;

  constructor(opts: EtcdReplicaOptions) {
    this.prefix = opts.prefix;
    this.#client = opts.client;
    this.#logger = opts.logger;
    this.#eventHistory = opts.eventHistory;
    this.#writeTimeoutMs = opts.writeTimeoutMs;
    for (const t of DATA_TABLES) this.tables.set(t, { rows: new ForkableMap(), revs: new ForkableMap(), shared: false });
  }

  get index(): number {
    return this.#index;
  }

  get events(): StoreEvent[] {
    return this.#events;
  }

  get historyStart(): number {
    return this.#historyStart;
  }

  get watchConnected(): boolean {
    return this.#watchConnected;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Whether etcd holds a part of row `key` of `table` apart (_etcd-row-parts.ts); the row then carries it as that key has it. */
  holdsPart(table: DataTable, key: string): boolean {
    return this.#parts.get(table)?.has(key) ?? false;
  }

  #heldParts(table: DataTable): Set<string> {
    return partKeysOf(this.#parts, table);
  }

  callOptions(deadlineMs = this.#writeTimeoutMs): { deadline: Date } {
    return { deadline: new Date(Date.now() + deadlineMs) };
  }

  /**
   * Runs one etcd call, again on (likely) another endpoint while etcd answers
   * "unavailable" (a dead member, a member without leader), until `deadline`.
   * A retried Txn cannot apply twice unseen: if the first one was applied,
   * the compares of the retry fail and the write runs again on the new state.
   */
  async retrying<T>(deadline: number, call: (left: number) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call(Math.max(1, deadline - Date.now()));
      } catch (err) {
        const pause = 25 * 2 ** Math.min(attempt, 4);
        if (!isUnavailable(err) || this.#closed || Date.now() + pause >= deadline) throw err;
        await new Promise((r) => setTimeout(r, pause));
      }
    }
  }

  /** Range of the whole prefix at one revision (paged), then a watch from the next. */
  async load(): Promise<void> {
    const start = Buffer.from(`${this.prefix}/`);
    const end = prefixEnd(start);
    let revision = 0;
    let from = start;
    const kvs: IKeyValue[] = [];
    const deadline = Date.now() + this.#writeTimeoutMs;
    try {
      for (;;) {
        const page = { key: from, range_end: end, limit: RANGE_PAGE, ...(revision ? { revision } : {}) };
        const res = await this.retrying(deadline, (left) => this.#client.kv.range(page, this.callOptions(left)));
        if (!revision) revision = Number(res.header.revision);
        kvs.push(...res.kvs);
        if (!res.more || res.kvs.length === 0) break;
        from = Buffer.concat([res.kvs[res.kvs.length - 1]!.key, Buffer.from([0])]);
      }
    } catch (err) {
      throw unavailable(`loading state from etcd`, err);
    }
    const tables = new Map<DataTable, TableState>();
    for (const t of DATA_TABLES) tables.set(t, { rows: new ForkableMap(), revs: new ForkableMap(), shared: false });
    const tableIndexes = new Map<TableName, number>();
    let index = 0;
    const rowsPrefix = `${this.prefix}/rows/`;
    const tablesPrefix = `${this.prefix}/tables/`;
    const partsPrefix = `${this.prefix}/parts/`;
    // Rows' detached parts first, by table and row key: each row takes its own back.
    const parts = new Map<string, IKeyValue>();
    for (const kv of kvs) {
      const key = kv.key.toString();
      const p = key.startsWith(partsPrefix) ? parsePartKey(key.slice(partsPrefix.length)) : undefined;
      if (p) parts.set(`${p.table}\u0000${p.key}`, kv);
    }
    const held = new Map<DataTable, Set<string>>();
    for (const kv of kvs) {
      const key = kv.key.toString();
      if (key === `${this.prefix}/schema`) {
        const version = Number(kv.value.toString());
        if (version > ETCD_SCHEMA_VERSION) {
          throw new StateStoreError('STORE_VERSION', `etcd prefix ${this.prefix} has layout version ${version}, newer than this Berth understands (${ETCD_SCHEMA_VERSION}); upgrade Berth`);
        }
      } else if (key === `${this.prefix}/index`) {
        index = Number(kv.mod_revision);
      } else if (key.startsWith(tablesPrefix)) {
        tableIndexes.set(key.slice(tablesPrefix.length) as TableName, Number(kv.mod_revision));
      } else if (key.startsWith(rowsPrefix)) {
        const rest = key.slice(rowsPrefix.length);
        const slash = rest.indexOf('/');
        const state = tables.get(rest.slice(0, slash) as DataTable);
        if (!state) continue;
        const table = rest.slice(0, slash) as DataTable;
        const rowKey = rest.slice(slash + 1);
        const field = detachedField(table);
        const part = field === undefined ? undefined : parts.get(`${table}\u0000${rowKey}`);
        if (part) partKeysOf(held, table).add(rowKey);
        state.rows.set(rowKey, decodeRow(kv, key, part ? { field: field as string, value: () => new LazyPart(field as string, part.value.toString()) } : undefined));
        state.revs.set(rowKey, Number(kv.mod_revision));
      }
    }
    this.#parts = held;
    tableIndexes.set('events', index);
    for (const [t, s] of tables) this.tables.set(t, s);
    this.tableIndexes.clear();
    for (const [t, i] of tableIndexes) this.tableIndexes.set(t, i);
    // The history starts here, on a first load and on a reload alike: a reload follows a watch
    // that missed revisions (compacted away), whose events are unknown, so the events kept from
    // before would tell a reader who follows the history (a cache kept current from it, the event
    // stream) that nothing happened in between. A new array: snapshots taken before keep theirs.
    this.#events = [];
    this.#historyStart = index + 1;
    const before = this.#index;
    this.#index = Math.max(this.#index, index);
    await this.#watch(revision + 1);
    if (before !== 0) this.#wakeAll();
  }

  async #watch(fromRevision: number): Promise<void> {
    const old = this.#watcher;
    this.#watcher = undefined;
    if (old) void old.cancel().catch(() => undefined);
    const watcher = this.#client.watch().prefix(`${this.prefix}/`).startRevision(String(fromRevision)).watcher();
    this.#watcher = watcher;
    watcher.on('data', (res: IWatchResponse) => {
      if (this.#watcher === watcher) this.#apply(res);
    });
    watcher.on('connected', () => {
      if (this.#watcher !== watcher) return;
      if (!this.#watchConnected) this.#logger.info({ index: this.#index }, 'state watch connected');
      this.#watchConnected = true;
    });
    watcher.on('disconnected', (err: Error) => {
      if (this.#watcher !== watcher) return;
      if (this.#watchConnected) this.#logger.warn({ err: describeError(err) }, 'state watch disconnected; reads may be stale until it resumes');
      this.#watchConnected = false;
    });
    watcher.on('error', (err: Error) => {
      if (this.#watcher !== watcher || this.#closed) return;
      // A cancelled watch (its start revision was compacted): load the state again.
      this.#watchConnected = false;
      this.#logger.warn({ err: describeError(err) }, 'state watch cancelled; reloading the state');
      this.#reload();
    });
    const connected = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(unavailable('starting the state watch', new Error('no answer'))), this.#writeTimeoutMs);
      watcher.once('connected', () => {
        clearTimeout(timer);
        resolve();
      });
      watcher.once('error', (err: Error) => {
        clearTimeout(timer);
        reject(unavailable('starting the state watch', err));
      });
    });
    await connected;
  }

  #reload(): void {
    if (this.#reloading || this.#closed) return;
    this.#reloading = (async () => {
      for (let attempt = 0; !this.#closed; attempt++) {
        try {
          await this.load();
          return;
        } catch (err) {
          this.#logger.warn({ err: describeError(err), attempt }, 'state reload failed; retrying');
          await new Promise((r) => setTimeout(r, Math.min(5_000, 100 * 2 ** attempt)).unref());
        }
      }
    })().finally(() => (this.#reloading = undefined));
  }

  /** Applies one watch response: every revision in it, in order, each as one write. */
  #apply(res: IWatchResponse): void {
    if (this.#closed) return;
    const rowsPrefix = `${this.prefix}/rows/`;
    const tablesPrefix = `${this.prefix}/tables/`;
    const partsPrefix = `${this.prefix}/parts/`;
    let i = 0;
    const evs = res.events;
    while (i < evs.length) {
      const revision = Number(evs[i]!.kv.mod_revision);
      let end = i;
      while (end < evs.length && Number(evs[end]!.kv.mod_revision) === revision) end++;
      const touched = new Set<TableName>();
      const events: StoreEvent[] = [];
      let isWrite = false;
      // The rows' detached parts this revision put (their key-value) or deleted (null), by table and row key.
      const parts = new Map<string, { table: DataTable; field: string; key: string; kv: IKeyValue | null }>();
      for (let j = i; j < end; j++) {
        const ev = evs[j]!;
        const key = ev.kv.key.toString();
        const p = key.startsWith(partsPrefix) ? parsePartKey(key.slice(partsPrefix.length)) : undefined;
        if (p) parts.set(`${p.table}\u0000${p.key}`, { ...p, kv: ev.type === 'Put' ? ev.kv : null });
      }
      for (; i < end; i++) {
        const ev = evs[i]!;
        const key = ev.kv.key.toString();
        if (key === `${this.prefix}/index`) {
          isWrite = true;
        } else if (key.startsWith(tablesPrefix)) {
          touched.add(key.slice(tablesPrefix.length) as TableName);
        } else if (key.startsWith(rowsPrefix)) {
          const rest = key.slice(rowsPrefix.length);
          const slash = rest.indexOf('/');
          const table = rest.slice(0, slash) as DataTable;
          const state = this.#writable(table);
          if (!state) continue;
          const rowKey = rest.slice(slash + 1);
          const field = detachedField(table);
          const id = `${table}\u0000${rowKey}`;
          if (ev.type === 'Put') {
            let row: Row;
            try {
              // A row whose part did not change this revision keeps the one it had (looked up only then: a
              // row's JSON that carries its part, or a part sent with it, needs no lookup of the old row).
              const changed = parts.get(id);
              const part = field === undefined ? undefined : { field, value: () => (changed ? (changed.kv ? new LazyPart(field, changed.kv.value.toString()) : undefined) : this.holdsPart(table, rowKey) ? partOf(state.rows.get(rowKey), field) : undefined) };
              row = watchedRow(ev.kv, key, this.sent, part);
            } catch (err) {
              this.#logger.error({ err: describeError(err), key }, 'skipping an unreadable row');
              continue;
            }
            state.rows.set(rowKey, row);
            state.revs.set(rowKey, revision);
            events.push(deepFreeze({ index: revision, seq: events.length, topic: table, key: rowKey, op: 'put' as const, row: publicRow(table, row) }));
          } else {
            const before = state.rows.get(rowKey);
            state.rows.delete(rowKey);
            state.revs.delete(rowKey);
            if (field !== undefined) this.#heldParts(table).delete(rowKey);
            events.push(deepFreeze({ index: revision, seq: events.length, topic: table, key: rowKey, op: 'delete' as const, row: publicRow(table, before ?? null) }));
          }
          const p = parts.get(id);
          if (p) {
            parts.delete(id);
            if (p.kv && ev.type === 'Put') this.#heldParts(table).add(rowKey);
            else this.#heldParts(table).delete(rowKey);
          }
        }
      }
      // A part changed without its row (this store's writer always writes them together): the row changes with it.
      for (const p of parts.values()) this.#applyLonePart(p, revision, events, touched);
      if (!isWrite && touched.size === 0 && events.length === 0) continue;
      touched.add('events');
      for (const t of touched) this.tableIndexes.set(t, revision);
      this.#index = Math.max(this.#index, revision);
      this.#appendEvents(events);
      // With the revision's events: a reader scoped to a few rows sleeps through writes to others.
      this.blocked.wake([...touched], revision, events);
    }
    this.#settleRevisionWaiters();
  }

  /** `table`'s state, ready to change: a snapshot holds the current maps, so change forks of them (a bucket copied per change, not the table). */
  #writable(table: DataTable): TableState | undefined {
    const state = this.tables.get(table);
    if (state?.shared) {
      state.rows = state.rows.fork();
      state.revs = state.revs.fork();
      state.shared = false;
    }
    return state;
  }

  /** A row's part put or deleted at `revision` with no change of the row's own key: the row as it is with that part. */
  #applyLonePart(p: { table: DataTable; field: string; key: string; kv: IKeyValue | null }, revision: number, events: StoreEvent[], touched: Set<TableName>): void {
    if (p.kv) this.#heldParts(p.table).add(p.key);
    else this.#heldParts(p.table).delete(p.key);
    const state = this.#writable(p.table);
    const before = state?.rows.get(p.key);
    if (!state || !before) return;
    let value: unknown;
    try {
      value = p.kv ? decodeJson(p.kv, p.kv.key.toString()) : undefined;
    } catch (err) {
      this.#logger.error({ err: describeError(err), key: p.key }, 'skipping an unreadable row part');
      return;
    }
    const { [p.field]: _old, ...rest } = before;
    const row = deepFreeze({ ...rest, ...(value === undefined ? {} : { [p.field]: value }), modifyIndex: revision }) as Row;
    state.rows.set(p.key, row);
    touched.add(p.table);
    events.push(deepFreeze({ index: revision, seq: events.length, topic: p.table, key: p.key, op: 'put' as const, row: publicRow(p.table, row) }));
  }

  #appendEvents(events: StoreEvent[]): void {
    if (events.length === 0) return;
    this.#events.push(...events);
    trimEventHistory(this.#events, this.#eventHistory);
    const oldest = this.#events[0]!.index;
    if (oldest - this.#lastCompact > COMPACT_EVERY) {
      this.#lastCompact = oldest;
      // Another server may have compacted further already: that is fine.
      this.#client.kv.compact({ revision: oldest - 1 }, this.callOptions()).catch(() => undefined);
    }
  }

  #settleRevisionWaiters(): void {
    for (const w of this.#revisionWaiters) {
      if (this.#index >= w.revision) {
        this.#revisionWaiters.delete(w);
        w.resolve();
      }
    }
  }

  /** Resolves once the replica has applied `revision`; rejects when the store closes. */
  caughtUp(revision: number): Promise<void> {
    if (this.#index >= revision) return Promise.resolve();
    if (this.#closed) return Promise.reject(new StateStoreError('STORE_CLOSED', 'the state store was closed'));
    return new Promise((resolve, reject) => this.#revisionWaiters.add({ revision, resolve, reject }));
  }

  /** After a reload: wake every waiter whose tables moved. */
  #wakeAll(): void {
    this.blocked.wakeAll();
    this.#settleRevisionWaiters();
  }

  /** Closes the replica: its waiters are told, the watch ends and then the client. */
  close(): void {
    this.#closed = true;
    this.blocked.closeAll();
    for (const w of this.#revisionWaiters) w.reject(new StateStoreError('STORE_CLOSED', 'the state store was closed'));
    this.#revisionWaiters.clear();
    const watcher = this.#watcher;
    this.#watcher = undefined;
    void (watcher ? watcher.cancel().catch(() => undefined) : Promise.resolve()).finally(() => this.#client.close());
  }
}

/** The row keys of `table` whose part etcd holds apart, in `parts` (made on first use). */
function partKeysOf(parts: Map<DataTable, Set<string>>, table: DataTable): Set<string> {
  let keys = parts.get(table);
  if (!keys) parts.set(table, (keys = new Set()));
  return keys;
}
