// Jobs larger than one etcd request, against a real etcd: a plan that does not
// fit one transaction is written in parts by the evaluation's passes, a
// leader that stops half-way leaves a pending evaluation the next one
// completes (nothing placed twice), and
// nodes' status reports arriving together are written together, each report
// standing or falling on its own.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import type { Allocation } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { eventually } from '../../../test/support/eventually.js';
import { startEtcd, type EtcdCluster } from '../../../test/support/etcd.js';
import { openEtcdStateStore, type StateStore } from '../state/index.js';
import { AllocStatusWriter } from './alloc-status-writer.js';
import { EvalWorker } from './eval-worker.js';
import { JobService } from './job-service.js';

/** The smallest transaction budget the etcd store takes: a few dozen allocations a write. */
const SMALL_TXN = 64 * 1024;

function batchJob(id: string, count: number): Record<string, unknown> {
  return {
    id,
    type: 'batch',
    groups: [{ name: 'g', count, tasks: [{ name: 't', driver: 'exec', config: { command: '/bin/true' }, resources: { cpuMhz: 10, memoryMb: 10 } }] }],
  };
}

async function withNodes(store: StateStore, count: number): Promise<void> {
  await store.write((txn) => {
    for (let i = 0; i < count; i++) txn.put('nodes', testNode(`n${i}`));
  });
}

/** Runs the scheduler's passes, as the evaluation worker would, until nothing is pending. */
async function runPending(jobs: JobService): Promise<void> {
  while ((await jobs.evaluatePending()).remaining > 0);
}

function allocsOf(store: StateStore, jobId: string): Allocation[] {
  return store.snapshot().list('allocations', { filter: (a) => a.jobId === jobId });
}

/** Each of the job's allocation indexes exactly once. */
function assertPlacedOnce(allocs: readonly Allocation[], count: number): void {
  assert.equal(allocs.length, count);
  assert.deepEqual(
    allocs.map((a) => a.index).sort((x, y) => (x ?? 0) - (y ?? 0)),
    Array.from({ length: count }, (_v, i) => i),
  );
}

describe('jobs larger than one etcd transaction', () => {
  let etcd: EtcdCluster;
  before(async () => {
    etcd = await startEtcd();
  });
  after(() => etcd.close());

  it('places a job too large for one write in several, completing one evaluation, each allocation once', async () => {
    const store = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/parts', maxTxnBytes: SMALL_TXN });
    try {
      await withNodes(store, 10);
      const jobs = new JobService({ store, clock: new ManualClock(1_000_000), logger: silentLogger() });
      const registered = await jobs.register(batchJob('big', 300));
      assert.equal(registered.evaluation.status, 'pending');
      let passes = 0;
      for (let pass = await jobs.evaluatePending(); ; pass = await jobs.evaluatePending()) {
        passes++;
        assert.ok(pass.evaluations.length <= 1 && passes < 100);
        if (pass.remaining === 0) break;
      }
      const allocs = allocsOf(store, 'big');
      assertPlacedOnce(allocs, 300);
      const writes = new Set(allocs.map((a) => a.createIndex));
      assert.ok(writes.size > 1 && writes.size === passes, `placed in ${writes.size} writes, ${passes} passes`);
      const evals = store.snapshot().list('evaluations');
      assert.deepEqual(
        evals.map((e) => [e.id, e.status, e.placed]),
        [[registered.evaluation.id, 'complete', 300]],
        'the one evaluation counts every part',
      );
      assert.equal(store.snapshot().get('jobs', 'default/big')?.status, 'running');
    } finally {
      store.close();
    }
  });

  it('leaves the evaluation pending when the leader stops half-way; the next leader completes it without placing anything twice', async () => {
    const first = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/crash', maxTxnBytes: SMALL_TXN });
    let evalId: string;
    try {
      await withNodes(first, 10);
      const jobs = new JobService({ store: first, clock: new ManualClock(1_000_000), logger: silentLogger() });
      evalId = (await jobs.register(batchJob('half', 200))).evaluation.id;
      // One part, then this server dies.
      const pass = await jobs.evaluatePending();
      assert.equal(pass.remaining, 1, 'the plan did not fit one write');
    } finally {
      first.close();
    }
    const next = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/crash', maxTxnBytes: SMALL_TXN });
    try {
      const placedBefore = allocsOf(next, 'half').length;
      assert.ok(placedBefore > 0 && placedBefore < 200, `the first part placed ${placedBefore}`);
      const half = next.snapshot().get('evaluations', evalId);
      assert.deepEqual([half?.status, half?.placed], ['pending', placedBefore]);

      const jobs = new JobService({ store: next, clock: new ManualClock(1_000_000), logger: silentLogger() });
      const worker = new EvalWorker({ store: next, jobs, logger: silentLogger() });
      await worker.start();
      await worker.stop();
      assertPlacedOnce(allocsOf(next, 'half'), 200);
      assert.deepEqual(
        next.snapshot().list('evaluations').map((e) => [e.id, e.status, e.placed]),
        [[evalId, 'complete', 200]],
      );
    } finally {
      next.close();
    }
  });

  it('writes concurrent status reports of many nodes together, refusing only the report that names another node’s allocation', async () => {
    const store = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/reports' });
    try {
      await withNodes(store, 20);
      const jobs = new JobService({ store, clock: new ManualClock(1_000_000), logger: silentLogger() });
      await jobs.register(batchJob('reported', 100));
      await runPending(jobs);
      const allocs = allocsOf(store, 'reported');
      const writer = new AllocStatusWriter({ store, clock: new ManualClock(2_000_000) });
      const stranger = allocs.find((a) => a.nodeId !== 'n0') as Allocation;
      const results = await Promise.allSettled([
        ...allocs.map((a) => writer.report(a.nodeId, [{ id: a.id, clientStatus: 'complete' }])),
        writer.report('n0', [{ id: stranger.id, clientStatus: 'failed' }]),
      ]);
      const refused = results.filter((r) => r.status === 'rejected');
      assert.equal(refused.length, 1);
      assert.match(String((refused[0] as PromiseRejectedResult).reason), /does not run on node "n0"/);
      assert.ok(writer.counts.writes < 10, `${writer.counts.reports} reports in ${writer.counts.writes} writes`);
      const after = allocsOf(store, 'reported');
      assert.ok(after.every((a) => a.clientStatus === 'complete'));
      assert.equal(store.snapshot().get('jobs', 'default/reported')?.status, 'dead', 'the job finished once every allocation did');
    } finally {
      store.close();
    }
  });

  it('splits a batch of bulky status reports over several transactions, each within the store’s budget', async () => {
    const store = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/bulky', maxTxnBytes: SMALL_TXN });
    try {
      await withNodes(store, 10);
      const jobs = new JobService({ store, clock: new ManualClock(1_000_000), logger: silentLogger() });
      await jobs.register(batchJob('chatty', 40));
      await runPending(jobs);
      const allocs = allocsOf(store, 'chatty');
      const writer = new AllocStatusWriter({ store });
      // Each report carries ~6 KiB of task events: 40 of them cannot go in one 64 KiB transaction.
      const events = Array.from({ length: 30 }, (_v, i) => ({ at: 2_000_000 + i, type: 'Log', message: 'x'.repeat(200), details: {} }));
      await Promise.all(
        allocs.map((a) =>
          writer.report(a.nodeId, [
            { id: a.id, clientStatus: 'running', taskStates: { t: { state: 'running', failed: false, restarts: 0, startedAt: 2_000_000, finishedAt: 0, events } } },
          ]),
        ),
      );
      const after = allocsOf(store, 'chatty');
      assert.ok(after.every((a) => a.clientStatus === 'running' && a.taskStates['t']?.events.length === 30));
      const bytesPerIndex = new Map<number, number>();
      for (const a of after) bytesPerIndex.set(a.modifyIndex, (bytesPerIndex.get(a.modifyIndex) ?? 0) + JSON.stringify(a).length);
      assert.ok(bytesPerIndex.size > 1, 'several transactions');
      for (const [index, bytes] of bytesPerIndex) assert.ok(bytes <= SMALL_TXN, `index ${index}: ${bytes} bytes`);
      await eventually('every report counted', () => writer.counts.reports === 40);
    } finally {
      store.close();
    }
  });
});
