// ScratchTxn: what `job plan` writes into is seen by the plan alone, and
// reads through it are what a committed write would show.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { testAllocation } from '../../../test/support/server-rows.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { rowKey } from './keys.js';
import { ScratchTxn } from './scratch-txn.js';
import { SqliteStateStore } from './sqlite-state-store.js';

describe('ScratchTxn', () => {
  const dir = mkdtempSync(join(tmpdir(), 'scratch-'));
  const store = SqliteStateStore.open(join(dir, 'state.db'));
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  store.writeNow((txn) => {
    txn.put('nodes', testNode('n1'));
    txn.put('allocations', testAllocation('a1', 'n1'));
    txn.put('allocations', testAllocation('a2', 'n1'));
  });

  it('overlays puts and deletes on the snapshot, in key order, and never reaches the store', () => {
    const txn = new ScratchTxn(store.snapshot());
    txn.put('allocations', testAllocation('a3', 'n1'));
    txn.put('allocations', { ...testAllocation('a1', 'n1'), desiredStatus: 'stop' });
    assert.equal(txn.delete('allocations', rowKey('a2')), true);
    assert.equal(txn.delete('allocations', rowKey('a2')), false, 'a row deleted here is gone for this transaction');
    assert.equal(txn.delete('allocations', rowKey('nope')), false);
    assert.deepEqual(txn.list('allocations').map((a) => [a.id, a.desiredStatus]), [['a1', 'stop'], ['a3', 'run']]);
    assert.deepEqual(txn.list('allocations', { filter: (a) => a.desiredStatus === 'run' }).map((a) => a.id), ['a3']);
    assert.equal(txn.get('allocations', rowKey('a2')), undefined);
    assert.deepEqual(store.snapshot().list('allocations').map((a) => [a.id, a.desiredStatus]), [['a1', 'run'], ['a2', 'run']]);
    assert.equal(txn.list('nodes').length, 1, 'a table it did not change reads as the snapshot');
  });

  it('says what each put replaced: the committed row, also after the row is put twice', () => {
    const txn = new ScratchTxn(store.snapshot());
    const committed = store.snapshot().get('allocations', rowKey('a1'));
    txn.put('allocations', { ...testAllocation('a1', 'n1'), jobVersion: 5 });
    txn.put('allocations', { ...testAllocation('a1', 'n1'), jobVersion: 6 });
    txn.put('allocations', testAllocation('new', 'n1'));
    const changed = txn.changed('allocations');
    assert.deepEqual(changed.map((c) => [c.row.id, c.row.jobVersion, c.before?.jobVersion]), [['a1', 6, committed?.jobVersion], ['new', 1, undefined]]);
    assert.equal(changed[0]?.row.createIndex, committed?.createIndex, 'an update keeps the create index');
  });

  it("keeps a row apart from the caller's object: a later change of the object does not reach it", () => {
    const txn = new ScratchTxn(store.snapshot());
    const input = { ...testAllocation('a4', 'n1'), metrics: { nodesEvaluated: 1 } } as Parameters<typeof txn.put<'allocations'>>[1];
    txn.put('allocations', input);
    (input.metrics as { nodesEvaluated: number }).nodesEvaluated = 99;
    assert.equal((txn.get('allocations', rowKey('a4'))?.metrics as { nodesEvaluated: number }).nodesEvaluated, 1);
    assert.ok(Object.isFrozen(txn.get('allocations', rowKey('a4'))?.metrics), 'rows read are frozen, as the stores give them');
  });
});
