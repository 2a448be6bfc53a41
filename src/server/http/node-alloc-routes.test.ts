// AllocModifyIndexes: which number a node is told for each allocation. The
// node's own reports keep it; a server change moves it; the same number
// always means the same server fields, even when a field changes and
// changes back between two answers. And a node's allocation read, on a
// real SQLite store: the nodes' reads share one grouping of the table,
// kept current from the store's events, never made again by a write.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Allocation } from '../../structs/index.js';
import { testAllocation } from '../../../test/support/server-rows.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { SqliteStateStore, type StateReader, type StateStore } from '../state/index.js';
import { AllocModifyIndexes, readNodeAllocations } from './node-alloc-routes.js';

/** Version `modifyIndex` of allocation a1 on n1, pending, with `change`. */
function version(modifyIndex: number, change: Partial<Allocation> = {}): Allocation {
  return testAllocation('a1', 'n1', { clientStatus: 'pending', createIndex: 5, modifyIndex, ...change });
}

/** The numbers an answer gives. */
function ix(indexes: AllocModifyIndexes, nodeId: string, allocs: Allocation[]): Record<string, number> {
  return indexes.answer(nodeId, allocs).indexes;
}

describe('AllocModifyIndexes', () => {
  it("keeps the number through the node's own reports and moves it on a server change", () => {
    const indexes = new AllocModifyIndexes();
    assert.deepEqual(ix(indexes, 'n1', [version(5)]), { a1: 5 });
    const running = { clientStatus: 'running' as const, clientDescription: 'Tasks are running', modifyTime: 9, taskStates: { t: { state: 'running' as const, failed: false, restarts: 0, startedAt: 9, finishedAt: 0, events: [] } } };
    assert.deepEqual(ix(indexes, 'n1', [version(7, running)]), { a1: 5 }, 'a status report keeps it');
    assert.deepEqual(ix(indexes, 'n1', [version(8, { ...running, network: { mode: 'host' }, checks: {} })]), { a1: 5 });
    assert.deepEqual(ix(indexes, 'n1', [version(9, { ...running, desiredStatus: 'stop' })]), { a1: 9 }, 'a stop moves it');
    assert.deepEqual(ix(indexes, 'n1', [version(11, { ...running, desiredStatus: 'stop', jobVersion: 2 })]), { a1: 11 });
    assert.deepEqual(ix(indexes, 'n1', []), {}, 'an allocation gone is forgotten');
    assert.deepEqual(ix(indexes, 'n1', [version(12, { desiredStatus: 'stop', jobVersion: 2 })]), { a1: 12 }, 'and comes back under its own index');
  });

  it('gives a new number when a field changes and changes back between two answers, if a pull sent the middle version', () => {
    const indexes = new AllocModifyIndexes();
    assert.deepEqual(ix(indexes, 'n1', [version(5)]), { a1: 5 });
    // A pull sent the node version 6 (migrate marked) before any indexes answer saw it.
    assert.deepEqual(indexes.record('n1', [version(6, { desiredTransition: { migrate: true } })]), { a1: 6 });
    // Version 7 has the server fields of version 5 again: the node, holding 6, must pull it.
    assert.deepEqual(ix(indexes, 'n1', [version(7)]), { a1: 7 });
  });

  it("reads a follower's versions, decoded into new objects, by what they hold: equal server fields keep the number, a change deep inside one moves it", () => {
    const indexes = new AllocModifyIndexes();
    const port = (value: number): NonNullable<Allocation['ports']> => [{ label: 'http', value, to: 0, hostIp: '10.0.0.1' }];
    const metrics = { nodesEvaluated: 3, nodesFiltered: 0, nodesAvailable: { dc1: 3 }, classFiltered: {}, constraintFiltered: {}, nodesExhausted: 0, dimensionExhausted: {}, scoreMetaData: [] };
    const placed = version(5, { ports: port(20000), metrics });
    assert.deepEqual(ix(indexes, 'n1', [placed]), { a1: 5 });
    // As a follower decodes it: new objects, the keys in another order, an undefined key, other metrics (never sent).
    const decoded = JSON.parse(JSON.stringify({ ...placed, clientStatus: 'running', modifyIndex: 7, metrics: undefined })) as Allocation;
    const reordered = { previousAllocation: undefined, ...Object.fromEntries(Object.entries(decoded).reverse()) } as unknown as Allocation;
    assert.deepEqual(ix(indexes, 'n1', [reordered]), { a1: 5 }, 'the same server fields in new objects');
    assert.deepEqual(ix(indexes, 'n1', [{ ...decoded, modifyIndex: 8, ports: port(20001) }]), { a1: 8 }, 'a port changed');
    assert.deepEqual(ix(indexes, 'n1', [{ ...decoded, modifyIndex: 9, ports: port(20001), previousAllocation: 'a0' }]), { a1: 9 }, 'a field added');
    assert.deepEqual(ix(indexes, 'n1', [{ ...decoded, modifyIndex: 10, ports: port(20001) }]), { a1: 10 }, 'a field gone');
  });

  it('keeps nodes apart and forgets a node that is gone', () => {
    const indexes = new AllocModifyIndexes();
    ix(indexes, 'n1', [version(5)]);
    assert.deepEqual(ix(indexes, 'n2', [version(6, { nodeId: 'n2' })]), { a1: 6 });
    indexes.forget('n1');
    assert.deepEqual(ix(indexes, 'n1', [version(7, { clientStatus: 'running' })]), { a1: 7 }, 'a forgotten node pulls once more');
  });

  it('has no news for a node that saw its last answer while only its own reports were written; news once the server changed something, or the node asks from before that answer', () => {
    const indexes = new AllocModifyIndexes();
    const running = { clientStatus: 'running' as const, clientDescription: 'Tasks are running', modifyTime: 9 };
    assert.equal(indexes.answer('n1', [version(5)], 4).news, true, 'the first answer to a node');
    indexes.sent('n1', 5);
    assert.equal(indexes.answer('n1', [version(7, running)], 5).news, false, 'its own status report');
    assert.equal(indexes.answer('n1', [version(7, running)], 3).news, true, 'asked from before the last answer sent');
    assert.equal(indexes.answer('n1', [version(7, running)]).news, true, 'a read that names no index');
    assert.equal(indexes.answer('n1', [version(8, { ...running, desiredStatus: 'stop' })], 5).news, true, 'a stop');
    indexes.sent('n1', 8);
    assert.equal(indexes.answer('n1', [version(8, { ...running, desiredStatus: 'stop' }), testAllocation('a2', 'n1', { modifyIndex: 9 })], 8).news, true, 'a new allocation');
    indexes.sent('n1', 9);
    assert.equal(indexes.answer('n1', [version(8, { ...running, desiredStatus: 'stop' })], 9).news, true, 'an allocation gone');
  });
});

describe("a node's allocation read", () => {
  it('groups the allocations table once, not again for writes to other tables (heartbeats) or to the allocations', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-node-allocs-'));
    const sqlite = SqliteStateStore.open(join(dir, 'state.db'));
    // The same store, counting the reads that visit every allocation.
    let scans = 0;
    const counting = (snap: StateReader): StateReader =>
      new Proxy(snap, {
        get(target, prop) {
          if (prop === 'list') return (table: string, opts?: object) => (table === 'allocations' && scans++, target.list(table as 'allocations', opts));
          const v: unknown = Reflect.get(target, prop, target);
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
    const store = new Proxy(sqlite, {
      get(target, prop) {
        if (prop === 'snapshot') return () => counting(target.snapshot());
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }) as unknown as StateStore;
    const nodes = ['n0', 'n1', 'n2', 'n3'];
    const readAll = (): Promise<string[][]> =>
      Promise.all(nodes.map(async (n) => (await readNodeAllocations(store, n, { waitMs: 0 }, AbortSignal.timeout(10_000), (allocs) => allocs.map((a) => a.id))).result ?? []));
    try {
      await sqlite.write((txn) => {
        for (const n of nodes) txn.put('nodes', testNode(n));
        for (let i = 0; i < 40; i++) txn.put('allocations', testAllocation(`a${String(i).padStart(2, '0')}`, `n${i % 4}`));
      });
      const first = await readAll();
      assert.deepEqual(first[1], ['a01', 'a05', 'a09', 'a13', 'a17', 'a21', 'a25', 'a29', 'a33', 'a37']);
      assert.equal(scans, 1, 'the four reads share one grouping');
      // Heartbeats: writes to the nodes table only.
      for (let i = 0; i < 5; i++) {
        await sqlite.write((txn) => void txn.put('nodes', testNode(nodes[i % 4]!, { statusDescription: `heartbeat ${i}` })));
        assert.deepEqual(await readAll(), first);
      }
      assert.equal(scans, 1, 'writes to other tables do not group the allocations again');
      await sqlite.write((txn) => void txn.put('allocations', testAllocation('a40', 'n0')));
      const after = await readAll();
      assert.deepEqual(after[0], [...first[0]!, 'a40']);
      assert.deepEqual(after.slice(1), first.slice(1));
      assert.equal(scans, 1, 'a write to the allocations is applied from its events');
    } finally {
      sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
