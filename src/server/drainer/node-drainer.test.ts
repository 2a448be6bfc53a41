import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { testFingerprint } from '../../../test/support/server-rows.js';
import { ManualClock } from '../../lib/index.js';
import type { NodeFingerprint } from '../../structs/index.js';
import { NodeService } from '../nodes/index.js';
import { SqliteStateStore, type StateReader } from '../state/index.js';
import { cancelDrain, NodeDrainer, startDrain } from './index.js';

/** The store with every read of the whole node table counted (what a pass costs with thousands of nodes). */
function countingNodeLists(store: SqliteStateStore): { store: SqliteStateStore; nodeLists: () => number } {
  let lists = 0;
  const view = (snap: StateReader): StateReader =>
    new Proxy(snap, {
      get(target, key) {
        if (key === 'list') {
          return (table: string, opts?: unknown) => {
            if (table === 'nodes') lists++;
            return (target.list as (t: string, o?: unknown) => unknown)(table, opts);
          };
        }
        const v: unknown = Reflect.get(target, key, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  const counted = new Proxy(store, {
    get(target, key) {
      if (key === 'snapshot') return () => view(target.snapshot());
      const v: unknown = Reflect.get(target, key, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store: counted, nodeLists: () => lists };
}

describe('node drainer', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'berth-drainer-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('follows drains from the node changes: nodes registering do not make a pass read every node, and drains still start, end and cancel', async () => {
    const sqlite = SqliteStateStore.open(join(dir, 'storm.db'));
    const { store, nodeLists } = countingNodeLists(sqlite);
    const clock = new ManualClock(1_000);
    const nodes = new NodeService({ store: sqlite, clock });
    const drainer = new NodeDrainer({ store, clock, jobs: { evaluate: () => Promise.resolve() } });
    const fp = (i: number): NodeFingerprint => testFingerprint(`n${i}`) as unknown as NodeFingerprint;
    try {
      for (let i = 0; i < 100; i++) await nodes.register(fp(i), { id: `node-${i}` });
      assert.equal(await drainer.pass(), undefined);
      const first = nodeLists();
      // A storm of registrations, a pass after each (a node write wakes the drainer): none reads the node table again.
      for (let i = 100; i < 150; i++) {
        await nodes.register(fp(i), { id: `node-${i}` });
        await drainer.pass();
      }
      assert.equal(nodeLists(), first, 'passes while no node drains read only the nodes written since');

      // A drain set between passes is seen, and the empty node's drain completes.
      await startDrain(sqlite, 'node-120', { deadlineMs: 60_000, ignoreSystemJobs: false }, clock.now());
      await nodes.register(fp(150), { id: 'node-150' });
      await drainer.pass();
      assert.equal(sqlite.snapshot().get('nodes', 'node-120')?.lastDrain?.status, 'complete');
      assert.equal(sqlite.snapshot().get('nodes', 'node-120')?.drainStrategy, null);

      // Two drains started, one canceled before the next pass: only the other is advanced.
      await startDrain(sqlite, 'node-3', { deadlineMs: 60_000, ignoreSystemJobs: false }, clock.now());
      await startDrain(sqlite, 'node-140', { deadlineMs: 60_000, ignoreSystemJobs: false }, clock.now());
      await cancelDrain(sqlite, 'node-3', false, clock.now());
      await drainer.pass();
      assert.equal(sqlite.snapshot().get('nodes', 'node-3')?.lastDrain?.status, 'canceled');
      assert.equal(sqlite.snapshot().get('nodes', 'node-140')?.lastDrain?.status, 'complete');
      // Nothing draining any more: the next pass finds none.
      await drainer.pass();
      assert.equal(sqlite.snapshot().list('nodes', { filter: (n) => !!n.drainStrategy }).length, 0);

      // A drain started by a new drainer (a new leader term) over the same store: it reads the nodes once and finds it.
      await startDrain(sqlite, 'node-7', { deadlineMs: 60_000, ignoreSystemJobs: false }, clock.now());
      const next = new NodeDrainer({ store, clock, jobs: { evaluate: () => Promise.resolve() } });
      await next.pass();
      assert.equal(sqlite.snapshot().get('nodes', 'node-7')?.lastDrain?.status, 'complete');
    } finally {
      sqlite.close();
    }
  });
});
