import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { eventually } from '../../../test/support/eventually.js';
import { rowKey, SqliteStateStore } from '../state/index.js';
import { GarbageCollector } from './garbage-collector.js';
import { JobService } from './job-service.js';
import { registerScheduled } from '../../../test/support/scheduled-jobs.js';

let dir: string;
let store: SqliteStateStore;
let clock: ManualClock;
let jobs: JobService;
let gc: GarbageCollector;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-gc-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
  clock = new ManualClock(1_000_000);
  jobs = new JobService({ store, clock, logger: silentLogger() });
  gc = new GarbageCollector({ store, clock, logger: silentLogger(), intervalMs: 60_000, limits: { maxAgeMs: 10 * 60_000, maxEvaluations: 3 } });
  store.writeNow((txn) => txn.put('nodes', testNode('n1')));
});
afterEach(async () => {
  await gc.stop();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Registers a job and runs its pending evaluation, as the evaluation worker would. */
const register = (spec: unknown, opts?: { checkIndex?: number }): ReturnType<typeof registerScheduled> => registerScheduled(jobs, store, spec, opts);

const spec = (id: string) => ({ id, groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] });
const allocsOf = (jobId: string) => store.snapshot().list('allocations', { filter: (a) => a.jobId === jobId });

async function finish(jobId: string): Promise<void> {
  for (const a of allocsOf(jobId)) await jobs.updateAllocations(a.nodeId, [{ id: a.id, clientStatus: 'complete' }]);
}

describe('server garbage collection', () => {
  it('removes a purged job\'s allocations from the list once they have stopped and released their claims', async () => {
    await gc.start();
    await register(spec('web'));
    const [alloc] = allocsOf('web');
    // A claim the allocation still holds (being released) keeps it listed.
    store.writeNow((txn) =>
      txn.put('claims', {
        namespace: 'default', volumeId: 'data', pluginId: 'hostpath', externalVolumeId: 'ext', allocId: alloc!.id, nodeId: 'n1', externalNodeId: 'ext-n1',
        mode: 'write', accessMode: 'single-node-writer', attachmentMode: 'file-system', state: 'unpublishing', controllerPublish: 'none',
        publishContext: {}, releaseReason: 'allocation complete', releaseAttempts: 0, lastError: '', claimTime: 0,
      }),
    );
    store.writeNow((txn) => txn.put('allocations', { ...txn.get('allocations', rowKey(alloc!.id))!, csiVolumes: [{ volumeId: 'data', pluginId: 'hostpath', readOnly: false }] }));

    await jobs.stop('default', 'web', { purge: true });
    assert.equal(allocsOf('web').length, 1, 'still running on its node: listed');
    await finish('web');
    assert.deepEqual((await gc.collect({ force: true })).allocations, [], 'not even a forced collection takes it');
    assert.equal(allocsOf('web').length, 1, 'its claim is not yet free: listed');

    store.writeNow((txn) => txn.delete('claims', rowKey('default', 'data', alloc!.id)));
    await eventually('the purged job\'s allocation to leave the list', () => allocsOf('web').length === 0);
  });

  it('collects stopped allocations, finished evaluations and stopped jobs past the age and count limits, on the clock', async () => {
    await gc.start();
    for (const id of ['a', 'b']) await register(spec(id));
    await jobs.stop('default', 'a');
    await finish('a');
    for (let i = 0; i < 3; i++) await jobs.evaluate('default', 'b', { trigger: 'job-register', always: true });
    assert.equal(store.snapshot().list('evaluations').length, 6);

    // One interval: only the count limit applies (3 evaluations kept).
    await clock.waitForSleepers(1);
    await clock.advance(60_000);
    await eventually('evaluations beyond the count limit collected', () => store.snapshot().list('evaluations').length === 3);
    assert.equal(allocsOf('a').length, 1, 'younger than the age limit: kept');
    assert.ok(store.snapshot().get('jobs', rowKey('default', 'a')));

    // Past the age limit: the stopped job's allocation, then the stopped job itself; the running job keeps its allocation.
    await clock.waitForSleepers(1);
    await clock.advance(10 * 60_000);
    await eventually('the stopped job collected', () => store.snapshot().get('jobs', rowKey('default', 'a')) === undefined);
    assert.equal(allocsOf('a').length, 0);
    assert.equal(allocsOf('b').length, 1);
    assert.ok(store.snapshot().get('jobs', rowKey('default', 'b')));
  });

  it('collects everything collectable at once when forced (berth system gc), and says what', async () => {
    await register(spec('a'));
    await register(spec('b'));
    await jobs.stop('default', 'a');
    await finish('a');
    const [aAlloc] = allocsOf('a');
    const out = await gc.collect({ force: true });
    assert.deepEqual(out.allocations, [aAlloc!.id]);
    assert.deepEqual(out.jobs, [rowKey('default', 'a')]);
    assert.equal(out.evaluations.length, 3, 'every finished evaluation');
    assert.equal(allocsOf('b').length, 1, 'a running allocation is never collected');
    assert.deepEqual((await gc.collect({ force: true })).allocations, [], 'safe to repeat');
  });
});
