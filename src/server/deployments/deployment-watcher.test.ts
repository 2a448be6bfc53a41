// Rolling updates as an operator sees them through the store: a changed job
// replaces max_parallel allocations at a time, each batch once the previous
// one is healthy for min_healthy_time; canaries wait for promotion; an
// unhealthy allocation fails the deployment and auto_revert brings the last
// stable version back. Real SQLite store and job service, a manual clock,
// and the node's reports written as a client writes them.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import type { Allocation, Deployment, JobSpecInput } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { JobService } from '../jobs/index.js';
import { rowKey, SqliteStateStore } from '../state/index.js';
import { DeploymentService } from './deployment-service.js';
import { DeploymentWatcher } from './deployment-watcher.js';
import { jobDeployments, jobVersions } from './deployment-plan.js';
import { registerScheduled } from '../../../test/support/scheduled-jobs.js';

let dir: string;
let store: SqliteStateStore;
let clock: ManualClock;
let jobs: JobService;
let watcher: DeploymentWatcher;
let deployments: DeploymentService;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'berth-deploy-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
  clock = new ManualClock(1_000_000);
  jobs = new JobService({ store, clock, logger: silentLogger() });
  watcher = new DeploymentWatcher({ store, jobs, clock, logger: silentLogger() });
  deployments = new DeploymentService({ store, jobs, clock, logger: silentLogger() });
  await store.write((txn) => {
    txn.put('nodes', testNode('n1'));
    txn.put('nodes', testNode('n2'));
  });
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Registers a job and runs its pending evaluation, as the evaluation worker would. */
const register = (spec: unknown, opts?: { checkIndex?: number }): ReturnType<typeof registerScheduled> => registerScheduled(jobs, store, spec, opts);


function spec(version: string, update: Record<string, unknown> = {}, count = 3): JobSpecInput {
  return {
    id: 'web',
    groups: [
      {
        name: 'g',
        count,
        update: { maxParallel: 1, healthCheck: 'task_states', minHealthyTimeMs: '1s', healthyDeadlineMs: '10s', progressDeadlineMs: '1m', ...update },
        tasks: [{ name: 't', driver: 'exec', env: { VERSION: version }, resources: { cpuMhz: 10, memoryMb: 10 } }],
      },
    ],
  } as JobSpecInput;
}

const live = (): Allocation[] => store.snapshot().list('allocations', { filter: (a) => a.desiredStatus === 'run' });
const latest = (): Deployment => jobDeployments(store.snapshot(), 'default', 'web')[0] as Deployment;

/** The node's reports: allocations told to run are running, those told to stop have stopped (or `failing` ones fail). */
async function clientReports(failing: (a: Allocation) => boolean = () => false): Promise<void> {
  for (const a of store.snapshot().list('allocations')) {
    const stopped = a.desiredStatus !== 'run';
    if ((stopped && a.clientStatus === 'complete') || (!stopped && a.clientStatus !== 'pending')) continue;
    const fails = !stopped && failing(a);
    const state = { state: stopped || fails ? ('dead' as const) : ('running' as const), failed: fails, restarts: 0, startedAt: clock.now(), finishedAt: 0, events: [] };
    await jobs.updateAllocations(a.nodeId, [{ id: a.id, clientStatus: stopped ? 'complete' : fails ? 'failed' : 'running', taskStates: { t: state } }]);
  }
}

/** The watcher looks once; the evaluations it left pending (a rollout's next step, a revert) run, as the evaluation worker runs them. */
async function pass(): Promise<void> {
  await watcher.tick();
  await jobs.evaluatePending();
}

/** The clients report, the health time passes, the watcher looks. */
async function settle(failing?: (a: Allocation) => boolean): Promise<void> {
  await clientReports(failing);
  await pass();
  await clock.advance(1_000);
  await pass();
}

const versionsOf = (allocs: Allocation[]): string => allocs.sort((a, b) => (a.index ?? 0) - (b.index ?? 0)).map((a) => a.jobVersion).join(',');

describe('rolling updates', () => {
  it('replaces max_parallel allocations at a time, lowest index first, each batch after the last is healthy', async () => {
    await register(spec('1'));
    await settle();
    assert.equal(latest().status, 'successful');
    assert.equal(jobVersions(store.snapshot(), 'default', 'web')[0]?.stable, true);

    await register(spec('2'));
    const d = latest();
    assert.equal(d.status, 'running');
    assert.equal(d.jobVersion, 1);
    // One at a time: index 0 first, the others still on version 0.
    assert.equal(versionsOf(live()), '1,0,0');
    await clientReports();
    await pass();
    assert.equal(versionsOf(live()), '1,0,0', 'not healthy for min_healthy_time yet: nothing more is replaced');
    await clock.advance(999);
    await pass();
    assert.equal(versionsOf(live()), '1,0,0');
    await clock.advance(1);
    await pass();
    assert.equal(versionsOf(live()), '1,1,0');
    await settle();
    assert.equal(versionsOf(live()), '1,1,1');
    await settle();
    const done = latest();
    assert.equal(done.status, 'successful', done.statusDescription);
    assert.equal(done.taskGroups['g']?.healthyAllocs, 3);
    assert.equal(done.taskGroups['g']?.placedAllocs, 3);
    // Each replacement names its predecessor.
    const byId = new Map(store.snapshot().list('allocations').map((a) => [a.id, a]));
    for (const a of live()) assert.equal(byId.get(a.previousAllocation ?? '')?.index, a.index);
  });

  it("writes a verdict with the evaluation it asks for: a leader that dies right after leaves the rollout's next step pending, not lost", async () => {
    await register(spec('1'));
    await settle();
    await register(spec('2'));
    await clientReports();
    await clock.advance(1_000);
    // The watcher's write, and no more: the leader dies before any evaluation runs.
    await watcher.tick();
    const snap = store.snapshot();
    const healthy = live().find((a) => a.jobVersion === 1)!;
    assert.equal(healthy.deploymentStatus?.healthy, true);
    const pending = snap.list('evaluations', { filter: (e) => e.status === 'pending' && e.jobId === 'web' });
    assert.deepEqual(pending.map((e) => e.triggeredBy), ['deployment-watcher']);
    assert.equal(pending[0]!.createIndex, healthy.modifyIndex, 'written in the verdict\'s own write');
    assert.equal(versionsOf(live()), '1,0,0');
    // Whoever leads next runs what is pending: the rollout goes on.
    await jobs.evaluatePending();
    assert.equal(versionsOf(live()), '1,1,0');
  });

  it('places a canary in place of the first allocation and waits for promotion; promote rolls the rest', async () => {
    await register(spec('1', { canary: 1 }));
    await settle();
    assert.equal(latest().status, 'successful', 'a new job has no canaries');
    await register(spec('2', { canary: 1 }));
    assert.equal(versionsOf(live()), '1,0,0');
    assert.equal(live().find((a) => a.jobVersion === 1)?.deploymentStatus?.canary, true);
    await assert.rejects(deployments.promote(latest().id), /0 of 1 canaries are healthy/);
    await settle();
    await settle();
    assert.equal(versionsOf(live()), '1,0,0', 'an unpromoted canary holds the rollout');
    assert.equal(latest().status, 'running');
    await deployments.promote(latest().id);
    assert.equal(versionsOf(live()), '1,1,0');
    await settle();
    await settle();
    assert.equal(versionsOf(live()), '1,1,1');
    assert.equal(latest().status, 'successful');
  });

  it('auto_promote promotes healthy canaries', async () => {
    await register(spec('1', { canary: 1, autoPromote: true }));
    await settle();
    await register(spec('2', { canary: 1, autoPromote: true }));
    await settle();
    assert.equal(latest().taskGroups['g']?.promoted, true);
    assert.equal(versionsOf(live()), '1,1,0');
  });

  it('a failing version fails the deployment and auto_revert registers the last stable version again', async () => {
    await register(spec('1', { autoRevert: true }));
    await settle();
    await register(spec('2', { autoRevert: true }));
    const failed = latest();
    await settle((a) => a.jobVersion === 1);
    const after = store.snapshot().get('deployments', rowKey(failed.id)) as Deployment;
    assert.equal(after.status, 'failed');
    assert.equal(after.statusDescription, 'Failed due to unhealthy allocations - rolling back to job version 0');
    const job = store.snapshot().get('jobs', rowKey('default', 'web'));
    assert.equal(job?.version, 2);
    assert.equal(job?.modifyIndex, after.modifyIndex, 'the revert is registered in the write that fails the deployment');
    assert.equal(job?.groups[0]?.tasks[0]?.env['VERSION'], '1');
    // The reverted version rolls out like any other, one at a time, until every allocation runs it.
    for (let i = 0; i < 4 && latest().status === 'running'; i++) await settle();
    assert.equal(latest().jobVersion, 2);
    assert.equal(latest().status, 'successful', latest().statusDescription);
    assert.equal(versionsOf(live()), '2,2,2');
  });

  it('a revert to a stable version places no canaries and needs no promotion, and a revert that fails is not reverted again', async () => {
    const update = { canary: 1, autoRevert: true };
    await register(spec('1', update));
    await settle();
    await register(spec('2', update));
    await settle();
    await deployments.promote(latest().id);
    for (let i = 0; i < 4 && latest().status === 'running'; i++) await settle();
    assert.equal(latest().status, 'successful', latest().statusDescription);
    // Version 2's canary never starts: the deployment fails at healthy_deadline while it is still pending.
    await register(spec('3', update));
    assert.equal(live().find((a) => a.jobVersion === 2)?.clientStatus, 'pending');
    await clock.advance(10_000);
    await watcher.tick();
    assert.equal(latest().statusDescription, 'Failed due to unhealthy allocations - rolling back to job version 1');
    await jobs.evaluatePending();
    const revert = latest();
    assert.equal(revert.jobVersion, 3);
    assert.equal(revert.taskGroups['g']?.desiredCanaries, 0, 'the revert has no canary phase');
    assert.equal(live().some((a) => a.deploymentStatus?.canary), false);
    for (let i = 0; i < 6 && latest().status === 'running'; i++) await settle();
    assert.equal(latest().status, 'successful', latest().statusDescription);
    assert.equal(versionsOf(live()), '3,3,3');

    // The same spec once more (the stable version submitted again) fails: nothing to revert to but itself.
    // (Version 4 changes what the tasks see, so that version 5 replaces its canary: a change of the update
    // block alone would update the allocations in place, as Nomad does, and nothing would be new to fail.)
    await register(spec('4', update));
    await register(spec('2', update));
    assert.equal(latest().taskGroups['g']?.desiredCanaries, 0);
    await settle((a) => a.jobVersion === 5);
    const failed = latest();
    assert.equal(failed.status, 'failed');
    assert.equal(failed.statusDescription, 'Failed due to unhealthy allocations - not rolling back to stable job version 3: the job has the same spec');
    assert.equal(store.snapshot().get('jobs', rowKey('default', 'web'))?.version, 5);
  });

  it('an allocation not healthy by healthy_deadline fails the deployment; pause holds a rollout', async () => {
    await register(spec('1'));
    await settle();
    await register(spec('2'));
    const d = latest();
    await deployments.pause(d.id, true);
    assert.equal(latest().status, 'paused');
    await deployments.pause(d.id, false);
    // The new allocation never starts running.
    await pass();
    await clock.advance(10_000);
    await pass();
    const after = latest();
    assert.equal(after.status, 'failed');
    assert.equal(after.statusDescription, 'Failed due to unhealthy allocations');
    assert.equal(versionsOf(live()), '1,0,0', 'a failed deployment replaces nothing more');
  });

  it('a count change rolls inside a deployment of the new count: nothing is replaced, and it finishes once the group is healthy', async () => {
    await register(spec('1', {}, 1));
    await settle();
    const [first] = live();
    assert.equal(latest().status, 'successful');

    await deployments.scale('default', 'web', 'g', 3);
    await jobs.evaluatePending();
    const up = latest();
    assert.deepEqual([up.jobVersion, up.status, up.taskGroups['g']?.desiredTotal, up.taskGroups['g']?.placedAllocs], [1, 'running', 3, 3]);
    assert.equal(versionsOf(live()), '1,1,1', 'the running allocation takes the new version in place');
    assert.equal(live().find((a) => a.index === 0)?.id, first?.id);
    await settle();
    const upDone = latest();
    assert.equal(upDone.status, 'successful', upDone.statusDescription);
    assert.equal(upDone.taskGroups['g']?.healthyAllocs, 3);
    assert.equal(jobVersions(store.snapshot(), 'default', 'web')[0]?.stable, true);

    await deployments.scale('default', 'web', 'g', 1);
    await jobs.evaluatePending();
    const down = latest();
    assert.deepEqual([down.jobVersion, down.taskGroups['g']?.desiredTotal, down.taskGroups['g']?.placedAllocs], [2, 1, 1]);
    assert.deepEqual(live().map((a) => a.id), [first?.id], 'scaled down to the first allocation, which keeps running');
    await settle();
    assert.equal(latest().status, 'successful', latest().statusDescription);
    assert.equal(latest().taskGroups['g']?.healthyAllocs, 1);
  });

  it("an allocation that joins a count change's deployment has its healthy_deadline from then, not from its creation", async () => {
    await register(spec('1', {}, 1));
    // Its node never reports it: the first deployment fails at healthy_deadline (10 s).
    await clock.advance(10_000);
    await pass();
    assert.equal(latest().status, 'failed');
    await deployments.scale('default', 'web', 'g', 2);
    await jobs.evaluatePending();
    await pass();
    assert.equal(latest().status, 'running', latest().statusDescription);
    await settle();
    assert.equal(latest().status, 'successful', latest().statusDescription);
  });

  it('job revert and job scale register the job anew', async () => {
    await register(spec('1', { maxParallel: 3 }));
    await settle();
    await register(spec('2', { maxParallel: 3 }));
    await settle();
    await deployments.revert('default', 'web', 0);
    assert.equal(store.snapshot().get('jobs', rowKey('default', 'web'))?.groups[0]?.tasks[0]?.env['VERSION'], '1');
    await jobs.evaluatePending();
    // As Nomad's Job.Scale: not while a deployment of the job is active.
    await assert.rejects(deployments.scale('default', 'web', 'g', 5), /job scaling blocked due to active deployment/);
    await settle();
    assert.equal(latest().status, 'successful', latest().statusDescription);
    await deployments.scale('default', 'web', 'g', 5);
    await jobs.evaluatePending();
    assert.equal(live().length, 5);
    await assert.rejects(deployments.scale('default', 'web', 'nope', 1), /has no group "nope"/);
    await assert.rejects(deployments.revert('default', 'web', 42), /has no version 42/);
    assert.deepEqual(jobVersions(store.snapshot(), 'default', 'web').map((v) => v.version), [3, 2, 1, 0]);
  });
});
