import { isDeepStrictEqual } from 'node:util';
import { Etcd3, type IRequestOp, type ICompare } from 'etcd3';
import { describeError, silentLogger, type Logger } from '../../lib/index.js';
import { StateStoreError } from './errors.js';
import { etcdFailFast } from './etcd-client-options.js';
import { Txn, View, type Change, type Row } from './_store-view.js';
import { type BlockOptions, type DataTable, type StateReader, type StateStore, type TableName, type WriteOptions, type WriteTxn } from './state-store.js';
import { isTooLarge, isUnavailable, unavailable, type SentRows, MAX_TXN_OPS, nestOps, tooLarge, TXN_LEVEL_OPS } from './_etcd-txn.js';
import { ETCD_SCHEMA_VERSION, EtcdReplica } from './_etcd-replica.js';
import { detachedField, partKey } from './_etcd-row-parts.js';
import { partJsonOf, partOf } from './_lazy-part.js';
import type { EtcdStateStoreOptions, StoreFence } from './_etcd-options.js';

export type { EtcdStateStoreOptions, StoreFence } from './_etcd-options.js';
export { ETCD_SCHEMA_VERSION } from './_etcd-replica.js';

const DEFAULT_EVENT_HISTORY = 10_000;
const DEFAULT_WRITE_TIMEOUT_MS = 5_000;
const DEFAULT_MAX_ATTEMPTS = 64;
/** At most this many queued writes go into one Txn. */
const MAX_BATCH_WRITES = 256;
/** A batch of queued writes stops growing past this many changes and reads. */
const MAX_BATCH_OPS = 1_000;
/**
 * The bytes one Txn carries at most, keys and framing counted (see #framing): under etcd's default
 * --max-request-bytes (1.5 MiB), with room for the compares, the markers and the nesting of operations.
 */
const DEFAULT_MAX_TXN_BYTES = 1408 * 1024;
/** A row key's bytes beyond its table and key: `/rows/` and `/` after the prefix. */
const ROW_KEY_EXTRA = '/rows//'.length;
/** Per operation of a Txn, the bytes of its framing in the request (the operation's, its key's and its value's tags and lengths), rounded up. */
const OP_FRAMING = 16;

interface PendingWrite {
  fn: (txn: WriteTxn) => unknown;
  resolve: (value: { index: number; result: unknown }) => void;
  reject: (err: unknown) => void;
}

/**
 * The StateStore on etcd v3, for several servers sharing one state. Keys
 * under `prefix`: `rows/<table>/<key>` (the row as JSON, secrets included,
 * as SQLite keeps it; createIndex/modifyIndex are the key's create and mod
 * revisions, whatever the JSON says), `parts/<table>/<field>/<key>` (a
 * row's part written apart, only when it changes: an allocation's placement
 * metrics, see _etcd-row-parts.ts; the row's own JSON then leaves it out),
 * `tables/<table>` (a marker every
 * write touching the table puts: its mod revision is the table index), `index` (put by every write:
 * its mod revision is the store index) and `schema`.
 *
 * Reads are served from an in-memory replica of the prefix (EtcdReplica,
 * _etcd-replica.ts), loaded by a
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
  readonly #writeTimeoutMs: number;
  readonly #maxAttempts: number;
  readonly #maxTxnBytes: number;
  readonly #fence: (() => StoreFence | undefined) | undefined;
  /** The rows, indexes and events as this server has seen them. */
  readonly #replica: EtcdReplica;
  #lastWriteFailed = false;
  #writing = false;
  readonly #pending: PendingWrite[] = [];
  #committing = false;

  private constructor(opts: EtcdStateStoreOptions) {
    this.prefix = (opts.prefix ?? '/berth').replace(/\/+$/, '');
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'state-store', store: 'etcd' });
    this.#writeTimeoutMs = opts.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS;
    this.#maxAttempts = Math.max(1, opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS);
    this.#maxTxnBytes = Math.max(64 * 1024, opts.maxTxnBytes ?? DEFAULT_MAX_TXN_BYTES);
    this.#fence = opts.fence;
    this.#client = new Etcd3({
      hosts: [...opts.endpoints],
      dialTimeout: this.#writeTimeoutMs,
      ...etcdFailFast,
    });
    this.#replica = new EtcdReplica({
      client: this.#client,
      prefix: this.prefix,
      logger: this.#logger,
      eventHistory: Math.max(1, opts.eventHistory ?? DEFAULT_EVENT_HISTORY),
      writeTimeoutMs: this.#writeTimeoutMs,
    });
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
      await store.#replica.load();
    } catch (err) {
      store.#client.close();
      throw err;
    }
    store.#logger.info({ endpoints: opts.endpoints, prefix: store.prefix, index: store.#replica.index }, 'state loaded');
    return store;
  }

  #key(...parts: string[]): Buffer {
    return Buffer.from(`${this.prefix}/${parts.join('/')}`);
  }

  /**
   * What a Txn sends for a change beyond its table, key and JSON (see
   * Txn's `framing`): the row key's prefix, the part's key when its JSON is
   * sent, and each operation's framing. Counted, a write may fill etcd's
   * request limit: uncounted, some 100 bytes an allocation, a third of
   * the limit had to be kept as a margin.
   */
  readonly #framing = (c: Change): number => {
    const row = this.prefix.length + ROW_KEY_EXTRA + OP_FRAMING;
    return c.part?.json === undefined ? row : row + partKey(this.prefix, c.table, c.part.field, c.key).length + OP_FRAMING;
  };

  #rowKey(table: DataTable, key: string): Buffer {
    return this.#key('rows', table, key);
  }

  get closed(): boolean {
    return this.#replica.closed;
  }

  /**
   * True when reads may lag the cluster: the watch that feeds them is down,
   * or the last write could not reach a quorum. Cleared when both recover.
   */
  get stale(): boolean {
    return !this.#replica.watchConnected || this.#lastWriteFailed;
  }

  latestIndex(): number {
    return this.#replica.index;
  }

  #maps(): Map<DataTable, ReadonlyMap<string, Row>> {
    const maps = new Map<DataTable, ReadonlyMap<string, Row>>();
    for (const [t, s] of this.#replica.tables) maps.set(t, s.rows);
    return maps;
  }

  snapshot(): StateReader {
    this.#assertOpen();
    for (const s of this.#replica.tables.values()) s.shared = true;
    return new View(this.#replica.index, this.#maps(), new Map(this.#replica.tableIndexes), this.#replica.events, this.#replica.historyStart);
  }

  /** `_opts`: etcd keeps no headroom of Berth's (its own quota is the operator's). */
  write<R>(fn: (txn: WriteTxn) => R, _opts?: WriteOptions): Promise<{ index: number; result: R }> {
    if (this.#replica.closed) return Promise.reject(new StateStoreError('STORE_CLOSED', 'the state store is closed'));
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
      if (this.#replica.closed) return fail(new StateStoreError('STORE_CLOSED', 'the state store was closed'), batch);
      const keyReads = new Map<string, { table: DataTable; key: string; rev: number }>();
      const tableReads = new Map<DataTable, number>();
      const base = this.#maps();
      for (const s of this.#replica.tables.values()) s.shared = true;
      const revsAt = new Map<DataTable, ReadonlyMap<string, number>>();
      for (const [t, s] of this.#replica.tables) revsAt.set(t, s.revs);
      const tableIndexes = new Map(this.#replica.tableIndexes);
      const txn = new Txn(
        this.#replica.index + 1,
        this.#replica.index,
        base,
        tableIndexes,
        this.#replica.events,
        (table, key) => {
          if (key === undefined) tableReads.set(table, tableIndexes.get(table) ?? 0);
          else {
            const id = `${table}\u0000${key}`;
            if (!keyReads.has(id)) keyReads.set(id, { table, key, rev: revsAt.get(table)?.get(key) ?? 0 });
          }
        },
        this.#replica.historyStart,
        this.#maxTxnBytes,
        detachedField,
        this.#framing,
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
      if (txn.changes.size === 0) return settle(this.#replica.index);

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
          // The JSON the write made, without the part kept apart (its createIndex and modifyIndex are ignored when read: the key's revisions are).
          const key = this.#rowKey(c.table, c.key);
          const value = Buffer.from(c.json ?? JSON.stringify(c.row));
          success.push({ request_put: { key, value } });
          sent.set(key.toString(), { value, row: c.row });
        } else {
          success.push({ request_delete_range: { key: this.#rowKey(c.table, c.key) } });
        }
        // A part kept under a key of its own (_etcd-row-parts.ts) is written when it changes, with its row.
        const field = detachedField(c.table);
        if (field === undefined) continue;
        const held = this.#replica.holdsPart(c.table, c.key);
        // Its LazyPart or value, not read (a placement's metrics stay undecoded; see _lazy-part.ts).
        const part = partOf(c.row ?? undefined, field);
        const at = Buffer.from(partKey(this.prefix, c.table, field, c.key));
        if (part !== undefined) {
          // The write's JSON of the part, when it gave the row a part other than the committed one (then compared: a
          // rebuilt but equal part is not sent again); none when the row carries the committed part, sent only if
          // etcd does not hold it yet (a row an older server wrote whole).
          const json = c.part?.json;
          const unchanged = held && (json === undefined || isDeepStrictEqual(c.before?.[field], c.row?.[field]));
          if (!unchanged) success.push({ request_put: { key: at, value: Buffer.from((json ?? partJsonOf(part)) as string) } });
        } else if (held) success.push({ request_delete_range: { key: at } });
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
      this.#replica.sent = sent;
      try {
        res = await this.#replica.retrying(deadline, (ms) => this.#client.kv.txn({ compare, success, failure }, this.#replica.callOptions(Math.min(ms, left))));
      } catch (err) {
        this.#replica.sent = undefined;
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
          await this.#replica.caughtUp(index);
        } catch (err) {
          return fail(err as Error, batch);
        } finally {
          this.#replica.sent = undefined;
        }
        return settle(index);
      }
      this.#replica.sent = undefined;
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
        await this.#replica.caughtUp(latest);
      } catch (err) {
        return fail(err as Error, batch);
      }
    }
  }

  blockUntil(tables: readonly TableName[], afterIndex: number, opts: BlockOptions = {}): Promise<number> {
    if (this.#replica.closed) return Promise.reject(new StateStoreError('STORE_CLOSED', 'the state store is closed'));
    return this.#replica.blocked.block(tables, afterIndex, opts);
  }

  close(): void {
    if (this.#replica.closed) return;
    this.#replica.close();
    for (const w of this.#pending.splice(0)) w.reject(new StateStoreError('STORE_CLOSED', 'the state store was closed'));
    this.#logger.info({ prefix: this.prefix }, 'state closed');
  }

  #assertOpen(): void {
    if (this.#replica.closed) throw new StateStoreError('STORE_CLOSED', 'the state store is closed');
  }
}
