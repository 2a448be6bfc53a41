// GET /v1/jobs's kept list, on a real SQLite store: what a change touched
// is counted again and nothing else, so each answer is what counting the
// whole list would give.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { testAllocation } from '../../../test/support/server-rows.js';
import { parseJobSpec, type Allocation } from '../../structs/index.js';
import { SqliteStateStore, rowKey, type RowInput, type WriteTxn } from '../state/index.js';
import { JobListCache } from './job-list-cache.js';

/** A job `id`; `stored` sets server fields as a launch would (a child's ID and parent). */
function putJob(txn: WriteTxn, id: string, extra: Record<string, unknown> = {}, stored: { id?: string; parentId?: string } = {}): void {
  const spec = parseJobSpec({ id, groups: [{ name: 'g', count: 2, tasks: [{ name: 't', driver: 'exec' }] }], ...extra });
  txn.put('jobs', { ...spec, stop: false, status: 'pending', version: 0, groupVersions: { g: 0 }, submitTime: 1, ...stored });
}

function alloc(id: string, jobId: string, clientStatus: Allocation['clientStatus']): RowInput<'allocations'> {
  return testAllocation(id, 'n', { jobId, jobVersion: 0, clientStatus });
}

describe('the kept list of GET /v1/jobs', () => {
  let dir: string;
  let store: SqliteStateStore;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'berth-joblist-'));
    store = SqliteStateStore.open(join(dir, 'state.db'));
  });
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts again only the jobs a change touched, and answers as a whole count would', () => {
    store.writeNow((txn) => {
      for (const id of ['a', 'b', 'c']) putJob(txn, id);
      txn.put('allocations', alloc('a1', 'a', 'running'));
    });
    const cache = new JobListCache();
    const fresh = (): unknown => JSON.parse(new JobListCache().list(store.snapshot(), 'default', '', false).json());
    const first = cache.list(store.snapshot(), 'default', '', false);
    assert.deepEqual(JSON.parse(first.json()), fresh());
    assert.equal(cache.list(store.snapshot(), 'default', '', false), first, 'nothing changed: the same list');

    // An allocation of b runs: b's row is counted again, a's and c's are the same objects.
    store.writeNow((txn) => txn.put('allocations', alloc('b1', 'b', 'running')));
    const second = cache.list(store.snapshot(), 'default', '', false);
    assert.deepEqual(JSON.parse(second.json()), fresh());
    assert.equal(second.rows[1]?.JobSummary?.Summary?.['g']?.Running, 1);
    assert.equal(second.rows[0], first.rows[0]);
    assert.equal(second.rows[2], first.rows[2]);
    assert.notEqual(second.rows[1], first.rows[1]);

    // A job added, one purged with its allocation, one's allocation failed.
    store.writeNow((txn) => {
      putJob(txn, 'd');
      txn.delete('jobs', rowKey('default', 'c'));
      txn.put('allocations', alloc('a1', 'a', 'failed'));
    });
    const third = cache.list(store.snapshot(), 'default', '', false);
    assert.deepEqual(third.rows.map((r) => r.ID), ['a', 'b', 'd']);
    assert.deepEqual(JSON.parse(third.json()), fresh());
    assert.equal(third.rows[0]?.JobSummary?.Summary?.['g']?.Failed, 1);
    assert.equal(third.rows[1], second.rows[1], 'b untouched');

    // A child of a periodic job counts in its parent's summary.
    store.writeNow((txn) => putJob(txn, 'nightly', { type: 'batch', periodic: { cron: '0 3 * * *' } }));
    cache.list(store.snapshot(), 'default', '', false);
    store.writeNow((txn) => putJob(txn, 'child', { type: 'batch' }, { id: 'nightly/periodic-1', parentId: 'nightly' }));
    const fourth = cache.list(store.snapshot(), 'default', '', false);
    assert.deepEqual(JSON.parse(fourth.json()), fresh());
    assert.equal(fourth.rows.find((r) => r.ID === 'nightly')?.JobSummary?.Children?.Pending, 1);
  });
});
