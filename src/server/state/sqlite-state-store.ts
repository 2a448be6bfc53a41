import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { describeError, DiskReserve, silentLogger, type Logger } from '../../lib/index.js';
import { StateStoreError } from './errors.js';
import { publicRow } from './keys.js';
import { deepFreeze, trimEventHistory, Txn, View, type Change, type Row } from './_store-view.js';
import { DATA_TABLES, TABLES, type BlockOptions, type DataTable, type StateReader, type StateStore, type StoreEvent, type TableName, type WriteOptions, type WriteTxn } from './state-store.js';
import { TableWaiters } from './_table-waiters.js';

/** The schema this code writes. A file with a higher user_version was written by a newer Berth. */
export const STATE_SCHEMA_VERSION = 1;
const DEFAULT_EVENT_HISTORY = 10_000;
/** How many writes pass between trims of the persisted event history. */
const TRIM_EVERY_WRITES = 512;

/** The reserve's default size: room for the writes of many stops and collections. */
export const DEFAULT_STATE_HEADROOM_BYTES = 4 * 1024 * 1024;
/** While the reserve is spent, the store tries to make it again every this many writes. */
const HEADROOM_CHECK_EVERY_WRITES = 16;

/**
 * The WAL is copied into the database file (a checkpoint: two fsyncs) once
 * the store saw no write for CHECKPOINT_IDLE_MS and the writes since the
 * last checkpoint carried CHECKPOINT_AFTER_BYTES of rows and events, rather
 * than inside whichever commit passed SQLite's 1,000 pages: that commit
 * stalled the event loop 30 ms and more (on a loaded machine) in the middle
 * of a burst of registrations, which write about 15-19 KiB of WAL a job (see
 * SCHEMA).
 * SQLite's own checkpoint stays as the backstop for a store never idle, at
 * AUTOCHECKPOINT_PAGES.
 */
export const CHECKPOINT_IDLE_MS = 100;
export const CHECKPOINT_AFTER_BYTES = 1024 * 1024;
const AUTOCHECKPOINT_PAGES = 4000;

/** True for SQLite's and the kernel's "no space left" errors. */
function isDiskFull(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === 'SQLITE_FULL' || code === 'ENOSPC' || (typeof code === 'string' && code.startsWith('SQLITE_IOERR') && /ENOSPC|no space|disk is full/i.test(String((err as Error).message)));
}

export interface SqliteStateStoreOptions {
  logger?: Logger;
  /**
   * The reserve file kept beside the state file (`<path>.reserve`; default
   * 4 MiB, 0 for none): a write that frees space (WriteOptions.freesSpace)
   * and finds the disk full deletes it and tries again, as the client's
   * state store does. It is begun at open, written by libuv's thread pool
   * (headroomAtOpen), and made again once the disk has room for it twice.
   */
  headroomBytes?: number;
  /** How many events are kept for the event stream. Default 10,000. */
  eventHistory?: number;
}

interface TableState {
  rows: Map<string, Row>;
  /** A snapshot holds `rows`: the next write clones it first (copy-on-write). */
  shared: boolean;
}

/**
 * The state file's tables. The event log is a rowid table (its (idx, seq)
 * key a separate index): events are only ever appended, and SQLite fills a
 * rowid table's pages as it appends, where a WITHOUT ROWID table splits its
 * pages in half and carries each ~1 KiB job event at the edge of what a
 * page keeps inline. A registration's WAL: 17.6 and 23.2 KiB with it, 14.5
 * and 18.6 KiB without (in process, the first two rounds of 200 jobs in
 * commits of 16). Files made before keep their WITHOUT ROWID log: the same
 * statements read and write both.
 */
const SCHEMA = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE rows (tbl TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (tbl, key)) WITHOUT ROWID;
CREATE TABLE events (
  idx INTEGER NOT NULL, seq INTEGER NOT NULL, topic TEXT NOT NULL, key TEXT NOT NULL, op TEXT NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (idx, seq)
);
INSERT INTO meta (key, value) VALUES ('index', 0);
`;

/**
 * The embedded StateStore: one SQLite file (WAL) as the durable truth, and an
 * in-memory read model kept in step with it, loaded at open. Writes are
 * applied to SQLite first, then to memory, inside one synchronous call, so
 * readers never see a write that is not durable.
 */
export class SqliteStateStore implements StateStore {
  readonly path: string;
  readonly #db: Database.Database;
  readonly #logger: Logger;
  readonly #eventHistory: number;
  readonly #tables = new Map<DataTable, TableState>();
  readonly #blocked = new TableWaiters();
  /** The index of the last write that touched each table (owned by #blocked). */
  readonly #tableIndexes = this.#blocked.indexes;
  #events: StoreEvent[] = [];
  #index = 0;
  #writing = false;
  #closed = false;
  #writesSinceTrim = 0;
  readonly #headroom: DiskReserve;
  #headroomAtOpen: Promise<boolean> = Promise.resolve(false);
  #writesSinceHeadroomCheck = 0;
  readonly #stmt: {
    putRow: Database.Statement<[string, string, string]>;
    deleteRow: Database.Statement<[string, string]>;
    putEvent: Database.Statement<[number, number, string, string, string, string]>;
    trimEvents: Database.Statement<[number]>;
  };
  readonly #indexStatements = new Map<number, Database.Statement<unknown[]>>();
  /** Rows' and events' bytes written since the last checkpoint (an estimate of the WAL's growth). */
  #sinceCheckpoint = 0;
  /** Fires CHECKPOINT_IDLE_MS after the last write while a checkpoint is due (refreshed by each write). */
  #checkpointTimer: NodeJS.Timeout | undefined;
  readonly #commit: (changes: Change[], events: StoreEvent[], index: number, touched: readonly TableName[]) => void;

  private constructor(path: string, db: Database.Database, opts: SqliteStateStoreOptions) {
    this.path = path;
    this.#db = db;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'state-store' });
    this.#eventHistory = Math.max(1, opts.eventHistory ?? DEFAULT_EVENT_HISTORY);
    this.#headroom = new DiskReserve(`${path}.reserve`, opts.headroomBytes ?? DEFAULT_STATE_HEADROOM_BYTES);
    for (const t of DATA_TABLES) this.#tables.set(t, { rows: new Map(), shared: false });
    this.#stmt = {
      putRow: db.prepare('INSERT INTO rows (tbl, key, body) VALUES (?, ?, ?) ON CONFLICT (tbl, key) DO UPDATE SET body = excluded.body'),
      deleteRow: db.prepare('DELETE FROM rows WHERE tbl = ? AND key = ?'),
      putEvent: db.prepare('INSERT INTO events (idx, seq, topic, key, op, body) VALUES (?, ?, ?, ?, ?, ?)'),
      trimEvents: db.prepare('DELETE FROM events WHERE idx < ?'),
    };
    this.#commit = db.transaction((changes: Change[], events: StoreEvent[], index: number, touched: readonly TableName[]) => {
      for (const c of changes) {
        if (c.json === null) this.#stmt.deleteRow.run(c.table, c.key);
        else this.#stmt.putRow.run(c.table, c.key, c.json);
      }
      // An event whose row is the change's own (a table with nothing private to strip) reuses the row's JSON.
      for (const e of events) this.#stmt.putEvent.run(e.index, e.seq, e.topic, e.key, e.op, (e.row === changes[e.seq]?.row ? changes[e.seq]!.json : null) ?? JSON.stringify(e.row));
      // The store index and every touched table's index, in one statement (meta keys `index`, `table:<name>`).
      this.#setIndexes(touched.length).run(index, ...touched.flatMap((t) => [`table:${t}`, index]));
    });
  }

  #setIndexes(tables: number): Database.Statement<unknown[]> {
    let stmt = this.#indexStatements.get(tables);
    if (!stmt) {
      const values = ["('index', ?)", ...Array<string>(tables).fill('(?, ?)')].join(', ');
      stmt = this.#db.prepare(`INSERT INTO meta (key, value) VALUES ${values} ON CONFLICT (key) DO UPDATE SET value = excluded.value`);
      this.#indexStatements.set(tables, stmt);
    }
    return stmt;
  }

  /**
   * Opens (creating when missing) the state file at `path` and loads it.
   * Throws StateStoreError: STORE_CORRUPT when the file is not a readable
   * Berth state database (never silently starts empty over it),
   * STORE_VERSION when a newer Berth wrote it, STORE_IO for other failures
   * (permissions, missing directory). Blocks while loading.
   */
  static open(path: string, opts: SqliteStateStoreOptions = {}): SqliteStateStore {
    let db: Database.Database | undefined;
    try {
      const created = !existsSync(path);
      db = new Database(path);
      // A file made by this open holds nothing yet: it is switched to WAL and
      // given its schema without an fsync each (synchronous OFF until then).
      // Those waits were 5-30 ms of a fresh agent's start (every `berth agent
      // --dev` without --data-dir), with its event loop blocked; a power loss
      // in those milliseconds can only spoil a database that held nothing.
      if (created) db.pragma('synchronous = OFF');
      db.pragma('busy_timeout = 5000');
      db.pragma('journal_mode = WAL');
      const version = db.pragma('user_version', { simple: true }) as number;
      if (version > STATE_SCHEMA_VERSION) {
        throw new StateStoreError(
          'STORE_VERSION',
          `state file ${path} has schema version ${version}, newer than this Berth understands (${STATE_SCHEMA_VERSION}); upgrade Berth`,
        );
      }
      const check = db.pragma('quick_check', { simple: true });
      if (check !== 'ok') throw new StateStoreError('STORE_CORRUPT', `state file ${path} is corrupt: ${String(check)}`);
      if (version === 0) {
        const existing = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all();
        if (existing.length > 0) {
          throw new StateStoreError('STORE_CORRUPT', `${path} is an SQLite database but not a Berth state file`);
        }
        db.exec(SCHEMA);
        db.pragma(`user_version = ${STATE_SCHEMA_VERSION}`);
      }
      // synchronous=NORMAL: in WAL mode a commit is written to the log before
      // write() returns, so it survives a crash of the process (what a server
      // restart needs); only a power loss can drop the last commits. FULL
      // would fsync on every commit, which costs ~10x in write throughput and
      // misses the 5,000 claim+release pairs/s target.
      db.pragma('synchronous = NORMAL');
      db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
      const store = new SqliteStateStore(path, db, opts);
      store.#load();
      store.#headroomAtOpen = store.#restoreHeadroomInBackground();
      return store;
    } catch (err) {
      db?.close();
      if (err instanceof StateStoreError) throw err;
      const code = (err as { code?: unknown }).code;
      if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
        throw new StateStoreError('STORE_CORRUPT', `state file ${path} is not a readable database: ${describeError(err)}`, { cause: err });
      }
      throw new StateStoreError('STORE_IO', `cannot open state file ${path}: ${describeError(err)}`, { cause: err });
    }
  }

  #load(): void {
    const meta = this.#db.prepare("SELECT value FROM meta WHERE key = 'index'").get() as { value: number } | undefined;
    if (!meta) throw new StateStoreError('STORE_CORRUPT', `state file ${this.path} has no index record`);
    this.#index = meta.value;
    const known = new Set<string>(TABLES);
    const tableRows = this.#db.prepare("SELECT key, value FROM meta WHERE key LIKE 'table:%'").all() as Array<{ key: string; value: number }>;
    for (const r of tableRows) {
      const tbl = r.key.slice('table:'.length);
      if (!known.has(tbl)) throw new StateStoreError('STORE_CORRUPT', `state file ${this.path} names an unknown table "${tbl}"`);
      this.#tableIndexes.set(tbl as TableName, r.value);
    }
    const rows = this.#db.prepare('SELECT tbl, key, body FROM rows').iterate() as IterableIterator<{ tbl: string; key: string; body: string }>;
    for (const r of rows) {
      const table = this.#tables.get(r.tbl as DataTable);
      if (!table) throw new StateStoreError('STORE_CORRUPT', `state file ${this.path} holds rows of an unknown table "${r.tbl}"`);
      table.rows.set(r.key, deepFreeze(this.#parse(r.body, `${r.tbl}/${r.key}`) as Row));
    }
    const events = this.#db
      .prepare('SELECT idx, seq, topic, key, op, body FROM events ORDER BY idx DESC, seq DESC LIMIT ?')
      .all(this.#eventHistory) as Array<{ idx: number; seq: number; topic: DataTable; key: string; op: 'put' | 'delete'; body: string }>;
    this.#events = events.reverse().map((e) =>
      deepFreeze({ index: e.idx, seq: e.seq, topic: e.topic, key: e.key, op: e.op, row: this.#parse(e.body, `event ${e.idx}`) }),
    );
    this.#logger.info({ path: this.path, index: this.#index, events: this.#events.length }, 'state loaded');
  }

  #parse(body: string, what: string): unknown {
    try {
      return JSON.parse(body);
    } catch (err) {
      throw new StateStoreError('STORE_CORRUPT', `state file ${this.path}: record ${what} is not valid JSON`, { cause: err });
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Never: the file is the truth and every read sees every committed write. */
  readonly stale = false;

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
    return new View(this.#index, this.#maps(), new Map(this.#tableIndexes), this.#events);
  }

  /** True while the reserve file is in place (or none is kept). */
  get hasHeadroom(): boolean {
    return this.#headroom.inPlace;
  }

  /**
   * The reserve begun when the store opened, made by libuv's thread pool (4 MiB written on the main
   * thread delayed an agent's start): resolves with whether it is in place. Never rejects.
   */
  headroomAtOpen(): Promise<boolean> {
    return this.#headroomAtOpen;
  }

  async #restoreHeadroomInBackground(): Promise<boolean> {
    if (this.#headroom.inPlace) return true;
    const made = await this.#headroom.restoreInBackground({ spareFactor: 2 });
    if (made) this.#logger.info({ path: this.#headroom.path, bytes: this.#headroom.bytes }, 'state headroom reserved');
    return made;
  }

  /**
   * Makes the reserve file again when it is missing and the disk has room
   * for it twice over (so that making it does not take back the room a
   * freeing write just got). Returns whether it is in place. Never throws.
   */
  restoreHeadroom(): boolean {
    if (this.#headroom.inPlace) return true;
    const made = this.#headroom.restore({ spareFactor: 2 });
    if (made) this.#logger.info({ path: this.#headroom.path, bytes: this.#headroom.bytes }, 'state headroom reserved');
    return made;
  }

  write<R>(fn: (txn: WriteTxn) => R, opts: WriteOptions = {}): Promise<{ index: number; result: R }> {
    try {
      return Promise.resolve(this.writeNow(fn, opts));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  /**
   * The same transaction as `write`, applied and durable before it returns.
   * SQLite-only: for tools and tests that fill a store before anything runs
   * (seeding, restore); server code goes through `write`.
   */
  writeNow<R>(fn: (txn: WriteTxn) => R, opts: WriteOptions = {}): { index: number; result: R } {
    this.#assertOpen();
    if (this.#writing) throw new StateStoreError('STORE_NESTED_WRITE', 'a state write was started inside another write');
    const txn = new Txn(this.#index + 1, this.#index, this.#maps(), this.#tableIndexes, this.#events);
    let result: R;
    this.#writing = true;
    try {
      result = fn(txn);
      if (result && typeof (result as { then?: unknown }).then === 'function') {
        throw new StateStoreError('STORE_ASYNC_WRITE', 'a state write function must be synchronous; it returned a promise');
      }
    } finally {
      this.#writing = false;
    }
    if (txn.changes.size === 0) return { index: this.#index, result };

    const index = txn.writeIndex;
    const changes = [...txn.changes.values()];
    const events: StoreEvent[] = changes.map((c, seq) =>
      deepFreeze({
        index,
        seq,
        topic: c.table,
        key: c.key,
        op: c.row ? ('put' as const) : ('delete' as const),
        row: publicRow(c.table, c.row ?? c.before),
      }),
    );
    const touched: TableName[] = [...new Set(changes.map((c) => c.table)), 'events'];
    this.#commitWithHeadroom(() => this.#commit(changes, events, index, touched), opts.freesSpace === true);

    for (const c of changes) {
      const state = this.#tables.get(c.table)!;
      if (state.shared) {
        state.rows = new Map(state.rows);
        state.shared = false;
      }
      if (c.row) state.rows.set(c.key, c.row);
      else state.rows.delete(c.key);
    }
    for (const t of touched) this.#tableIndexes.set(t, index);
    this.#index = index;
    this.#appendEvents(events);
    this.#checkpointWhenIdle(txn.bytes * 2);
    this.#blocked.wake(touched, index);
    return { index, result };
  }

  /**
   * Counts a write's bytes (its rows, and as much again for their events)
   * and, once CHECKPOINT_AFTER_BYTES are due, (re)arms the timer that
   * checkpoints CHECKPOINT_IDLE_MS after the last write. A failed checkpoint
   * is logged; SQLite's own takes over.
   */
  #checkpointWhenIdle(bytes: number): void {
    this.#sinceCheckpoint += bytes;
    if (this.#sinceCheckpoint < CHECKPOINT_AFTER_BYTES) return;
    if (this.#checkpointTimer) {
      this.#checkpointTimer.refresh();
      return;
    }
    this.#checkpointTimer = setTimeout(() => {
      this.#checkpointTimer = undefined;
      if (this.#closed) return;
      this.#sinceCheckpoint = 0;
      try {
        this.#db.pragma('wal_checkpoint(PASSIVE)');
      } catch (err) {
        this.#logger.warn({ err: describeError(err) }, 'checkpointing the state file failed');
      }
    }, CHECKPOINT_IDLE_MS);
    this.#checkpointTimer.unref();
  }

  /**
   * Commits; a write that frees space and finds the disk full spends the
   * reserve and tries once more. While the reserve is spent, every few
   * writes (and after each freeing one) it is made again if there is room.
   * Throws StateStoreError STORE_DISK_FULL or STORE_IO; nothing is applied then.
   */
  #commitWithHeadroom(commit: () => void, freesSpace: boolean): void {
    try {
      try {
        commit();
      } catch (err) {
        if (!isDiskFull(err)) throw err;
        if (!freesSpace || !this.#headroom.spend()) {
          throw new StateStoreError('STORE_DISK_FULL', `state write failed: the disk of ${this.path} is full (${describeError(err)}); free space there`, { cause: err });
        }
        this.#logger.warn({ path: this.#headroom.path }, 'the disk is full: the state headroom is spent on a write that frees space');
        commit();
      }
    } catch (err) {
      if (err instanceof StateStoreError) throw err;
      if (isDiskFull(err)) throw new StateStoreError('STORE_DISK_FULL', `state write failed: the disk of ${this.path} is full even after spending the reserved headroom (${describeError(err)})`, { cause: err });
      throw new StateStoreError('STORE_IO', `state write failed: ${describeError(err)}`, { cause: err });
    }
    if (this.#headroom.bytes > 0 && (freesSpace || ++this.#writesSinceHeadroomCheck >= HEADROOM_CHECK_EVERY_WRITES)) {
      this.#writesSinceHeadroomCheck = 0;
      this.restoreHeadroom();
    }
  }

  #appendEvents(events: StoreEvent[]): void {
    this.#events.push(...events);
    trimEventHistory(this.#events, this.#eventHistory);
    if (++this.#writesSinceTrim >= TRIM_EVERY_WRITES) {
      this.#writesSinceTrim = 0;
      const oldest = this.#events[0]?.index;
      // A trim is housekeeping: on a full disk it waits for the next round.
      if (oldest !== undefined) {
        try {
          this.#stmt.trimEvents.run(oldest);
        } catch (err) {
          this.#logger.warn({ err: describeError(err) }, 'trimming the event history failed');
        }
      }
    }
  }

  blockUntil(tables: readonly TableName[], afterIndex: number, opts: BlockOptions = {}): Promise<number> {
    if (this.#closed) return Promise.reject(new StateStoreError('STORE_CLOSED', 'the state store is closed'));
    return this.#blocked.block(tables, afterIndex, opts);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#checkpointTimer);
    this.#blocked.closeAll();
    // A reserve still being made is dropped: nothing appears beside a closed store's file.
    this.#headroom.abandon();
    this.#db.close();
    this.#logger.info({ path: this.path }, 'state closed');
  }

  #assertOpen(): void {
    if (this.#closed) throw new StateStoreError('STORE_CLOSED', 'the state store is closed');
  }
}
