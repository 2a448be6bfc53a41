// Blocking reads scoped to some rows of a table (a node's allocations), on a
// real SQLite store: a reader wakes for writes to its rows only, however
// many readers one write wakes and however many rows it touches.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { testAllocation } from '../../../test/support/server-rows.js';
import type { Allocation } from '../../structs/index.js';
import { SqliteStateStore, type RowInput } from '../state/index.js';
import { blockingReadOf } from './blocking.js';

function alloc(id: string, nodeId: string, clientStatus: Allocation['clientStatus'] = 'pending'): RowInput<'allocations'> {
  return testAllocation(id, nodeId, { jobId: 'j', clientStatus });
}

const nodeIdOf = (row: unknown): string | undefined => (row as { nodeId?: string } | null)?.nodeId;

describe('a blocking read of some rows of a table', () => {
  let dir: string;
  let store: SqliteStateStore;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'berth-blocking-'));
    store = SqliteStateStore.open(join(dir, 'state.db'));
  });
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers each node's reader for writes to its own allocations only, readers woken by one write sharing it", async () => {
    const start = store.latestIndex();
    const signal = new AbortController();
    const read = (nodeId: string) =>
      blockingReadOf(store, 'allocations', { key: nodeIdOf, is: nodeId }, { index: start, waitMs: 60_000 }, signal.signal, (snap) =>
        snap.list('allocations', { filter: (a) => a.nodeId === nodeId }).map((a) => `${a.id}:${a.clientStatus}`),
      );
    const answered: string[] = [];
    const readers = ['n1', 'n2', 'n3'].map((n) => read(n).then((r) => (answered.push(n), r)));
    try {
      // One write of many rows, none on n3: n1 and n2 answer with what it wrote, n3 keeps waiting.
      const { index } = await store.write((txn) => {
        for (let i = 0; i < 50; i++) txn.put('allocations', alloc(`a${i}`, i % 2 ? 'n1' : 'n2'));
      });
      const [n1, n2] = await Promise.all(readers.slice(0, 2));
      assert.equal(n1?.index, index);
      assert.equal(n1?.result.length, 25);
      assert.deepEqual(n2?.result.slice(0, 2), ['a0:pending', 'a10:pending']);
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(answered.sort(), ['n1', 'n2'], 'n3 still waits');
      // Writes to other nodes' rows go by; n3's own wakes it, with the index of that write.
      await store.write((txn) => txn.put('allocations', alloc('a1', 'n1', 'running')));
      const own = await store.write((txn) => txn.put('allocations', alloc('b1', 'n3')));
      const n3 = await readers[2];
      assert.deepEqual([n3?.index, n3?.result], [own.index, ['b1:pending']]);
      assert.deepEqual(answered.sort(), ['n1', 'n2', 'n3']);
    } finally {
      signal.abort();
    }
  });
});
