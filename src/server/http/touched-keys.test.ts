// Was a node's allocation written after the index its reader last saw? Asked
// of a real SQLite store with a short event history, from every index a
// reader could hold, and checked against the store's own events: a reader
// must never sleep through a write to its rows, even as the history is cut.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { testAllocation, testNodeRow } from '../../../test/support/server-rows.js';
import { SqliteStateStore, type StateReader } from '../state/index.js';
import { TouchedKeys } from './touched-keys.js';

const nodeIdOf = (row: unknown): string | undefined => (row as { nodeId?: string } | null)?.nodeId;
// More nodes than a short history's writes touch: some are last written by the oldest write kept.
const NODES = Array.from({ length: 30 }, (_, i) => `n${i}`);

/** What a reader at `after` must be told: read again unless the history shows no write to its node since. */
function expected(snap: StateReader, after: number, nodeId: string): boolean {
  const oldest = snap.oldestEventIndex;
  if (oldest <= 0 || oldest > after + 1) return true;
  return snap.events(after, { topics: ['allocations'] }).some((e) => nodeIdOf(e.row) === nodeId);
}

describe('the keys the writes after an index touched', () => {
  let dir: string;
  const stores: SqliteStateStore[] = [];
  const open = (eventHistory: number) => {
    const store = SqliteStateStore.open(join(dir, `state-${stores.length}.db`), { eventHistory });
    stores.push(store);
    return store;
  };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'berth-touched-'));
  });
  after(() => {
    for (const s of stores) s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Asks about every node from every index of the store's, in a shuffled order, and checks each answer. */
  const askAll = (touched: TouchedKeys, snap: StateReader, nodes: readonly string[], rand: (n: number) => number, what: string) => {
    let compared = 0;
    // Readers ask in no particular order of index, as nodes woken by their own writes do.
    const indexes = [...Array(snap.index + 1).keys()].sort(() => rand(3) - 1);
    for (const at of indexes) {
      for (const nodeId of nodes) {
        assert.equal(touched.touchedAfter(snap, at, nodeId), expected(snap, at, nodeId), `${what}: node ${nodeId} after index ${at}`);
        compared++;
      }
    }
    return compared;
  };

  it("tells readers at every index exactly whether their node's allocations were put or deleted since, as the history is cut", async () => {
    const store = open(24);
    const touched = new TouchedKeys('allocations', nodeIdOf);
    // A fixed pseudo-random sequence, so a failure repeats.
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), seed % n);
    const live = new Map<string, string>();
    let compared = 0;
    for (let w = 0; w < 180; w++) {
      await store.write((txn) => {
        // Heartbeat-like writes to another table move the store's index but not the allocations'.
        if (rand(5) === 0) {
          txn.put('nodes', testNodeRow(`node-${rand(3)}`));
          return;
        }
        for (let i = rand(4); i >= 0; i--) {
          const id = `a${rand(40)}`;
          const was = live.get(id);
          if (was !== undefined && rand(3) === 0) {
            txn.delete('allocations', id);
            live.delete(id);
          } else {
            const nodeId = NODES[rand(NODES.length)]!;
            txn.put('allocations', testAllocation(id, nodeId, { jobId: 'j' }));
            live.set(id, nodeId);
          }
        }
      });
      // Stretches of writes no reader asks about: the history is cut past the index the map holds.
      if (w % 60 >= 20) continue;
      compared += askAll(touched, store.snapshot(), NODES, rand, `write ${w}`);
    }
    assert.ok(store.snapshot().oldestEventIndex > 1, 'the history was cut');
    assert.ok(compared > 10_000);
    // Read whole once at first and once after each unasked stretch of writes; between them kept current write by write.
    assert.equal(touched.rebuilds, 3);
  });

  it('still wakes a reader whose node was last written by the oldest write the history keeps', async () => {
    // Each write to the next of eight nodes in turn, a history of a few writes: the oldest write kept
    // is always some node's last, right where keys older than the history are let go.
    const store = open(4);
    const touched = new TouchedKeys('allocations', nodeIdOf);
    const nodes = NODES.slice(0, 8);
    let seed = 11;
    const rand = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), seed % n);
    for (let w = 0; w < 60; w++) {
      await store.write((txn) => txn.put('allocations', testAllocation(`a${w}`, nodes[w % nodes.length]!, { jobId: 'j' })));
      askAll(touched, store.snapshot(), nodes, rand, `write ${w}`);
    }
    assert.equal(touched.rebuilds, 1);
  });
});
