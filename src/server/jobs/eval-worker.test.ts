// A registration answers once the job and its pending evaluation are
// durable; the evaluation worker places it after, many at once, and a
// restarted server runs what a crash left pending.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import type { Evaluation } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { eventually, nextTurn } from '../../../test/support/eventually.js';
import { rowKey, SqliteStateStore, StateStoreError } from '../state/index.js';
import { BURST_SETTLE_MS, RequestsInFlight } from '../http/index.js';
import { EvalWorker, MAX_BURST_DEFER_MS, MAX_DEFER_MS, PENDING_RETRY_MS } from './eval-worker.js';
import { JobService } from './job-service.js';

let dir: string;
let store: SqliteStateStore;
let clock: ManualClock;
let jobs: JobService;
let worker: EvalWorker | undefined;

const job = (id: string): Record<string, unknown> => ({
  id,
  groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 5, memoryMb: 10 } }] }],
});

const evaluation = (id: string): Evaluation | undefined => store.snapshot().get('evaluations', rowKey(id));
const pending = (): number => store.snapshot().list('evaluations', { filter: (e) => e.status === 'pending' }).length;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-evalworker-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
  store.writeNow((txn) => txn.put('nodes', testNode('n1')));
  clock = new ManualClock(1_000_000);
  jobs = new JobService({ store, clock, logger: silentLogger() });
});
afterEach(async () => {
  await worker?.stop();
  worker = undefined;
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('evaluation worker: registrations are scheduled after they answer', () => {
  it('a registration answers with a pending evaluation and nothing placed; the worker then completes it and places the allocation', async () => {
    const registered = await jobs.register(job('web'));
    assert.equal(registered.evaluation.status, 'pending');
    assert.equal(registered.evaluation.triggeredBy, 'job-register');
    assert.equal(evaluation(registered.evaluation.id)?.status, 'pending', 'the pending evaluation is stored with the job');
    assert.equal(store.snapshot().list('allocations').length, 0, 'nothing is placed before the worker runs');

    worker = new EvalWorker({ store, jobs, clock, logger: silentLogger() });
    await worker.start();
    const done = await eventually('the evaluation completes', () => (evaluation(registered.evaluation.id)?.status === 'complete' ? evaluation(registered.evaluation.id) : undefined));
    assert.equal(done.placed, 1);
    assert.equal(done.createIndex, registered.evaluation.createIndex, 'the same evaluation, completed (the ID the API answered)');
    const [alloc] = store.snapshot().list('allocations');
    assert.equal(alloc?.jobId, 'web');
    assert.equal(alloc?.nodeId, 'n1');
    assert.equal(store.snapshot().get('jobs', rowKey('default', 'web'))?.status, 'running');
  });

  it('places every one of many registrations sent at once, several evaluations per store write', async () => {
    worker = new EvalWorker({ store, jobs, clock, logger: silentLogger(), batch: 16 });
    await worker.start();
    const ids = Array.from({ length: 60 }, (_, i) => `burst-${i}`);
    const registered = await Promise.all(ids.map((id) => jobs.register(job(id))));
    await eventually('every evaluation ran', () => pending() === 0);
    for (const r of registered) assert.equal(evaluation(r.evaluation.id)?.status, 'complete', r.job.id);
    const allocs = store.snapshot().list('allocations');
    assert.deepEqual(allocs.map((a) => a.jobId).sort(), [...ids].sort());
    const writes = new Set(allocs.map((a) => a.createIndex));
    assert.ok(writes.size < ids.length, `60 placements in ${writes.size} writes: batched`);
  });

  it('yields to the event loop between batches, so that requests are served while a burst is scheduled', async () => {
    for (let i = 0; i < 40; i++) await jobs.register(job(`j${i}`));
    const seen: number[] = [];
    let watching = true;
    const watch = (): void => {
      seen.push(pending());
      if (watching) setImmediate(watch);
    };
    watch();
    worker = new EvalWorker({ store, jobs, clock, logger: silentLogger(), batch: 8 });
    await worker.start();
    await eventually('every evaluation ran', () => pending() === 0);
    watching = false;
    await nextTurn();
    assert.ok(
      seen.some((n) => n > 0 && n < 40),
      `the loop turned while some evaluations were done and others still pending (pending counts seen: ${[...new Set(seen)].join(', ')})`,
    );
  });

  it('waits while the API serves write requests: evaluations run once the last request ended, or after MAX_DEFER_MS under a steady stream', async () => {
    const inFlight = new RequestsInFlight();
    worker = new EvalWorker({ store, jobs, clock, logger: silentLogger(), quiet: () => inFlight.whenQuiet() });
    await worker.start();
    inFlight.enter();
    inFlight.enter();
    const first = await jobs.register(job('first'));
    await eventually('the worker waits for the clock or the requests', () => clock.pending > 0);
    for (let i = 0; i < 5; i++) await nextTurn();
    assert.equal(evaluation(first.evaluation.id)?.status, 'pending', 'not scheduled while two requests are served');
    inFlight.leave();
    for (let i = 0; i < 5; i++) await nextTurn();
    assert.equal(evaluation(first.evaluation.id)?.status, 'pending', 'not while one still is');
    inFlight.leave();
    await eventually('scheduled once none is', () => evaluation(first.evaluation.id)?.status === 'complete');

    inFlight.enter();
    const second = await jobs.register(job('second'));
    await eventually('the worker waits again', () => clock.pending > 0);
    await clock.advance(MAX_DEFER_MS);
    await eventually('scheduled after MAX_DEFER_MS although a request is still served', () => evaluation(second.evaluation.id)?.status === 'complete');
    inFlight.leave();
  });

  it('a pass that fails (the store could not take the write in time) is run again a moment later, with no other change to wake it', async () => {
    const registered = await jobs.register(job('retried'));
    let failures = 1;
    const flaky = Object.create(jobs) as JobService;
    flaky.evaluatePending = (opts) => (failures-- > 0 ? Promise.reject(new StateStoreError('STORE_UNAVAILABLE', 'etcd did not answer in time')) : jobs.evaluatePending(opts));
    worker = new EvalWorker({ store, jobs: flaky, clock, logger: silentLogger() });
    await worker.start();
    assert.equal(evaluation(registered.evaluation.id)?.status, 'pending', 'the first pass failed');
    await clock.advance(PENDING_RETRY_MS);
    const done = await eventually('the evaluation completes', () => (evaluation(registered.evaluation.id)?.status === 'complete' ? evaluation(registered.evaluation.id) : undefined));
    assert.equal(done.placed, 1);
  });

  it('a crash between the registration and its scheduling leaves a pending evaluation that the restarted server runs', async () => {
    const registered = await jobs.register(job('web'));
    // The server dies here: the answer was sent, no worker ran.
    store.close();
    store = SqliteStateStore.open(join(dir, 'state.db'));
    assert.equal(evaluation(registered.evaluation.id)?.status, 'pending', 'the pending evaluation survived the restart');
    jobs = new JobService({ store, clock, logger: silentLogger() });
    worker = new EvalWorker({ store, jobs, clock, logger: silentLogger() });
    await worker.start();
    // start() returns once its start-up sweep is done: the evaluation already ran.
    assert.equal(evaluation(registered.evaluation.id)?.status, 'complete');
    assert.equal(store.snapshot().list('allocations', { filter: (a) => a.jobId === 'web' }).length, 1);
  });

  it('a batch whose scheduling throws for one job fails that evaluation only; the others are placed', async () => {
    const good = await jobs.register(job('good'));
    const bad = await jobs.register(job('bad'));
    // A job row the scheduler cannot read (as a bug or a corrupt row would leave it): datacenters is not a list.
    store.writeNow((txn) => txn.put('jobs', { ...txn.get('jobs', rowKey('default', 'bad'))!, datacenters: null as never }));
    const pass = await jobs.evaluatePending();
    assert.equal(evaluation(good.evaluation.id)?.status, 'complete');
    assert.equal(evaluation(bad.evaluation.id)?.status, 'failed');
    assert.match(evaluation(bad.evaluation.id)?.statusDescription ?? '', /^the scheduler failed: /);
    assert.equal(pass.remaining, 0);
    assert.deepEqual(store.snapshot().list('allocations').map((a) => a.jobId), ['good']);
  });
});

describe('evaluation worker: a burst of submissions is answered before it is scheduled', () => {
  /** The clock step of these tests: requests 10 ms apart are a burst (BURST_SETTLE_MS 20). */
  const STEP = 10;
  let inFlight: RequestsInFlight;

  /** A worker that waits for the API as the server's does, RequestsInFlight on the test's clock. */
  const burstAwareWorker = async (): Promise<void> => {
    inFlight = new RequestsInFlight({ clock });
    worker = new EvalWorker({ store, jobs, clock, logger: silentLogger(), quiet: () => inFlight.whenQuiet(), inBurst: () => inFlight.inBurst });
    await worker.start();
  };

  /**
   * Moves the clock STEP ms at a time, calling `each` before every step, until
   * the evaluation `id` completed or `limit` ms passed. After each step it
   * waits until the worker has decided (it sleeps on the clock again, or the
   * evaluation completed), so a "still pending" is the worker's choice.
   * Resolves the ms passed when the evaluation was seen complete, or undefined.
   */
  const stepUntilComplete = async (id: string, limit: number, each: (passed: number) => void): Promise<number | undefined> => {
    const start = clock.now();
    while (clock.now() - start < limit) {
      each(clock.now() - start);
      await clock.advance(STEP);
      const seen = await eventually('the worker ran the evaluation or waits again', () =>
        evaluation(id)?.status === 'complete' ? 'complete' : clock.pending > 0 ? 'waits' : undefined,
      );
      if (seen === 'complete') return clock.now() - start;
    }
    return undefined;
  };

  it('a burst answered over longer than MAX_DEFER_MS is not interrupted: its evaluations run once it was answered', async () => {
    await burstAwareWorker();
    inFlight.enter();
    inFlight.enter();
    const first = await jobs.register(job('first'));
    await eventually('the worker waits for the API', () => clock.pending > 0);
    // Requests keep overlapping (one ends, another begins, every 10 ms) for twice MAX_DEFER_MS.
    const ranAt = await stepUntilComplete(first.evaluation.id, 2 * MAX_DEFER_MS, () => {
      inFlight.leave();
      inFlight.enter();
    });
    assert.equal(ranAt, undefined, `not scheduled while the burst was answered (it ran after ${ranAt} ms)`);
    assert.ok(2 * MAX_DEFER_MS < MAX_BURST_DEFER_MS, 'the burst above stayed under the hard cap');
    inFlight.leave();
    inFlight.leave();
    const settled = await stepUntilComplete(first.evaluation.id, MAX_DEFER_MS, () => undefined);
    assert.ok(settled !== undefined && settled <= BURST_SETTLE_MS, `scheduled once the burst was answered and BURST_SETTLE_MS passed (after ${settled} ms)`);
  });

  it('a stream that never stops overlapping is scheduled at MAX_BURST_DEFER_MS at the latest', async () => {
    await burstAwareWorker();
    inFlight.enter();
    inFlight.enter();
    const first = await jobs.register(job('first'));
    await eventually('the worker waits for the API', () => clock.pending > 0);
    const ranAt = await stepUntilComplete(first.evaluation.id, 2 * MAX_BURST_DEFER_MS, () => {
      inFlight.leave();
      inFlight.enter();
    });
    assert.ok(ranAt !== undefined, 'scheduled although requests still overlap');
    assert.ok(ranAt > MAX_DEFER_MS && ranAt <= MAX_BURST_DEFER_MS, `scheduled at the hard cap, MAX_BURST_DEFER_MS (after ${ranAt} ms)`);
    inFlight.leave();
    inFlight.leave();
  });

  it('separate writes are scheduled within MAX_DEFER_MS as before: a trickle with gaps, and one long request alone after a burst', async () => {
    await burstAwareWorker();
    // A write every 50 ms, each served for 20 ms: 30 ms gaps, more than BURST_SETTLE_MS.
    const trickle = (passed: number): void => {
      if (passed % 50 === 0) inFlight.enter();
      if (passed % 50 === 20) inFlight.leave();
    };
    trickle(0);
    const first = await jobs.register(job('first'));
    await eventually('the worker waits for the API', () => clock.pending > 0);
    const firstAt = await stepUntilComplete(first.evaluation.id, 3 * MAX_DEFER_MS, (passed) => passed > 0 && trickle(passed));
    assert.ok(firstAt !== undefined && firstAt <= MAX_DEFER_MS, `the trickle's evaluation ran within MAX_DEFER_MS (after ${firstAt} ms)`);
    if (inFlight.count > 0) inFlight.leave();

    // A burst that ended long ago, then one request that stays open: no burst, the old bound.
    inFlight.enter();
    inFlight.enter();
    inFlight.leave();
    inFlight.leave();
    await clock.advance(MAX_DEFER_MS);
    inFlight.enter();
    const second = await jobs.register(job('second'));
    await eventually('the worker waits for the API', () => clock.pending > 0);
    const secondAt = await stepUntilComplete(second.evaluation.id, 3 * MAX_DEFER_MS, () => undefined);
    assert.ok(secondAt !== undefined && secondAt > MAX_DEFER_MS - STEP && secondAt <= MAX_DEFER_MS, `the lone request's evaluation ran at MAX_DEFER_MS (after ${secondAt} ms)`);
    inFlight.leave();
  });
});

describe('evaluation worker: finished batch work', () => {
  it('a batch job whose allocations complete is not evaluated again for each of them; the job ends dead', async () => {
    // The scheduler passes the worker asks for (each one scans the job's allocations: 10,000 of them in a large job).
    class CountedJobs extends JobService {
      passes = 0;
      override evaluate(...args: Parameters<JobService['evaluate']>): ReturnType<JobService['evaluate']> {
        this.passes++;
        return super.evaluate(...args);
      }
    }
    const counted = new CountedJobs({ store, clock, logger: silentLogger() });
    worker = new EvalWorker({ store, jobs: counted, clock, logger: silentLogger() });
    await worker.start();
    const { evaluation: registered } = await counted.register({ ...job('crunch'), type: 'batch', groups: [{ name: 'g', count: 5, tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 5, memoryMb: 10 } }] }] });
    await eventually('placed', () => evaluation(registered.id)?.status === 'complete');
    const allocs = store.snapshot().list('allocations');
    assert.equal(allocs.length, 5);
    for (const a of allocs) await counted.updateAllocations('n1', [{ id: a.id, clientStatus: 'complete' }]);
    await eventually('the worker saw every report', () => worker!.handledIndex >= store.latestIndex());
    assert.equal(store.snapshot().get('jobs', rowKey('default', 'crunch'))?.status, 'dead');
    assert.deepEqual(
      store.snapshot().list('evaluations').map((e) => [e.triggeredBy, e.status]),
      [['job-register', 'complete']],
      'no evaluation after the allocations completed',
    );
    assert.equal(counted.passes, 0, 'the job was not evaluated again');
  });
});
