// The server's SQLite state copies its write-ahead log into the database
// file once writes pause, not inside a commit of a burst: a burst's writes
// leave the database file as it was, and it takes them in once the store is
// idle (with every row still there after a reopen).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { eventually } from '../../../test/support/eventually.js';
import { testNodeRow } from '../../../test/support/server-rows.js';
import { CHECKPOINT_AFTER_BYTES } from './sqlite-state-store.js';
import { rowKey, SqliteStateStore, type RowInput } from './index.js';

const node = (id: string, pad: string): RowInput<'nodes'> => testNodeRow(id, { attributes: { pad } });

describe('SqliteStateStore checkpoints', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-sstate-ckpt-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a burst of writes leaves the database file alone; it is checkpointed once the writes pause', async () => {
    const path = join(dir, 'state.db');
    const store = SqliteStateStore.open(path, { headroomBytes: 0 });
    const before = statSync(path).size;
    // 3 MiB of rows (and as much again in their events) in one turn of the event loop, written as a burst's commits are (SQLite's default would have
    // checkpointed every 1,000 pages, about every 4 MiB of log, inside a commit).
    const pad = 'x'.repeat(32 * 1024);
    const rows = Math.ceil((3 * 1024 * 1024) / pad.length);
    assert.ok(rows * pad.length > 2 * CHECKPOINT_AFTER_BYTES);
    for (let i = 0; i < rows; i++) store.writeNow((txn) => txn.put('nodes', node(`n${i}`, pad)));
    assert.equal(statSync(path).size, before, 'no checkpoint inside the burst');
    await eventually('the idle checkpoint copied the log into the file', () => statSync(path).size > before + rows * pad.length || undefined);
    store.close();
    const again = SqliteStateStore.open(path, { headroomBytes: 0 });
    assert.equal(again.snapshot().list('nodes').length, rows);
    assert.equal(again.snapshot().get('nodes', rowKey(`n${rows - 1}`))?.attributes['pad'], pad);
    again.close();
  });
});
