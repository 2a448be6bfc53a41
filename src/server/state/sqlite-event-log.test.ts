// The server's SQLite event log is a rowid table in a state file made now,
// and a WITHOUT ROWID table in one made before: a store opened on either
// replays the events it kept, in order, and logs new ones after them, so an
// older agent's state file (and its event stream's history) carries over.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { testNodeRow } from '../../../test/support/server-rows.js';
import { SqliteStateStore } from './index.js';

/** What a store's event stream holds: each event's index, sequence, topic, key and op. */
function stream(store: SqliteStateStore): string[] {
  return store.snapshot().events(0).map((e) => `${e.index}.${e.seq} ${e.op} ${e.topic} ${e.key}`);
}

/** The event log's table definition in the file at `path`. */
function eventsTableSql(path: string): string {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'").get() as { sql: string }).sql;
  } finally {
    db.close();
  }
}

describe('SqliteStateStore event log', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-sstate-events-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const fill = (store: SqliteStateStore, from: number, to: number): void => {
    for (let i = from; i < to; i++) store.writeNow((txn) => txn.put('nodes', testNodeRow(`n${i}`)));
    store.writeNow((txn) => txn.delete('nodes', `n${from}`));
  };

  it('is a rowid table in a new state file, and survives a reopen in order', () => {
    const path = join(dir, 'new.db');
    const store = SqliteStateStore.open(path, { headroomBytes: 0 });
    fill(store, 0, 5);
    const before = stream(store);
    store.close();
    assert.doesNotMatch(eventsTableSql(path), /WITHOUT ROWID/);
    const again = SqliteStateStore.open(path, { headroomBytes: 0 });
    assert.deepEqual(stream(again), before);
    fill(again, 5, 8);
    assert.deepEqual(stream(again).slice(0, before.length), before);
    assert.equal(stream(again).length, before.length + 4);
    again.close();
  });

  it('an event log made WITHOUT ROWID (a state file of an older Berth) is read and written as before', () => {
    const path = join(dir, 'old.db');
    const store = SqliteStateStore.open(path, { headroomBytes: 0 });
    fill(store, 0, 5);
    const before = stream(store);
    store.close();
    // The file as the older Berth made it: the same log in a WITHOUT ROWID table.
    const db = new Database(path);
    db.exec(`
      CREATE TABLE old_events (
        idx INTEGER NOT NULL, seq INTEGER NOT NULL, topic TEXT NOT NULL, key TEXT NOT NULL, op TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (idx, seq)
      ) WITHOUT ROWID;
      INSERT INTO old_events SELECT idx, seq, topic, key, op, body FROM events;
      DROP TABLE events;
      ALTER TABLE old_events RENAME TO events;
    `);
    db.close();
    assert.match(eventsTableSql(path), /WITHOUT ROWID/);

    const again = SqliteStateStore.open(path, { headroomBytes: 0 });
    assert.deepEqual(stream(again), before);
    fill(again, 5, 8);
    const after = stream(again);
    again.close();
    const third = SqliteStateStore.open(path, { headroomBytes: 0 });
    assert.deepEqual(stream(third), after);
    assert.equal(after.length, before.length + 4);
    third.close();
  });
});
