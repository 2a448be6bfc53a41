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

import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Bucket, type ClientStateStore, ClientStateError } from './client-state-store.js';

/** The schema version this Berth writes; a file with a larger one is refused. */
export const CLIENT_STATE_SCHEMA_VERSION = 1;

type Db = Database.Database;
type Statement<P extends unknown[], R = unknown> = Database.Statement<P, R>;

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
  #closed = false;

  private constructor(path: string, db: Db) {
    this.path = path;
    this.#db = db;
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
   */
  static open(path: string): SqliteClientStateStore {
    let db: Db;
    try {
      mkdirSync(dirname(path), { recursive: true });
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
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('busy_timeout = 5000');
      if (version === 0) {
        db.transaction(() => {
          db.exec('CREATE TABLE IF NOT EXISTS records (bucket TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (bucket, key)) WITHOUT ROWID');
          db.pragma(`user_version = ${CLIENT_STATE_SCHEMA_VERSION}`);
        })();
      }
      return new SqliteClientStateStore(path, db);
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
    return this.#db.transaction(fn)();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
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

  #makeBucket<T>(name: string): Bucket<T> {
    const rows = (rs: Array<{ key: string; value: string }>): Array<{ key: string; value: T }> =>
      rs.map((r) => ({ key: r.key, value: this.#parse<T>(name, r.key, r.value) }));
    return {
      name,
      get: (key) => {
        this.#open();
        const row = this.#get.get(name, key);
        return row ? this.#parse<T>(name, key, row.value) : undefined;
      },
      list: () => {
        this.#open();
        return rows(this.#list.all(name));
      },
      listPrefix: (prefix) => {
        this.#open();
        return rows(this.#listPrefix.all(name, prefix, prefix + '\u{10FFFF}'));
      },
      put: (key, value) => {
        this.#open();
        this.#put.run(name, key, JSON.stringify(value));
      },
      delete: (key) => {
        this.#open();
        return this.#delete.run(name, key).changes > 0;
      },
    };
  }
}
