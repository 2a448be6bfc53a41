// What only a store shared by several servers has to get right, against real
// etcd processes: two servers racing for one claim, a fenced writer, etcd
// restarting under a server, and a cluster losing and regaining its quorum.
// The contract every store meets is in state-store.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import type { AllocMetric, Allocation, Node } from '../../structs/index.js';
import { openEtcdStateStore, rowWith, StateStoreError, type RowInput, type StateStore } from './index.js';
import { eventually } from '../../../test/support/eventually.js';
import { startEtcd, type EtcdCluster, type EtcdMember } from '../../../test/support/etcd.js';
import { testAllocation, testNodeRow } from '../../../test/support/server-rows.js';

const node = (id: string, status: Node['status'] = 'ready'): RowInput<'nodes'> => testNodeRow(id, { status });

const METRICS: AllocMetric = {
  nodesEvaluated: 3,
  nodesFiltered: 0,
  nodesAvailable: { dc1: 3 },
  classFiltered: {},
  constraintFiltered: {},
  nodesExhausted: 0,
  dimensionExhausted: {},
  scoreMetaData: [{ nodeId: 'n1', scores: { binpack: 0.25, 'job-anti-affinity': -0.5 }, normScore: -0.125 }],
};

/** A pending allocation of job `j` on n1, with placement metrics. */
function allocation(id: string): RowInput<'allocations'> {
  const { createIndex: _c, modifyIndex: _m, ...row } = testAllocation(id, 'n1', { jobId: 'j', jobVersion: 0, metrics: METRICS, clientStatus: 'pending', createTime: 1, modifyTime: 1 });
  return row;
}

const isCode = (code: string) => (e: unknown) => e instanceof StateStoreError && e.code === code;

describe('the etcd state store shared by several servers', () => {
  let etcd: EtcdCluster;
  before(async () => {
    etcd = await startEtcd();
  });
  after(() => etcd.close());

  it('lets exactly one of two servers win a write claim on the same row, and the loser sees the winner', async () => {
    const a = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/race' });
    const b = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/race' });
    try {
      for (let round = 0; round < 10; round++) {
        const id = `claim-${round}`;
        // Each server claims the row only when nobody holds it: a write claim.
        const claim = (store: StateStore, who: string) =>
          store.write((txn) => {
            const held = txn.get('nodes', id);
            if (held) return held.name;
            txn.put('nodes', { ...node(id), name: who });
            return who;
          });
        const [ra, rb] = await Promise.all([claim(a, 'a'), claim(b, 'b')]);
        assert.equal(ra.result, rb.result, `round ${round}: both see the same single winner`);
        const holder = ra.result;
        assert.equal(a.snapshot().get('nodes', id)?.name, holder);
        await eventually('b sees the holder', () => b.snapshot().get('nodes', id)?.name === holder);
      }
    } finally {
      a.close();
      b.close();
    }
  });

  it('commits a write of 3,000 rows at once (a large job placed in one write), all or nothing', async () => {
    const store = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/large' });
    try {
      const { index } = await store.write((txn) => {
        for (let i = 0; i < 3000; i++) txn.put('nodes', node(`n${i}`));
      });
      assert.equal(store.snapshot().list('nodes').length, 3000);
      assert.ok(store.snapshot().list('nodes').every((n) => n.modifyIndex === index), 'one revision for all');
    } finally {
      store.close();
    }
  });

  it('refuses one write larger than etcd takes in a request (its default limit), applying nothing, and tells a write the room it has left', async () => {
    const store = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/too-large' });
    try {
      const { result } = await store.write((txn) => {
        const before = txn.bytesLeft ?? 0;
        txn.put('nodes', node('small'));
        return { before, after: txn.bytesLeft ?? 0 };
      });
      assert.ok(result.before > result.after && result.after > 0, `room ${result.before} -> ${result.after}`);
      // 40 rows of 50 KB: 2 MB, past etcd's default --max-request-bytes of 1.5 MiB.
      await assert.rejects(
        store.write((txn) => {
          for (let i = 0; i < 40; i++) txn.put('nodes', { ...node(`big${i}`), name: 'x'.repeat(50_000) });
        }),
        isCode('STORE_TOO_LARGE'),
      );
      assert.deepEqual(
        store.snapshot().list('nodes').map((n) => n.id),
        ['small'],
      );
    } finally {
      store.close();
    }
  });

  it("fills one write up to etcd's default request limit, keys and framing counted, whatever the rows' size: a large plan takes fewer writes", async () => {
    const score = (i: number) => ({ nodeId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, scores: { binpack: 0.123456789 + i, 'job-anti-affinity': -0.5 }, normScore: 0.987654321 });
    for (const kind of ['placed allocations', 'tiny rows'] as const) {
      const store = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: `/fill-${kind.replace(' ', '-')}` });
      try {
        // Rows put until the write has no room left: etcd takes them all in one request.
        const { result } = await store.write((txn) => {
          let rows = 0;
          let json = 0;
          while ((txn.bytesLeft ?? 0) > 2048) {
            const id = `${kind[0]}-${String(rows).padStart(8, '0')}-0000-4000-8000-000000000000`;
            if (kind === 'placed allocations') {
              const row = txn.put('allocations', { ...allocation(id), metrics: { ...METRICS, scoreMetaData: [0, 1, 2, 3, 4].map(score) } });
              json += JSON.stringify(row).length;
            } else json += JSON.stringify(txn.put('namespaces', { name: `n${rows}`, description: '', meta: {} })).length;
            rows++;
          }
          return { rows, json };
        });
        assert.equal(store.snapshot().list(kind === 'tiny rows' ? 'namespaces' : 'allocations').length, result.rows, `${kind}: all ${result.rows} rows written`);
        // The rows' own JSON alone passes the 1 MiB a write was held to when only it was counted.
        if (kind === 'placed allocations') assert.ok(result.json > 1.1 * 1024 * 1024, `${kind}: ${result.json} bytes of rows in one write`);
      } finally {
        store.close();
      }
    }
  });

  it('wakes a blocked reader on one server when another server writes', async () => {
    const a = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/wake' });
    const b = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/wake' });
    try {
      const waiting = b.blockUntil(['nodes'], b.latestIndex());
      const { index } = await a.write((txn) => txn.put('nodes', node('n1')));
      assert.equal(await waiting, index);
      assert.ok(b.snapshot().get('nodes', 'n1'));
      assert.deepEqual(b.snapshot().events(index - 1).map((e) => [e.topic, e.key, e.op]), [['nodes', 'n1', 'put']]);
    } finally {
      a.close();
      b.close();
    }
  });

  it("leaves a reader scoped to one node's allocations asleep through writes of other nodes' allocations, and wakes it for its own (put or delete)", async () => {
    const a = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/scoped' });
    const b = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/scoped' });
    const nodeIdOf = (row: unknown): string | undefined => (row as Allocation | null)?.nodeId;
    const on = (id: string, nodeId: string): RowInput<'allocations'> => ({ ...allocation(id), nodeId });
    try {
      const start = b.latestIndex();
      let woken = false;
      const n2 = b.blockUntil(['allocations'], start, { scope: { table: 'allocations', key: nodeIdOf, is: 'n2' } }).then((index) => ((woken = true), index));
      const unscoped = b.blockUntil(['allocations'], start);
      const other = await a.write((txn) => txn.put('allocations', on('x1', 'n1')));
      // b applied n1's write (its unscoped reader woke); n2's reader stayed asleep.
      assert.equal(await unscoped, other.index);
      await new Promise((r) => setImmediate(r));
      assert.equal(woken, false, "a write of n1's allocation does not wake n2's reader");
      const own = await a.write((txn) => txn.put('allocations', on('x2', 'n2')));
      assert.equal(await n2, own.index);
      const again = b.blockUntil(['allocations'], own.index, { scope: { table: 'allocations', key: nodeIdOf, is: 'n2' } });
      const deleted = await a.write((txn) => txn.delete('allocations', 'x2'));
      assert.equal(await again, deleted.index, 'the delete of its allocation wakes it');
    } finally {
      a.close();
      b.close();
    }
  });

  it('shows the writer the rows it wrote as every other server reads them: the same fields, the revisions as indexes, frozen', async () => {
    const a = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/own' });
    const b = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/own' });
    try {
      const first = await a.write((txn) => {
        txn.put('nodes', node('n1'));
        txn.put('nodes', node('n2'));
      });
      // An update carries the row's old indexes in its input: the stored row has the key's revisions.
      const n1 = a.snapshot().get('nodes', 'n1')!;
      const second = await a.write((txn) => txn.put('nodes', { ...n1, attributes: { rack: 'r1' } }));
      await eventually('b has the update', () => b.latestIndex() >= second.index);
      for (const id of ['n1', 'n2']) assert.deepEqual(a.snapshot().get('nodes', id), b.snapshot().get('nodes', id), id);
      const updated = a.snapshot().get('nodes', 'n1')!;
      assert.deepEqual([updated.createIndex, updated.modifyIndex, updated.attributes], [first.index, second.index, { rack: 'r1' }]);
      assert.ok(Object.isFrozen(updated) && Object.isFrozen(updated.attributes), 'rows stay frozen');
      assert.deepEqual(a.snapshot().events(first.index).map((e) => [e.key, (e.row as Node).modifyIndex]), [['n1', second.index]]);
    } finally {
      a.close();
      b.close();
    }
  });

  it("sends an allocation's placement metrics through etcd once: its status updates rewrite the row without them, and every server, a reloaded one too, reads the whole row", async () => {
    const raw = new Etcd3({ hosts: etcd.endpoints });
    const a = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/parts' });
    const b = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/parts' });
    const stored = async (key: string) => (await raw.get(`/parts/${key}`).exec()).kvs[0];
    try {
      const placed = await a.write((txn) => txn.put('allocations', allocation('a1')));
      const row = await stored('rows/allocations/a1');
      assert.ok(row && !('metrics' in JSON.parse(row.value.toString())), 'the row is stored without its metrics');
      const part = await stored('parts/allocations/metrics/a1');
      assert.deepEqual(JSON.parse(part?.value.toString() ?? 'null'), METRICS);

      // The node reports the allocation running, then complete: two writes of the row, none of the metrics.
      // The write counts what it sends (the row without them: more reports fit in one Txn), and the row
      // it returns carries the stored metrics themselves, not a copy made through JSON. The report is a
      // spread of the stored row, or a copy made with rowWith (as the leader's status writer makes it).
      let last = placed.index;
      for (const clientStatus of ['running', 'complete'] as const) {
        const current = a.snapshot().get('allocations', 'a1')!;
        let spent = 0;
        last = (
          await a.write((txn) => {
            const left = txn.bytesLeft!;
            const put = txn.put('allocations', clientStatus === 'running' ? { ...current, clientStatus } : rowWith(current, { clientStatus }));
            assert.equal(put.metrics, current.metrics, 'the same metrics object');
            spent = left - txn.bytesLeft!;
          })
        ).index;
        // The row's key as etcd gets it and its JSON, and the operation's framing (a few bytes): never the metrics' hundreds.
        const sent = '/parts/rows/allocations/a1'.length + (await stored('rows/allocations/a1'))!.value.length;
        assert.ok(spent >= sent && spent <= sent + 32, `the bytes counted (${spent}) are the bytes sent (${sent} and the framing)`);
      }
      assert.equal((await stored('rows/allocations/a1'))?.mod_revision, String(last));
      assert.equal((await stored('parts/allocations/metrics/a1'))?.mod_revision, String(placed.index), 'the metrics were not written again');
      // Equal metrics rebuilt by the writer (not the stored object) are not written again either.
      const copied = await a.write((txn) => txn.put('allocations', { ...a.snapshot().get('allocations', 'a1')!, metrics: structuredClone(METRICS) }));
      assert.equal((await stored('parts/allocations/metrics/a1'))?.mod_revision, String(placed.index));
      last = copied.index;

      await eventually('b has the last update', () => b.latestIndex() >= last);
      const reloaded = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/parts' });
      try {
        for (const [who, store] of [['writer', a], ['follower', b], ['reloaded', reloaded]] as const) {
          const got = store.snapshot().get('allocations', 'a1');
          assert.deepEqual([got?.clientStatus, got?.metrics, got?.modifyIndex], ['complete', METRICS, last], who);
          // As any stored row: frozen, its metrics too (a server that keeps them undecoded until read), and the same object at every read.
          assert.ok(Object.isFrozen(got) && Object.isFrozen(got?.metrics) && Object.isFrozen(got?.metrics?.scoreMetaData), who);
          assert.equal(store.snapshot().get('allocations', 'a1')?.metrics, got?.metrics, who);
          assert.deepEqual(JSON.parse(JSON.stringify(got)).metrics, METRICS, who);
        }
        // The follower's events carry whole rows, as the writer's do.
        for (const store of [a, b]) {
          assert.deepEqual(store.snapshot().events(placed.index - 1, { topics: ['allocations'] }).map((e) => [(e.row as Allocation).clientStatus, (e.row as Allocation).metrics]), [
            ['pending', METRICS],
            ['running', METRICS],
            ['complete', METRICS],
            ['complete', METRICS],
          ]);
        }
      } finally {
        reloaded.close();
      }

      // A part written without its row (by a writer other than this store's): the row changes with it, with an event.
      const rescored = { ...METRICS, nodesEvaluated: 9 };
      const put = await raw.put('/parts/parts/allocations/metrics/a1').value(JSON.stringify(rescored));
      const lone = Number(put.header.revision);
      for (const store of [a, b]) {
        await eventually('the lone part is applied', () => store.latestIndex() >= lone);
        assert.deepEqual([store.snapshot().get('allocations', 'a1')?.metrics, store.snapshot().get('allocations', 'a1')?.modifyIndex], [rescored, lone]);
        assert.deepEqual(store.snapshot().events(lone - 1).map((e) => [e.key, (e.row as Allocation).metrics?.nodesEvaluated]), [['a1', 9]]);
      }

      // A row an older server stored whole (its metrics inside): the next write moves them under their own key.
      const whole = await raw.put('/parts/rows/allocations/a3').value(JSON.stringify(allocation('a3')));
      await eventually('a reads the whole row', () => a.latestIndex() >= Number(whole.header.revision));
      assert.deepEqual(a.snapshot().get('allocations', 'a3')?.metrics, METRICS);
      await a.write((txn) => txn.put('allocations', { ...a.snapshot().get('allocations', 'a3')!, clientStatus: 'running' }));
      assert.ok(!('metrics' in JSON.parse((await stored('rows/allocations/a3'))!.value.toString())), 'the row is stored without its metrics');
      assert.deepEqual(JSON.parse((await stored('parts/allocations/metrics/a3'))?.value.toString() ?? 'null'), METRICS);

      // Metrics taken off the row go from etcd too; a deleted row takes its metrics with it.
      const { metrics: _m, ...bare } = a.snapshot().get('allocations', 'a1')!;
      const cleared = await a.write((txn) => txn.put('allocations', bare));
      assert.equal(await stored('parts/allocations/metrics/a1'), undefined);
      await eventually('b sees the row without metrics', () => b.latestIndex() >= cleared.index);
      assert.equal(b.snapshot().get('allocations', 'a1')?.metrics, undefined);
      await a.write((txn) => txn.put('allocations', allocation('a2')));
      const gone = await a.write((txn) => txn.delete('allocations', 'a2'));
      assert.equal(await stored('parts/allocations/metrics/a2'), undefined);
      await eventually('b sees the delete', () => b.latestIndex() >= gone.index);
      assert.equal(b.snapshot().get('allocations', 'a2'), undefined);
    } finally {
      a.close();
      b.close();
      raw.close();
    }
  });

  it('refuses a write from a server whose fence key is gone, applying nothing', async () => {
    const raw = new Etcd3({ hosts: etcd.endpoints });
    try {
      await raw.put('/fence/leader').value('me');
      const createRevision = (await raw.get('/fence/leader').exec()).kvs[0]!.create_revision;
      const store = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/fenced', fence: () => ({ key: '/fence/leader', createRevision }) });
      try {
        await store.write((txn) => txn.put('nodes', node('ok')));
        await raw.delete().key('/fence/leader');
        await raw.put('/fence/leader').value('someone else');
        await assert.rejects(store.write((txn) => txn.put('nodes', node('late'))), isCode('STORE_FENCED'));
        assert.equal(store.snapshot().get('nodes', 'late'), undefined);
        assert.ok(store.snapshot().get('nodes', 'ok'));
      } finally {
        store.close();
      }
    } finally {
      raw.close();
    }
  });
});

describe('the etcd state store on bad days', () => {
  it('keeps serving reads while its one etcd member restarts, then writes again with nothing lost', async () => {
    const etcd = await startEtcd();
    const store = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/restart', writeTimeoutMs: 2_000 });
    try {
      const { index } = await store.write((txn) => txn.put('nodes', node('before')));
      await etcd.members[0]!.kill();
      await eventually('the store notices etcd is gone', () => store.stale);
      assert.ok(store.snapshot().get('nodes', 'before'), 'reads keep serving the last view');
      await assert.rejects(store.write((txn) => txn.put('nodes', node('during'))), isCode('STORE_UNAVAILABLE'));
      await etcd.members[0]!.start();
      const next = await eventually('a write succeeds once etcd is back', async () => {
        try {
          return await store.write((txn) => txn.put('nodes', node('after')));
        } catch (err) {
          if (err instanceof StateStoreError && err.code === 'STORE_UNAVAILABLE') return undefined;
          throw err;
        }
      });
      assert.ok(next.index > index);
      await eventually('the store is fresh again', () => !store.stale);
      assert.deepEqual(store.snapshot().list('nodes').map((n) => n.id).sort(), ['after', 'before']);
    } finally {
      store.close();
      await etcd.close();
    }
  });

  it('survives one of three members dying, refuses writes clearly without quorum, and resumes with nothing half-written', async () => {
    const etcd = await startEtcd({ members: 3 });
    const store = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/quorum' });
    try {
      await store.write((txn) => txn.put('nodes', node('n0')));
      // A follower dies: no effect (a call that lands on the dead member goes to another).
      // (A dead leader costs an election first: the multi-server failover tests cover that.)
      const leader = await eventually('a leader', () => etcd.leader());
      const [m2, m1] = etcd.members.filter((m) => m !== leader) as [EtcdMember, EtcdMember];
      const m0 = leader;
      await m2.kill();
      const one = await store.write((txn) => txn.put('nodes', node('n1')));
      assert.ok(store.snapshot().get('nodes', 'n1'));
      assert.ok(!store.stale);

      await m1.kill();
      // Without a quorum etcd cancels the watch of a member with no leader: reads know, even with no write.
      await eventually('reads say they may be stale once the quorum is gone', () => store.stale);
      // Two rows in one write: without quorum neither may appear.
      const err = await store
        .write((txn) => {
          txn.put('nodes', node('half-a'));
          txn.put('nodes', node('half-b'));
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(err instanceof StateStoreError && err.code === 'STORE_UNAVAILABLE', `expected STORE_UNAVAILABLE, got ${String(err)}`);
      assert.match(err.message, /quorum|unreachable/);
      assert.ok(store.stale, 'reads still say they may be stale');
      assert.ok(store.snapshot().get('nodes', 'n0'), 'reads keep serving');

      await Promise.all([m1.start({ waitReady: false }), m2.start({ waitReady: false })]);
      await Promise.all([m0.ready(), m1.ready(), m2.ready()]);
      const after = await eventually('writes resume once quorum is back', async () => {
        try {
          return await store.write((txn) => txn.put('nodes', node('n2')));
        } catch (e) {
          if (e instanceof StateStoreError && e.code === 'STORE_UNAVAILABLE') return undefined;
          throw e;
        }
      });
      assert.ok(after.index > one.index);
      await eventually('the store is fresh again', () => !store.stale);
      const ids = store.snapshot().list('nodes').map((n) => n.id);
      assert.ok(ids.includes('n0') && ids.includes('n1') && ids.includes('n2'), `nothing lost: ${ids.join(',')}`);
      assert.equal(ids.includes('half-a'), ids.includes('half-b'), `all or nothing: ${ids.join(',')}`);

      // A fresh server loading from the healed cluster sees the same state.
      const fresh = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/quorum' });
      try {
        assert.deepEqual(fresh.snapshot().list('nodes').map((n) => n.id), ids);
        assert.equal(fresh.latestIndex(), store.latestIndex());
      } finally {
        fresh.close();
      }
    } finally {
      store.close();
      await etcd.close();
    }
  });
});
