// The server's SQLite state on a full disk (a task filled a dev agent's data
// dir): a write that frees space (a job stop, a collection, a node purge)
// spends the reserve kept beside the state file and lands; other writes are
// refused with STORE_DISK_FULL; the reserve comes back once there is room.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { fillDisk } from '../../../test/support/fill-disk.js';
import { testNodeRow } from '../../../test/support/server-rows.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { rowKey, SqliteStateStore, StateStoreError, type RowInput } from './index.js';

const node = (id: string, pad = ''): RowInput<'nodes'> => testNodeRow(id, pad ? { attributes: { pad } } : {});


describe('SqliteStateStore on a full disk', () => {
  const disk = mkdtempSync(join(tmpdir(), 'berth-sstate-full-'));
  let mounted = false;
  before(() => {
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'berth-test', disk]);
    assert.equal(r.status, 0, `mount tmpfs: ${r.stderr.toString()}`);
    mounted = true;
  });
  after(() => {
    if (mounted) spawnSync('umount', [disk]);
    rmSync(disk, { recursive: true, force: true });
  });

  it('a write that frees space spends the reserve and lands; any other write is refused STORE_DISK_FULL; the reserve comes back once there is room', async () => {
    const path = join(disk, 'state.db');
    const store = SqliteStateStore.open(path, { headroomBytes: 1024 * 1024 });
    assert.equal(await store.headroomAtOpen(), true, 'the reserve is begun at open and made');
    assert.ok(existsSync(`${path}.reserve`));
    await store.write((txn) => txn.put('nodes', node('n1')));
    fillDisk(join(disk, 'task-data'));
    const big = 'x'.repeat(256 * 1024);
    await assert.rejects(
      store.write((txn) => txn.put('nodes', node('n2', big))),
      (e: unknown) => e instanceof StateStoreError && e.code === 'STORE_DISK_FULL' && /disk of .* is full/.test(e.message),
      'an ordinary write does not spend the reserve',
    );
    assert.equal(store.hasHeadroom, true);
    // A job stop / GC / node purge: marked as freeing space.
    await store.write((txn) => txn.put('nodes', { ...node('n1', big), status: 'down' }), { freesSpace: true });
    assert.equal(store.hasHeadroom, false, 'the reserve was spent on it');
    assert.equal(store.snapshot().get('nodes', rowKey('n1'))?.status, 'down');
    // The freed space is collected (the client's GC removes the task's data): the reserve comes back.
    rmSync(join(disk, 'task-data'));
    for (let i = 0; i < 20 && !store.hasHeadroom; i++) await store.write((txn) => txn.put('nodes', node(`m${i}`)));
    assert.equal(store.hasHeadroom, true, 'made again after a few writes with room');
    store.close();
    const again = SqliteStateStore.open(path, { headroomBytes: 1024 * 1024 });
    assert.equal(again.snapshot().get('nodes', rowKey('n1'))?.status, 'down');
    again.close();
  });
});
