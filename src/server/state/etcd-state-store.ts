import { Etcd3, type IKeyValue, type IRequestOp, type ICompare, type IWatchResponse, type Watcher } from 'etcd3';
import { describeError, silentLogger, type Logger } from '../../lib/index.js';
import { StateStoreError } from './errors.js';
import { etcdFailFast } from './etcd-client-options.js';
import { publicRow } from './keys.js';
import { deepFreeze, Txn, View, type Row } from './_store-view.js';
import { DATA_TABLES, type BlockOptions, type DataTable, type StateReader, type StateStore, type StoreEvent, type TableName, type WriteOptions, type WriteTxn } from './state-store.js';
import { TableWaiters } from './_table-waiters.js';
import { decodeRow, isTooLarge, isUnavailable, unavailable, watchedRow, type SentRows, MAX_TXN_OPS, nestOps, prefixEnd, tooLarge, TXN_LEVEL_OPS } from './_etcd-txn.js';
import type { EtcdStateStoreOptions, StoreFence } from './_etcd-options.js';

export type { EtcdStateStoreOptions, StoreFence } from './_etcd-options.js';

/** The layout version this code writes under `<prefix>/schema`. */
export const ETCD_SCHEMA_VERSION = 1;
const DEFAULT_EVENT_HISTORY = 10_000;
const DEFAULT_WRITE_TIMEOUT_MS = 5_000;
const DEFAULT_MAX_ATTEMPTS = 64;
/** How many revisions of etcd history this store lets accumulate before it compacts up to its oldest kept event. */
const COMPACT_EVERY = 10_000;
const RANGE_PAGE = 1_000;
/** At most this many queued writes go into one Txn. */
const MAX_BATCH_WRITES = 256;
/** A batch of queued writes stops growing past this many changes and reads. */
const MAX_BATCH_OPS = 1_000;
/** The bytes of changes one Txn carries at most: under etcd's default --max-request-bytes (1.5 MiB), with room for compares and markers. */
const DEFAULT_MAX_TXN_BYTES = 1024 * 1024;

interface PendingWrite {
  fn: (txn: WriteTxn) => unknown;
  resolve: (value: { index: number; result: unknown }) => void;
  reject: (err: unknown) => void;
}

interface TableState {
  rows: Map<string, Row>;
  /** Mod revision of each row (what a write compares). */
  revs: Map<string, number>;
  shared: boolean;
}

/**
 * The StateStore on etcd v3, for several servers sharing one state. Keys
 * under `prefix`: `rows/<table>/<key>` (the row as JSON, secrets included,
 * as SQLite keeps it; createIndex/modifyIndex are the key's create and mod
 * revisions, whatever the JSON says), `tables/<table>` (a marker every
 * write touching the table puts: its mod revision is the table index), `index` (put by every write:
 * its mod revision is the store index) and `schema`.
 *
 * Reads are served from an in-memory replica of the prefix, loaded by a
 * Range at one revision and kept current by a Watch from the next, so
 * snapshots, blocking reads and the event stream are synchronous and
 * event-driven. The index is the etcd revision: monotonic, but not
 * contiguous (other keys in the same etcd use revisions too).
 *
 * A server's writes are committed one etcd Txn at a time; the writes that
 * queue up meanwhile go together into the next Txn (group commit: they
 * share its revision as their index, each seeing the changes of those
 * before it). A write runs its function against the replica, recording what it read
 * (each key it got, each table it listed), and commits one Txn that
 * compares those keys' (and listed tables' markers') mod revisions with what
 * it saw. A failed compare means another writer got there first: the store
 * waits for its replica to see that write and runs the function again. The
 * promise resolves once the replica shows the write (read-your-writes).
 *
 * The event history is kept in memory (bounded like SQLite's) and starts
 * when the store opens: a reopened store has no events from before
 * (`oldestEventIndex` says so). The store compacts etcd's history behind
 * its oldest kept event.
 */
export class EtcdStateStore implements StateStore {
  readonly prefix: string;
  readonly #client: Etcd3;
  readonly #logger: Logger;
  readonly #eventHistory: number;
  readonly #writeTimeoutMs: number;
  readonly #maxAttempts: number;
  readonly #maxTxnBytes: number;
  readonly #fence: (() => StoreFence | undefined) | undefined;
  readonly #tables = new Map<DataTable, TableState>();
  readonly #blocked = new TableWaiters();
  /** The index of the last write that touched each table (owned by #blocked). */
  readonly #tableIndexes = this.#blocked.indexes;
  readonly #revisionWaiters = new Set<{ revision: number; resolve: () => void; reject: (err: Error) => void }>();
  #events: StoreEvent[] = [];
  #historyStart = 0;
  #index = 0;
  #watcher: Watcher | undefined;
  #watchConnected = false;
  #lastWriteFailed = false;
  #writing = false;
  readonly #pending: PendingWrite[] = [];
  #committing = false;
  #closed = false;
  #lastCompact = 0;
  #reloading: Promise<void> | undefined;
  /** The rows of the Txn in flight, as sent: the watch brings them back (see watchedRow). */
  #sent: SentRows | undefined;

  private constructor(opts: EtcdStateStoreOptions) {
    this.prefix = (opts.prefix ?? '/berth').replace(/\/+$/, '');
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'state-store', store: 'etcd' });
    this.#eventHistory = Math.max(1, opts.eventHistory ?? DEFAULT_EVENT_HISTORY);
    this.#writeTimeoutMs = opts.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS;
    this.#maxAttempts = Math.max(1, opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS);
    this.#maxTxnBytes = Math.max(64 * 1024, opts.maxTxnBytes ?? DEFAULT_MAX_TXN_BYTES);
    this.#fence = opts.fence;
    this.#client = new Etcd3({
      hosts: [...opts.endpoints],
      dialTimeout: this.#writeTimeoutMs,
      ...etcdFailFast,
    });
    for (const t of DATA_TABLES) this.#tables.set(t, { rows: new Map(), revs: new Map(), shared: false });
  }

  /**
   * Connects to etcd, loads the state under `prefix` and starts following
   * it. Throws StateStoreError STORE_UNAVAILABLE when etcd does not answer
   * within `writeTimeoutMs`, STORE_VERSION when a newer Berth wrote the
   * prefix, STORE_CORRUPT when a row is not valid JSON.
   */
  static async open(opts: EtcdStateStoreOptions): Promise<EtcdStateStore> {
    if (opts.endpoints.length === 0) throw new StateStoreError('STORE_UNAVAILABLE', 'no etcd endpoints given');
    const store = new EtcdStateStore(opts);
    try {
      await store.#load();
    } catch (err) {
      store.#client.close();
      throw err;
    }
    store.#logger.info({ endpoints: opts.endpoints, prefix: store.prefix, index: store.#index }, 'state loaded');
    return store;
  }

  #key(...parts: string[]): Buffer {
    return Buffer.from(`${this.prefix}/${parts.join('/')}`);
  }

  #rowKey(table: DataTable, key: string): Buffer {
    return this.#key('rows', table, key);
  }

  #callOptions(deadlineMs = this.#writeTimeoutMs): { deadline: Date } {
    return { deadline: new Date(Date.now() + deadlineMs) };
  }

  /**
   * Runs one etcd call, again on (likely) another endpoint while etcd answers
   * "unavailable" (a dead member, a member without leader), until `deadline`.
   * A retried Txn cannot apply twice unseen: if the first one was applied,
   * the compares of the retry fail and the write runs again on the new state.
   */
  async #retrying<T>(deadline: number, call: (left: number) => Promise<T>): Promise<T> {
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
  async #load(): Promise<void> {
    const start = Buffer.from(`${this.prefix}/`);
    const end = prefixEnd(start);
    let revision = 0;
    let from = start;
    const kvs: IKeyValue[] = [];
    const deadline = Date.now() + this.#writeTimeoutMs;
    try {
      for (;;) {
        const page = { key: from, range_end: end, limit: RANGE_PAGE, ...(revision ? { revision } : {}) };
        const res = await this.#retrying(deadline, (left) => this.#client.kv.range(page, this.#callOptions(left)));
        if (!revision) revision = Number(res.header.revision);
        kvs.push(...res.kvs);
        if (!res.more || res.kvs.length === 0) break;
        from = Buffer.concat([res.kvs[res.kvs.length - 1]!.key, Buffer.from([0])]);
      }
    } catch (err) {
      throw unavailable(`loading state from etcd`, err);
    }
    const tables = new Map<DataTable, TableState>();
    for (const t of DATA_TABLES) tables.set(t, { rows: new Map(), revs: new Map(), shared: false });
    const tableIndexes = new Map<TableName, number>();
    let index = 0;
    const rowsPrefix = `${this.prefix}/rows/`;
    const tablesPrefix = `${this.prefix}/tables/`;
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
        const rowKey = rest.slice(slash + 1);
        state.rows.set(rowKey, decodeRow(kv, key));
        state.revs.set(rowKey, Number(kv.mod_revision));
      }
    }
    tableIndexes.set('events', index);
    for (const [t, s] of tables) this.#tables.set(t, s);
    this.#tableIndexes.clear();
    for (const [t, i] of tableIndexes) this.#tableIndexes.set(t, i);
    // A reload (after compaction) keeps the events it has; a first load starts the history here.
    if (this.#events.length === 0) this.#historyStart = index + 1;
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
          await this.#load();
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
    let i = 0;
    const evs = res.events;
    while (i < evs.length) {
      const revision = Number(evs[i]!.kv.mod_revision);
      const touched = new Set<TableName>();
      const events: StoreEvent[] = [];
      let isWrite = false;
      for (; i < evs.length && Number(evs[i]!.kv.mod_revision) === revision; i++) {
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
          const state = this.#tables.get(table);
          if (!state) continue;
          const rowKey = rest.slice(slash + 1);
          if (state.shared) {
            state.rows = new Map(state.rows);
            state.revs = new Map(state.revs);
            state.shared = false;
          }
          if (ev.type === 'Put') {
            let row: Row;
            try {
              row = watchedRow(ev.kv, key, this.#sent);
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
            events.push(deepFreeze({ index: revision, seq: events.length, topic: table, key: rowKey, op: 'delete' as const, row: publicRow(table, before ?? null) }));
          }
        }
      }
      if (!isWrite && touched.size === 0 && events.length === 0) continue;
      touched.add('events');
      for (const t of touched) this.#tableIndexes.set(t, revision);
      this.#index = Math.max(this.#index, revision);
      this.#appendEvents(events);
      this.#blocked.wake([...touched], revision);
    }
    this.#settleRevisionWaiters();
  }

  #appendEvents(events: StoreEvent[]): void {
    if (events.length === 0) return;
    this.#events.push(...events);
    const excess = this.#events.length - this.#eventHistory;
    if (excess > this.#eventHistory / 4) this.#events.splice(0, excess);
    const oldest = this.#events[0]!.index;
    if (oldest - this.#lastCompact > COMPACT_EVERY) {
      this.#lastCompact = oldest;
      // Another server may have compacted further already: that is fine.
      this.#client.kv.compact({ revision: oldest - 1 }, this.#callOptions()).catch(() => undefined);
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
  #caughtUp(revision: number): Promise<void> {
    if (this.#index >= revision) return Promise.resolve();
    if (this.#closed) return Promise.reject(new StateStoreError('STORE_CLOSED', 'the state store was closed'));
    return new Promise((resolve, reject) => this.#revisionWaiters.add({ revision, resolve, reject }));
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * True when reads may lag the cluster: the watch that feeds them is down,
   * or the last write could not reach a quorum. Cleared when both recover.
   */
  get stale(): boolean {
    return !this.#watchConnected || this.#lastWriteFailed;
  }

  latestIndex(): number {
    return this.#index;
  }

  #maps(): Map<DataTable, ReadonlyMap<string, Row>> {
    const maps = new Map<DataTable, ReadonlyMap<string, Row>>();
    for (const [t, s] of this.#tables) maps.set(t, s.rows);
    return maps;
  }

  snapshot(): StateReader {
    this.#assertOpen();
    for (const s of this.#tables.values()) s.shared = true;
    return new View(this.#index, this.#maps(), new Map(this.#tableIndexes), this.#events, this.#historyStart);
  }

  /** `_opts`: etcd keeps no headroom of Berth's (its own quota is the operator's). */
  write<R>(fn: (txn: WriteTxn) => R, _opts?: WriteOptions): Promise<{ index: number; result: R }> {
    if (this.#closed) return Promise.reject(new StateStoreError('STORE_CLOSED', 'the state store is closed'));
    if (this.#writing) return Promise.reject(new StateStoreError('STORE_NESTED_WRITE', 'a state write was started inside another write'));
    return new Promise((resolve, reject) => {
      this.#pending.push({ fn: fn as (txn: WriteTxn) => unknown, resolve: resolve as PendingWrite['resolve'], reject });
      this.#pump();
    });
  }

  /**
   * Commits the queued writes: one etcd Txn at a time. The writes queued
   * while a Txn is in flight go into the next one together (group commit):
   * each runs against the view the ones before it left, and all of them get
   * that Txn's revision as their index.
   */
  #pump(): void {
    if (this.#committing || this.#pending.length === 0) return;
    this.#committing = true;
    const batch = this.#pending.splice(0, MAX_BATCH_WRITES);
    void this.#commitBatch(batch).finally(() => {
      this.#committing = false;
      this.#pump();
    });
  }

  async #commitBatch(batch: PendingWrite[]): Promise<void> {
    const deadline = Date.now() + this.#writeTimeoutMs;
    const fail = (err: Error, writes: PendingWrite[]): void => {
      for (const w of writes) w.reject(err);
    };
    for (let attempt = 1; ; attempt++) {
      if (this.#closed) return fail(new StateStoreError('STORE_CLOSED', 'the state store was closed'), batch);
      const keyReads = new Map<string, { table: DataTable; key: string; rev: number }>();
      const tableReads = new Map<DataTable, number>();
      const base = this.#maps();
      for (const s of this.#tables.values()) s.shared = true;
      const revsAt = new Map<DataTable, ReadonlyMap<string, number>>();
      for (const [t, s] of this.#tables) revsAt.set(t, s.revs);
      const tableIndexes = new Map(this.#tableIndexes);
      const txn = new Txn(
        this.#index + 1,
        this.#index,
        base,
        tableIndexes,
        this.#events,
        (table, key) => {
          if (key === undefined) tableReads.set(table, tableIndexes.get(table) ?? 0);
          else {
            const id = `${table}\u0000${key}`;
            if (!keyReads.has(id)) keyReads.set(id, { table, key, rev: revsAt.get(table)?.get(key) ?? 0 });
          }
        },
        this.#historyStart,
        this.#maxTxnBytes,
      );
      // Each write runs on the changes of the ones before it; one that throws leaves no change behind.
      const outcomes: Array<{ w: PendingWrite; ok: true; result: unknown } | { w: PendingWrite; ok: false; error: unknown }> = [];
      let taken = 0;
      for (const w of batch) {
        if (taken > 0 && txn.changes.size + keyReads.size + tableReads.size > MAX_BATCH_OPS) break;
        const saved = txn.savepoint();
        this.#writing = true;
        try {
          const result = w.fn(txn);
          if (result && typeof (result as { then?: unknown }).then === 'function') {
            throw new StateStoreError('STORE_ASYNC_WRITE', 'a state write function must be synchronous; it returned a promise');
          }
          if (taken > 0 && txn.bytes > this.#maxTxnBytes) {
            // It would make this Txn too large: it goes first into the next one, on its own if need be.
            txn.restore(saved);
            break;
          }
          outcomes.push({ w, ok: true, result });
        } catch (error) {
          txn.restore(saved);
          outcomes.push({ w, ok: false, error });
        } finally {
          this.#writing = false;
        }
        taken++;
      }
      if (taken < batch.length) {
        // Too big for one Txn: the rest go first into the next one.
        this.#pending.unshift(...batch.slice(taken));
        batch = batch.slice(0, taken);
      }
      const settle = (index: number): void => {
        for (const o of outcomes) {
          if (o.ok) o.w.resolve({ index, result: o.result });
          else o.w.reject(o.error as Error);
        }
      };
      if (txn.changes.size === 0) return settle(this.#index);

      if (keyReads.size + tableReads.size > TXN_LEVEL_OPS - 1) {
        // Too many keys to compare one by one: compare their tables' markers (any change to the table moves it).
        for (const r of keyReads.values()) if (!tableReads.has(r.table)) tableReads.set(r.table, tableIndexes.get(r.table) ?? 0);
        keyReads.clear();
      }
      const compare: ICompare[] = [];
      for (const r of keyReads.values()) compare.push({ key: this.#rowKey(r.table, r.key), target: 'Mod', result: 'Equal', mod_revision: r.rev });
      for (const [t, rev] of tableReads) compare.push({ key: this.#key('tables', t), target: 'Mod', result: 'Equal', mod_revision: rev });
      const fence = this.#fence?.();
      if (fence) compare.push({ key: Buffer.from(fence.key), target: 'Create', result: 'Equal', create_revision: fence.createRevision });
      const success: IRequestOp[] = [];
      const touched = new Set<DataTable>();
      const sent: SentRows = new Map();
      for (const c of txn.changes.values()) {
        touched.add(c.table);
        if (c.row) {
          // The JSON the write made (its createIndex and modifyIndex are ignored when read: the key's revisions are).
          const key = this.#rowKey(c.table, c.key);
          const value = Buffer.from(c.json ?? JSON.stringify(c.row));
          success.push({ request_put: { key, value } });
          sent.set(key.toString(), { value, row: c.row });
        } else {
          success.push({ request_delete_range: { key: this.#rowKey(c.table, c.key) } });
        }
      }
      for (const t of touched) success.push({ request_put: { key: this.#key('tables', t), value: Buffer.alloc(0) } });
      success.push({ request_put: { key: this.#key('index'), value: Buffer.alloc(0) } });
      success.push({ request_put: { key: this.#key('schema'), value: Buffer.from(String(ETCD_SCHEMA_VERSION)) } });
      const failure: IRequestOp[] = [{ request_range: { key: this.#key('index') } }];
      if (fence) failure.push({ request_range: { key: Buffer.from(fence.key) } });
      if (success.length > TXN_LEVEL_OPS) {
        try {
          success.splice(0, success.length, ...nestOps(success, MAX_TXN_OPS, Math.max(compare.length, failure.length)));
        } catch (err) {
          return fail(err as Error, batch);
        }
      }

      const left = deadline - Date.now();
      if (left <= 0) return fail(unavailable('committing a write', new Error(`no commit within ${this.#writeTimeoutMs} ms`)), batch);
      let res;
      this.#sent = sent;
      try {
        res = await this.#retrying(deadline, (ms) => this.#client.kv.txn({ compare, success, failure }, this.#callOptions(Math.min(ms, left))));
      } catch (err) {
        this.#sent = undefined;
        if (!this.#lastWriteFailed) this.#logger.warn({ err: describeError(err) }, 'state write failed: etcd unavailable');
        this.#lastWriteFailed = true;
        if (isUnavailable(err)) return fail(unavailable('committing a write', err), batch);
        if (isTooLarge(err)) return fail(tooLarge(err, txn.changes.size, txn.bytes), batch);
        return fail(new StateStoreError('STORE_IO', `state write failed: ${describeError(err)}`, { cause: err }), batch);
      }
      this.#lastWriteFailed = false;
      if (res.succeeded) {
        const index = Number(res.header.revision);
        try {
          await this.#caughtUp(index);
        } catch (err) {
          return fail(err as Error, batch);
        } finally {
          this.#sent = undefined;
        }
        return settle(index);
      }
      this.#sent = undefined;
      if (fence) {
        const kv = res.responses[1]?.response_range?.kvs[0];
        if (!kv || kv.create_revision !== String(fence.createRevision)) {
          return fail(new StateStoreError('STORE_FENCED', `this server lost its right to write (fence key ${fence.key} is gone or was re-created); nothing was applied`), batch);
        }
      }
      if (attempt >= this.#maxAttempts) {
        return fail(new StateStoreError('STORE_CONFLICT', `a state write kept conflicting with other writers (${attempt} attempts); nothing was applied`), batch);
      }
      const latest = Number(res.responses[0]?.response_range?.kvs[0]?.mod_revision ?? 0);
      try {
        await this.#caughtUp(latest);
      } catch (err) {
        return fail(err as Error, batch);
      }
    }
  }

  /** After a reload: wake every waiter whose tables moved. */
  #wakeAll(): void {
    this.#blocked.wakeAll();
    this.#settleRevisionWaiters();
  }

  blockUntil(tables: readonly TableName[], afterIndex: number, opts: BlockOptions = {}): Promise<number> {
    if (this.#closed) return Promise.reject(new StateStoreError('STORE_CLOSED', 'the state store is closed'));
    return this.#blocked.block(tables, afterIndex, opts);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#blocked.closeAll();
    for (const w of this.#revisionWaiters) w.reject(new StateStoreError('STORE_CLOSED', 'the state store was closed'));
    for (const w of this.#pending.splice(0)) w.reject(new StateStoreError('STORE_CLOSED', 'the state store was closed'));
    this.#revisionWaiters.clear();
    const watcher = this.#watcher;
    this.#watcher = undefined;
    void (watcher ? watcher.cancel().catch(() => undefined) : Promise.resolve()).finally(() => this.#client.close());
    this.#logger.info({ prefix: this.prefix }, 'state closed');
  }

  #assertOpen(): void {
    if (this.#closed) throw new StateStoreError('STORE_CLOSED', 'the state store is closed');
  }
}
