// Each node's allocations as the nodes' reads see them, on a real SQLite
// store: after any mix of writes (new allocations, changed ones, deleted
// ones, writes to other tables) a node gets exactly what a scan of the
// table gives, without the table being grouped again; and when the store's
// event history no longer reaches back, it groups the table again.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { testAllocation } from '../../../test/support/server-rows.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import type { Allocation } from '../../structs/index.js';
import { SqliteStateStore, type StateReader } from '../state/index.js';
import { AllocationsByNode } from './allocations-by-node.js';

const NODES = ['n0', 'n1', 'n2', 'n3', 'n4'];

/** What a scan of the table gives for `nodeId`: the rows, as "id:status". */
function scanned(snap: StateReader, nodeId: string): string[] {
  return snap
    .list('allocations', { filter: (a) => a.nodeId === nodeId })
    .sort((a, b) => (a.id < b.id ? -1 : 1))
    .map(show);
}

function show(a: Allocation): string {
  return `${a.id}:${a.clientStatus}`;
}

/** A small deterministic random sequence. */
function lcg(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

describe('AllocationsByNode', () => {
  it('gives each node what a scan of the table gives, after any mix of writes, grouping the table once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-by-node-'));
    const store = SqliteStateStore.open(join(dir, 'state.db'));
    const byNode = new AllocationsByNode();
    const random = lcg(7);
    const statuses = ['pending', 'running', 'complete'] as const;
    try {
      await store.write((txn) => {
        for (const n of NODES) txn.put('nodes', testNode(n));
      });
      let next = 0;
      for (let round = 0; round < 60; round++) {
        await store.write((txn) => {
          const live = txn.list('allocations');
          for (let k = Math.floor(random() * 6); k > 0; k--) {
            const pick = random();
            const some = live[Math.floor(random() * live.length)];
            if (pick < 0.45 || !some) {
              txn.put('allocations', testAllocation(`a${String(next++).padStart(4, '0')}`, NODES[Math.floor(random() * NODES.length)]!));
            } else if (pick < 0.75) {
              txn.put('allocations', { ...some, clientStatus: statuses[Math.floor(random() * 3)]! });
            } else if (pick < 0.9) {
              txn.delete('allocations', some.id);
            } else {
              // Moved to another node (never done by Berth, but a grouping must follow whatever a write does).
              txn.put('allocations', { ...some, nodeId: NODES[Math.floor(random() * NODES.length)]! });
            }
          }
          // A heartbeat now and then.
          if (random() < 0.3) txn.put('nodes', testNode(NODES[0]!, { statusDescription: `beat ${round}` }));
        });
        // Read some rounds, not every one: the grouping catches up over several writes at once.
        if (round % 3 !== 0) continue;
        const snap = store.snapshot();
        for (const n of NODES) assert.deepEqual(byNode.of(snap, n).map(show), scanned(snap, n), `node ${n} after round ${round}`);
      }
      assert.equal(byNode.regroupings, 1, 'grouped once, then kept current from the events');
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads a snapshot older than its grouping as it is, and groups again when the event history no longer reaches back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-by-node-'));
    const store = SqliteStateStore.open(join(dir, 'state.db'), { eventHistory: 8 });
    const byNode = new AllocationsByNode();
    try {
      await store.write((txn) => {
        txn.put('nodes', testNode('n1'));
        txn.put('allocations', testAllocation('a1', 'n1'));
      });
      const old = store.snapshot();
      assert.deepEqual(byNode.of(old, 'n1').map(show), ['a1:running']);
      await store.write((txn) => void txn.put('allocations', testAllocation('a2', 'n1')));
      assert.deepEqual(byNode.of(store.snapshot(), 'n1').map(show), ['a1:running', 'a2:running']);
      assert.deepEqual(byNode.of(old, 'n1').map(show), ['a1:running'], 'the older snapshot as it was');
      assert.equal(byNode.regroupings, 1);
      // Twenty writes: more events than the history keeps.
      for (let i = 0; i < 20; i++) await store.write((txn) => void txn.put('allocations', testAllocation(`b${String(i).padStart(2, '0')}`, i % 2 ? 'n1' : 'n2')));
      await store.write((txn) => void txn.delete('allocations', 'a1'));
      const snap = store.snapshot();
      assert.deepEqual(byNode.of(snap, 'n1').map(show), scanned(snap, 'n1'));
      assert.deepEqual(byNode.of(snap, 'n2').map(show), scanned(snap, 'n2'));
      assert.equal(byNode.regroupings, 2, 'grouped again: the events between were trimmed');
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
