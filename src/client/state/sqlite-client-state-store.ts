// The client state store on one SQLite file (better-sqlite3, WAL).
//
// synchronous=NORMAL: in WAL mode a commit is in the log (the kernel's page
// cache) before it returns, so a record written before a plugin call or a
// task start survives a crash or SIGKILL of the agent, which is what its
// restart and adoption need. Only a power cut (or kernel crash) can drop the
// last commits, and that also ends every task, executor and mount the records
// describe: the agent rebuilds from the server after a reboot either way.
// FULL fsynced every commit on the agent's one thread: ~10 records per
// allocation made 200 concurrent job starts spend most of their time there.
//
// Headroom: a reserve file of a few MiB sits beside the database. When a
// write finds the disk full (a task filled the data dir), the reserve is
// deleted and the write tried once more, so that the agent can still record
// a stop, a release or a collection. It is begun at each open, written by
// libuv's thread pool (headroomAtOpen: 4 MiB written on the main thread
// delayed an agent's start), and made again by restoreHeadroom() once space
// was freed.

import Database from 'better-sqlite3';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DiskReserve } from '../../lib/index.js';
import { type Bucket, type ClientStateStore, ClientStateError } from './client-state-store.js';

/** The schema version this Berth writes; a file with a larger one is refused. */
export const CLIENT_STATE_SCHEMA_VERSION = 1;

type Db = Database.Database;
type Statement<P extends unknown[], R = unknown> = Database.Statement<P, R>;

/** The reserve's default size: room for the records of many stops and collections. */
export const DEFAULT_HEADROOM_BYTES = 4 * 1024 * 1024;

/** The reserve file's name, beside the database. */
export const HEADROOM_FILE = 'headroom.reserve';

/** True for SQLite's and the kernel's "no space left" errors. */
function isDiskFull(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === 'SQLITE_FULL' || code === 'ENOSPC' || (typeof code === 'string' && code.startsWith('SQLITE_IOERR') && /ENOSPC|no space|disk is full/i.test(String((err as Error).message)));
}

/** ClientStateStore on a SQLite file. Open with `SqliteClientStateStore.open`. */
export class SqliteClientStateStore implements ClientStateStore {
  readonly path: string;
  readonly #db: Db;
  readonly #get: Statement<[string, string], { value: string }>;
  readonly #list: Statement<[string], { key: string; value: string }>;
  readonly #listPrefix: Statement<[string, string, string], { key: string; value: string }>;
  readonly #put: Statement<[string, string, string]>;
  readonly #delete: Statement<[string, string]>;
  readonly #buckets = new Map<string, Bucket<unknown>>();
  readonly #headroom: DiskReserve;
  #headroomAtOpen: Promise<boolean> = Promise.resolve(false);
  /** Records given to putSoon and not yet written, by bucket and key: the latest value of each. */
  readonly #soon = new Map<string, Held>();
  #soonTimer: NodeJS.Immediate | undefined;
  #closed = false;

  private constructor(path: string, db: Db, headroomBytes: number) {
    this.path = path;
    this.#db = db;
    this.#headroom = new DiskReserve(join(dirname(path), HEADROOM_FILE), headroomBytes);
    this.#get = db.prepare('SELECT value FROM records WHERE bucket = ? AND key = ?');
    this.#list = db.prepare('SELECT key, value FROM records WHERE bucket = ? ORDER BY key');
    // Keys are compared as text; `key >= prefix AND key < prefix || U+10FFFF`
    // is a prefix match that uses the primary key index.
    this.#listPrefix = db.prepare('SELECT key, value FROM records WHERE bucket = ? AND key >= ? AND key < ? ORDER BY key');
    this.#put = db.prepare('INSERT INTO records (bucket, key, value) VALUES (?, ?, ?) ON CONFLICT (bucket, key) DO UPDATE SET value = excluded.value');
    this.#delete = db.prepare('DELETE FROM records WHERE bucket = ? AND key = ?');
  }

  /**
   * Opens (creating if needed) the store at `path`. Throws ClientStateError
   * STATE_CORRUPT when the file is not a readable SQLite database or fails its
   * integrity check, STATE_NEWER_VERSION when a newer Berth wrote it, STATE_IO
   * when the file cannot be opened. Nothing is changed in a file it refuses.
   * `headroomBytes` (default 4 MiB, 0 for none) is the reserve begun beside
   * it in the background when there is room (headroomAtOpen, restoreHeadroom).
   */
  static open(path: string, opts: { headroomBytes?: number } = {}): SqliteClientStateStore {
    let db: Db;
    let created: boolean;
    try {
      mkdirSync(dirname(path), { recursive: true });
      created = !existsSync(path);
      db = new Database(path);
    } catch (err) {
      throw new ClientStateError('STATE_IO', `cannot open client state ${path}: ${(err as Error).message}`, { cause: err });
    }
    try {
      // Reading the header and the schema is what exposes a corrupt file.
      const version = db.pragma('user_version', { simple: true }) as number;
      if (version > CLIENT_STATE_SCHEMA_VERSION) {
        throw new ClientStateError(
          'STATE_NEWER_VERSION',
          `client state ${path} has schema version ${version}, newer than this Berth understands (${CLIENT_STATE_SCHEMA_VERSION}); run the newer Berth or move the file away`,
        );
      }
      const check = db.pragma('quick_check', { simple: true }) as string;
      if (check !== 'ok') throw new ClientStateError('STATE_CORRUPT', `client state ${path} failed its integrity check: ${check}`);
      // A file made by this open is switched to WAL and given its table without an fsync each (as the server's store does).
      if (created) db.pragma('synchronous = OFF');
      db.pragma('journal_mode = WAL');
      db.pragma('busy_timeout = 5000');
      if (version === 0) {
        db.transaction(() => {
          db.exec('CREATE TABLE IF NOT EXISTS records (bucket TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (bucket, key)) WITHOUT ROWID');
          db.pragma(`user_version = ${CLIENT_STATE_SCHEMA_VERSION}`);
        })();
      }
      db.pragma('synchronous = NORMAL');
      const store = new SqliteClientStateStore(path, db, opts.headroomBytes ?? DEFAULT_HEADROOM_BYTES);
      store.#headroomAtOpen = store.#headroom.restoreInBackground();
      return store;
    } catch (err) {
      db.close();
      if (err instanceof ClientStateError) throw err;
      const code = (err as { code?: string }).code;
      if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
        throw new ClientStateError('STATE_CORRUPT', `client state ${path} is not a readable Berth state file (${code}); move it away to start afresh`, { cause: err });
      }
      throw new ClientStateError('STATE_IO', `cannot open client state ${path}: ${(err as Error).message}`, { cause: err });
    }
  }

  bucket<T>(name: string): Bucket<T> {
    let b = this.#buckets.get(name);
    if (!b) {
      b = this.#makeBucket<T>(name) as Bucket<unknown>;
      this.#buckets.set(name, b);
    }
    return b as Bucket<T>;
  }

  transaction<R>(fn: () => R): R {
    this.#open();
    return this.#withSoon(() => this.#db.transaction(fn)());
  }

  /** True while the reserve file is in place. */
  get hasHeadroom(): boolean {
    return this.#headroom.inPlace;
  }

  /**
   * Makes the reserve file again if it is missing and the disk has room for
   * it (call once space was freed, e.g. after a collection). Returns whether
   * it is in place. Never throws: a disk still full leaves it missing.
   */
  restoreHeadroom(): boolean {
    return this.#headroom.restore();
  }

  /**
   * The reserve begun when the store opened, made by libuv's thread pool (4 MiB written on the main
   * thread delayed an agent's start): resolves with whether it is in place. Never rejects.
   */
  headroomAtOpen(): Promise<boolean> {
    return this.#headroomAtOpen;
  }

  /**
   * Runs a write; when the disk is full, gives up the reserve and tries once
   * more. Throws ClientStateError STATE_DISK_FULL when it still does not fit.
   */
  #writing<R>(write: () => R): R {
    try {
      return write();
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      if (!this.#headroom.spend()) throw this.#diskFull(err, 'the reserved headroom is already used');
      try {
        return write();
      } catch (again) {
        if (!isDiskFull(again)) throw again;
        throw this.#diskFull(again, 'even after releasing the reserved headroom');
      }
    }
  }

  #diskFull(cause: unknown, why: string): ClientStateError {
    return new ClientStateError('STATE_DISK_FULL', `client state ${this.path}: the disk is full (${why}); free space in the data dir`, { cause });
  }

  close(): void {
    if (this.#closed) return;
    if (this.#soonTimer) clearImmediate(this.#soonTimer);
    try {
      this.#withSoon(() => undefined);
    } catch {
      // A disk still full: what putSoon held is lost, as a crash would lose it.
    }
    this.#closed = true;
    // A reserve still being made is dropped: nothing appears beside a closed store's file.
    this.#headroom.abandon();
    this.#db.close();
  }

  /**
   * Runs a write (through #writing) after what putSoon holds, in one commit
   * with it; with nothing held, the write alone. On a failure what was held
   * stays held (unless a later putSoon replaced it) and the error is thrown.
   */
  #withSoon<R>(write: () => R): R {
    if (this.#soon.size === 0) return this.#writing(write);
    const held = [...this.#soon];
    this.#soon.clear();
    let result: R;
    try {
      result = this.#writing(() =>
        this.#db.transaction(() => {
          for (const [, r] of held) this.#put.run(r.bucket, r.key, JSON.stringify(r.value));
          return write();
        })(),
      );
    } catch (err) {
      for (const [id, r] of held) {
        // Whoever waits on a record's landing learns now that it did not land (and does not act on it).
        for (const w of r.waiting?.splice(0) ?? []) w.reject(err);
        if (!this.#soon.has(id)) this.#soon.set(id, r);
      }
      throw err;
    }
    for (const [, r] of held) for (const w of r.waiting ?? []) w.resolve();
    return result;
  }

  /** The end of the turn after a putSoon: writes what is held, in one commit. */
  #writeSoon(): void {
    this.#soonTimer = undefined;
    if (this.#closed) return;
    try {
      this.#withSoon(() => undefined);
    } catch {
      // Held still (a full disk): the next write, or close(), tries again and tells its caller.
    }
  }

  /** Rows read from the file, with what putSoon holds for the bucket laid over them. */
  #withHeld(bucket: string, rows: Array<{ key: string; value: string }>, inRange: (key: string) => boolean): Array<{ key: string; value: string }> {
    if (this.#soon.size === 0) return rows;
    const byKey = new Map(rows.map((r) => [r.key, r.value]));
    for (const r of this.#soon.values()) if (r.bucket === bucket && inRange(r.key)) byKey.set(r.key, JSON.stringify(r.value));
    return [...byKey].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, value]) => ({ key, value }));
  }

  #open(): void {
    if (this.#closed) throw new ClientStateError('STATE_CLOSED', `client state ${this.path} is closed`);
  }

  #parse<T>(bucket: string, key: string, text: string): T {
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new ClientStateError('STATE_BAD_RECORD', `client state ${this.path}: record ${bucket}/${key} is not valid JSON`, { cause: err });
    }
  }

  /** Holds a record for the end of the turn (or the next write), replacing what was held for its key. */
  #hold(bucket: string, key: string, value: unknown): Held {
    this.#open();
    const id = soonId(bucket, key);
    const before = this.#soon.get(id);
    this.#soon.delete(id);
    // Who waited on the value it replaces learns of the landing of this one, which carries theirs.
    const held: Held = { bucket, key, value, ...(before?.waiting ? { waiting: before.waiting } : {}) };
    this.#soon.set(id, held);
    this.#soonTimer ??= setImmediate(() => this.#writeSoon());
    return held;
  }

  #makeBucket<T>(name: string): Bucket<T> {
    const rows = (rs: Array<{ key: string; value: string }>): Array<{ key: string; value: T }> =>
      rs.map((r) => ({ key: r.key, value: this.#parse<T>(name, r.key, r.value) }));
    return {
      name,
      get: (key) => {
        this.#open();
        const held = this.#soon.get(soonId(name, key));
        // A copy, as a record read from the file is: the caller may change it.
        if (held) return this.#parse<T>(name, key, JSON.stringify(held.value));
        const row = this.#get.get(name, key);
        return row ? this.#parse<T>(name, key, row.value) : undefined;
      },
      list: () => {
        this.#open();
        return rows(this.#withHeld(name, this.#list.all(name), () => true));
      },
      listPrefix: (prefix) => {
        this.#open();
        return rows(this.#withHeld(name, this.#listPrefix.all(name, prefix, prefix + '\u{10FFFF}'), (k) => k.startsWith(prefix)));
      },
      put: (key, value) => {
        this.#open();
        this.#soon.delete(soonId(name, key));
        this.#withSoon(() => this.#put.run(name, key, JSON.stringify(value)));
      },
      putSoon: (key, value) => {
        this.#hold(name, key, value);
      },
      putLanded: (key, value) => {
        const held = this.#hold(name, key, value);
        return new Promise<void>((resolve, reject) => (held.waiting ??= []).push({ resolve, reject }));
      },
      delete: (key) => {
        this.#open();
        const held = this.#soon.delete(soonId(name, key));
        return this.#withSoon(() => this.#delete.run(name, key).changes > 0) || held;
      },
    };
  }
}

/** A record held by putSoon or putLanded, with who waits on its commit (putLanded). */
interface Held {
  bucket: string;
  key: string;
  value: unknown;
  waiting?: Array<{ resolve: () => void; reject: (err: unknown) => void }>;
}

/** The key of a record held by putSoon. */
function soonId(bucket: string, key: string): string {
  return `${bucket}\u0000${key}`;
}
