import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import { JobValidationError, type CsiPlugin, type Volume } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { NodeService } from '../nodes/index.js';
import { DeploymentService } from '../deployments/index.js';
import { rowKey, SqliteStateStore } from '../state/index.js';
import { EvalWorker } from './eval-worker.js';
import { JobService } from './job-service.js';
import { eventually, nextTurn } from '../../../test/support/eventually.js';
import { registerScheduled } from '../../../test/support/scheduled-jobs.js';

let dir: string;
let store: SqliteStateStore;
let clock: ManualClock;
let jobs: JobService;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-jobs-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
  clock = new ManualClock(1_000_000);
  jobs = new JobService({ store, clock, logger: silentLogger() });
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Registers a job and runs its pending evaluation, as the evaluation worker would. */
const register = (spec: unknown, opts?: { checkIndex?: number }): ReturnType<typeof registerScheduled> => registerScheduled(jobs, store, spec, opts);

function plugin(id: string, extra: Partial<CsiPlugin> = {}): Omit<CsiPlugin, 'createIndex' | 'modifyIndex'> {
  return {
    id,
    provider: `${id}.csi.berth.dev`,
    version: '1',
    controllerRequired: false,
    controllerCapabilities: [],
    nodeCapabilities: ['STAGE_UNSTAGE_VOLUME'],
    controllers: {},
    nodes: {},
    controllersHealthy: 0,
    controllersExpected: 0,
    nodesHealthy: 2,
    nodesExpected: 2,
    allocations: [],
    exhaustedNodes: {},
    ...extra,
  };
}

function volume(id: string, extra: Partial<Volume> = {}): Omit<Volume, 'createIndex' | 'modifyIndex'> {
  return {
    id,
    namespace: 'default',
    name: id,
    externalId: `ext-${id}`,
    pluginId: 'hostpath',
    provider: 'hostpath.csi.berth.dev',
    capacityMinBytes: 0,
    capacityMaxBytes: 0,
    capacityBytes: 0,
    capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }],
    mountOptions: { fsType: '', mountFlags: [] },
    secrets: {},
    parameters: {},
    context: {},
    accessibleTopology: [],
    ...extra,
  };
}

function seed(): void {
  store.writeNow((txn) => {
    txn.put('nodes', testNode('n1', { plugin: { id: 'hostpath' } }));
    txn.put('nodes', testNode('n2', { plugin: { id: 'hostpath', healthy: false } }));
    txn.put('nodes', testNode('n3'));
    txn.put('plugins', plugin('hostpath'));
    txn.put('volumes', volume('data'));
  });
}

const csiJob = (extra: Record<string, unknown> = {}) => ({
  id: 'db',
  groups: [
    {
      name: 'db',
      volumes: { data: { type: 'csi', source: 'data', accessMode: 'single-node-writer', attachmentMode: 'file-system' } },
      tasks: [{ name: 'pg', driver: 'exec', volumeMounts: [{ volume: 'data', destination: '/var/lib/pg' }] }],
      ...extra,
    },
  ],
});

async function rejected(fn: () => unknown): Promise<JobValidationError> {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof JobValidationError, String(err));
    return err;
  }
  assert.fail('expected a JobValidationError');
}

describe('job service', () => {
  it('updates an allocation in place on a resource-only change that fits, and replaces it otherwise', async () => {
    store.writeNow((txn) => txn.put('nodes', testNode('n1')));
    const web = (resources: Record<string, unknown>, env: Record<string, string> = {}) => ({
      id: 'web',
      groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec', env, resources: { cpuMhz: 100, ...resources } }] }],
    });
    await register(web({ memoryMb: 64 }));
    const [first] = store.snapshot().list('allocations');

    // Only memory and pids changed, and 96 MB fits on the 1000 MB node: same allocation, new version and resources.
    const grown = await register(web({ memoryMb: 96, pidsMax: 50 }));
    assert.equal(grown.job.version, 1);
    assert.deepEqual([grown.evaluation.updatedInPlace, grown.evaluation.placed, grown.evaluation.stopped], [1, 0, 0]);
    const [same] = store.snapshot().list('allocations');
    assert.equal(same!.id, first!.id);
    assert.equal(same!.desiredStatus, 'run');
    assert.equal(same!.jobVersion, 1);
    assert.deepEqual(same!.resources, { cpuMhz: 100, memoryMb: 96 });

    // 2000 MB does not fit on the node: the allocation is stopped (its replacement cannot be placed either).
    const huge = await register(web({ memoryMb: 2000 }));
    assert.deepEqual([huge.evaluation.updatedInPlace, huge.evaluation.stopped], [0, 1]);
    assert.equal(store.snapshot().get('allocations', rowKey(first!.id))!.desiredStatus, 'stop');

    // Back to a size that fits, then a change of anything else: replaced, not updated in place.
    const back = await register(web({ memoryMb: 96 }));
    const current = store.snapshot().list('allocations', { filter: (a) => a.desiredStatus === 'run' });
    assert.equal(current.length, 1);
    assert.equal(back.evaluation.placed, 1);
    const env = await register(web({ memoryMb: 128 }, { MODE: 'fast' }));
    assert.deepEqual([env.evaluation.updatedInPlace, env.evaluation.stopped, env.evaluation.placed], [0, 1, 1]);
    assert.equal(store.snapshot().get('allocations', rowKey(current[0]!.id))!.desiredStatus, 'stop');
  });

  it('takes a change of the restart or reschedule policy alone in place, as Nomad does (its tasksUpdated looks at neither)', async () => {
    store.writeNow((txn) => txn.put('nodes', testNode('n1')));
    const web = (group: Record<string, unknown>) => ({ id: 'web', groups: [{ name: 'g', ...group, tasks: [{ name: 't', driver: 'exec' }] }] });
    await register(web({}));
    const [first] = store.snapshot().list('allocations');
    const restart = await register(web({ restart: { attempts: 7 } }));
    assert.deepEqual([restart.job.version, restart.evaluation.updatedInPlace, restart.evaluation.placed, restart.evaluation.stopped], [1, 1, 0, 0]);
    const reschedule = await register(web({ restart: { attempts: 7 }, reschedule: { delay: '1m' } }));
    assert.deepEqual([reschedule.job.version, reschedule.evaluation.updatedInPlace, reschedule.evaluation.placed, reschedule.evaluation.stopped], [2, 1, 0, 0]);
    const [same] = store.snapshot().list('allocations');
    assert.deepEqual([same!.id, same!.jobVersion, same!.desiredStatus], [first!.id, 2, 'run']);
  });

  it('places a CSI job only on the node with a healthy node plugin, and says why not elsewhere', async () => {
    seed();
    const { job, evaluation } = await register(csiJob());
    assert.equal(evaluation.status, 'complete');
    assert.equal(evaluation.placed, 1);
    const allocs = store.snapshot().list('allocations');
    assert.equal(allocs.length, 1);
    assert.equal(allocs[0]!.nodeId, 'n1');
    assert.equal(allocs[0]!.name, 'db.db[0]');
    assert.deepEqual(allocs[0]!.csiVolumes, [{ volumeId: 'data', pluginId: 'hostpath', readOnly: false }]);
    assert.equal(job.status, 'running');

    // A second writer of the single-node-writer volume cannot be placed: blocked, with counts.
    const second = await register({ ...csiJob(), id: 'db2' });
    assert.equal(second.evaluation.status, 'blocked');
    assert.deepEqual(second.evaluation.failedPlacements['db']!.reasons, {
      'found no free write claim on volume data': 1,
      'lacked a healthy node plugin for hostpath': 2,
    });
    assert.match(second.evaluation.blockedReason, /2 nodes lacked a healthy node plugin for hostpath/);
  });

  it('refuses to place a reader on a volume a single-node-writer job holds, as it refuses a second writer, before and after the writer claims', async () => {
    seed();
    store.writeNow((txn) =>
      txn.put('volumes', volume('data', { capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }, { accessMode: 'single-node-reader-only', attachmentMode: 'file-system' }] })),
    );
    await register(csiJob());
    const reader = {
      id: 'report',
      groups: [
        {
          name: 'db',
          volumes: { data: { type: 'csi', source: 'data', accessMode: 'single-node-reader-only', attachmentMode: 'file-system', readOnly: true } },
          tasks: [{ name: 'pg', driver: 'exec', volumeMounts: [{ volume: 'data', destination: '/var/lib/pg' }] }],
        },
      ],
    };
    // The writer is placed but has not claimed yet; then it has.
    const beforeClaim = await register(reader);
    assert.equal(beforeClaim.evaluation.status, 'blocked');
    assert.deepEqual(beforeClaim.evaluation.failedPlacements['db']!.reasons, {
      'could not use volume data, which is in use as single-node-writer/file-system': 1,
      'lacked a healthy node plugin for hostpath': 2,
    });
    assert.match(beforeClaim.evaluation.blockedReason, /1 node could not use volume data, which is in use as single-node-writer\/file-system/);

    const [writer] = store.snapshot().list('allocations', { filter: (a) => a.jobId === 'db' });
    store.writeNow((txn) =>
      txn.put('claims', {
        namespace: 'default', volumeId: 'data', pluginId: 'hostpath', externalVolumeId: 'ext-data', allocId: writer!.id, nodeId: writer!.nodeId,
        externalNodeId: 'ext-n1', mode: 'write', accessMode: 'single-node-writer', attachmentMode: 'file-system', state: 'taken',
        controllerPublish: 'none', publishContext: {}, releaseReason: '', releaseAttempts: 0, lastError: '', claimTime: 0,
      }),
    );
    const afterClaim = await jobs.evaluate('default', 'report', { trigger: 'job-register', always: true });
    assert.equal(afterClaim.evaluation!.status, 'blocked');
    assert.equal(afterClaim.evaluation!.placed, 0);
  });

  it('rejects at registration, naming the field: missing volume, unknown plugin, impossible access mode', async () => {
    seed();
    store.writeNow((txn) => txn.put('volumes', volume('orphan', { pluginId: 'ghost' })));
    const missing = await rejected(() => register({ ...csiJob(), groups: [{ ...csiJob().groups[0], volumes: { data: { type: 'csi', source: 'nope' } } }] }));
    assert.equal(missing.problems[0]!.path, 'groups[0].volumes.data.source');
    assert.match(missing.problems[0]!.message, /"nope" is not registered/);

    const unknown = await rejected(() => register({ ...csiJob(), groups: [{ ...csiJob().groups[0], volumes: { data: { type: 'csi', source: 'orphan' } } }] }));
    assert.match(unknown.problems[0]!.message, /plugin "ghost", which is unknown/);

    const mode = await rejected(() =>
      register({
        ...csiJob(),
        groups: [{ ...csiJob().groups[0], volumes: { data: { type: 'csi', source: 'data', accessMode: 'multi-node-multi-writer' } } }],
      }),
    );
    assert.equal(mode.problems[0]!.path, 'groups[0].volumes.data.accessMode');
    assert.match(mode.problems[0]!.message, /does not support multi-node-multi-writer\/file-system/);

    const snmw = await rejected(() => {
      store.writeNow((txn) => txn.put('volumes', volume('sn', { capabilities: [{ accessMode: 'single-node-multi-writer', attachmentMode: 'file-system' }] })));
      return register({
        ...csiJob(),
        groups: [{ ...csiJob().groups[0], volumes: { data: { type: 'csi', source: 'sn', accessMode: 'single-node-multi-writer' } } }],
      });
    });
    assert.match(snmw.problems[0]!.message, /SINGLE_NODE_MULTI_WRITER/);
    assert.equal(store.snapshot().list('jobs').length, 0, 'nothing registered');
  });

  it('scales, updates in place only what changed, stops and purges', async () => {
    seed();
    const spec = { id: 'web', groups: [{ name: 'web', count: 2, tasks: [{ name: 't', driver: 'exec' }] }] };
    await register(spec);
    const first = store.snapshot().list('allocations');
    assert.equal(first.length, 2);

    const same = await register(spec);
    assert.equal(same.job.version, 0, 'an unchanged spec keeps its version');
    assert.equal(same.evaluation.placed, 0);

    const scaled = await register({ ...spec, groups: [{ ...spec.groups[0], count: 3 }] });
    assert.equal(scaled.evaluation.placed, 1);
    assert.equal(scaled.evaluation.stopped, 0, 'a count change replaces nothing');

    const changed = await register({ ...spec, groups: [{ ...spec.groups[0], count: 3, tasks: [{ name: 't', driver: 'exec', env: { A: '1' } }] }] });
    assert.equal(changed.evaluation.stopped, 3);
    assert.equal(changed.evaluation.placed, 3);

    // The job's meta reaches every task's environment (NOMAD_META_*): a change of it replaces them, as Nomad does.
    const metaChanged = await register({ ...spec, meta: { gen: '1' }, groups: [{ ...spec.groups[0], count: 3, tasks: [{ name: 't', driver: 'exec', env: { A: '1' } }] }] });
    assert.equal(metaChanged.job.version, 3);
    assert.equal(metaChanged.evaluation.stopped, 3);
    assert.equal(metaChanged.evaluation.placed, 3);

    const stopped = await jobs.stop('default', 'web');
    assert.equal(stopped.evaluation.stopped, 3);
    const snap = store.snapshot();
    assert.ok(snap.list('allocations').every((a) => a.desiredStatus === 'stop'));
    assert.equal(snap.get('jobs', rowKey('default', 'web'))!.stop, true);

    await jobs.stop('default', 'web', { purge: true });
    assert.equal(store.snapshot().get('jobs', rowKey('default', 'web')), undefined);
    await assert.rejects(() => jobs.stop('default', 'web'), { code: 'NOT_FOUND' });
  });

  it('moves allocations off nodes that no longer satisfy a changed constraint, keeps the others in place, and the plan says so first', async () => {
    store.writeNow((txn) => {
      for (const [id, kernel] of [['n1', 'linux'], ['n2', 'linux'], ['n3', 'freebsd'], ['n4', 'linux']] as const) {
        txn.put('nodes', testNode(id, { attributes: { 'kernel.name': kernel } }));
      }
    });
    const spec = (constraints: unknown[]) => ({
      id: 'web',
      constraints,
      groups: [{ name: 'g', count: 3, constraints: [{ operator: 'distinct_hosts', value: 'true' }], tasks: [{ name: 't', driver: 'exec' }] }],
    });
    await register(spec([{ attribute: '${node.unique.name}', operator: 'regexp', value: '^n[123]$' }]));
    const before = store.snapshot().list('allocations');
    assert.deepEqual(before.map((a) => a.nodeId).sort(), ['n1', 'n2', 'n3']);
    const onN3 = before.find((a) => a.nodeId === 'n3')!;

    const linux = spec([{ attribute: '${attr.kernel.name}', value: 'linux' }]);
    const plan = jobs.plan(linux);
    assert.deepEqual(plan.stops.map((s) => [s.allocId, s.description]), [[onN3.id, 'job updated: its node no longer satisfies constraint "${attr.kernel.name} = linux"']]);
    assert.deepEqual(plan.placements.map((p) => p.nodeId), ['n4']);
    assert.equal(plan.inPlaceUpdates, 2);
    assert.deepEqual(plan.diff.groups[0]?.updates, { create: 1, destroy: 1, 'in-place update': 2 });

    const run = await register(linux);
    assert.deepEqual([run.evaluation.stopped, run.evaluation.placed, run.evaluation.updatedInPlace], [1, 1, 2]);
    const after = store.snapshot().list('allocations', { filter: (a) => a.desiredStatus === 'run' });
    assert.deepEqual(after.map((a) => a.nodeId).sort(), ['n1', 'n2', 'n4']);
    // The two that still fit are the same allocations, now at the new version.
    for (const a of before.filter((x) => x.id !== onN3.id)) assert.equal(after.find((x) => x.id === a.id)?.jobVersion, 1);
    assert.equal(store.snapshot().get('allocations', rowKey(onN3.id))!.desiredStatus, 'stop');

    // A datacenter the job no longer names moves its allocations the same way.
    store.writeNow((txn) => txn.put('nodes', { ...testNode('n5', { attributes: { 'kernel.name': 'linux' } }), datacenter: 'dc2' }));
    const moved = await register({ ...linux, datacenters: ['dc2', 'dc1'] });
    assert.deepEqual([moved.evaluation.stopped, moved.evaluation.placed], [0, 0]);
    const dc2 = await register({ ...linux, groups: [{ ...linux.groups[0], count: 1 }], datacenters: ['dc2'] });
    assert.equal(dc2.evaluation.placed, 1);
    assert.deepEqual(store.snapshot().list('allocations', { filter: (a) => a.desiredStatus === 'run' }).map((a) => a.nodeId), ['n5']);
  });

  it('a revert replaces only the allocations whose spec differs from the version reverted to', async () => {
    store.writeNow((txn) => {
      txn.put('nodes', testNode('n1'));
      txn.put('nodes', testNode('n2'));
    });
    const deployments = new DeploymentService({ store, jobs, clock, logger: silentLogger() });
    const update = { maxParallel: 1, healthCheck: 'task_states', minHealthyTimeMs: '1s', healthyDeadlineMs: '10s', progressDeadlineMs: '1m' };
    const spec = (v: string) => ({ id: 'web', groups: [{ name: 'g', count: 3, update, tasks: [{ name: 't', driver: 'exec', env: { V: v } }] }] });
    await register(spec('1'));
    const first = store.snapshot().list('allocations');
    // Version 1 changes the task's env and rolls one allocation at a time: one runs it, two still run version 0.
    await register(spec('2'));
    const live = () => store.snapshot().list('allocations', { filter: (a) => a.desiredStatus === 'run' });
    const v1 = live().filter((a) => a.jobVersion === 1);
    assert.equal(v1.length, 1);

    // The plan of the revert, then the revert: the allocation of version 1 is replaced, the two of version 0 kept.
    const plan = jobs.plan(spec('1'));
    assert.deepEqual(plan.stops.map((s) => s.allocId), [v1[0]!.id]);
    assert.deepEqual(plan.diff.groups[0]?.updates, { create: 1, destroy: 1, 'in-place update': 2 });
    const back = await deployments.revert('default', 'web', 0);
    await jobs.evaluatePending();
    const ev = store.snapshot().get('evaluations', rowKey(back.evaluation.id))!;
    assert.deepEqual([ev.stopped, ev.placed, ev.updatedInPlace], [1, 1, 2]);
    const now = live();
    assert.equal(now.length, 3);
    assert.ok(now.every((a) => a.jobVersion === 2));
    assert.deepEqual(first.filter((a) => now.some((n) => n.id === a.id)).length, 2, 'two of the first allocations still run');
    assert.equal(store.snapshot().get('allocations', rowKey(v1[0]!.id))!.desiredStatus, 'stop');
  });

  it('keeps the newer state when an older status report of an allocation arrives after it (a slow request overtaken)', async () => {
    seed();
    await register({ id: 'slow', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] });
    const [alloc] = store.snapshot().list('allocations');
    const received = { at: 1000, type: 'Received', message: 'Task received by the client', details: {} };
    const started = { at: 2000, type: 'Started', message: 'Task started by driver exec', details: {} };
    const state = (s: string, events: unknown[]) => ({ t: { state: s, failed: false, restarts: 0, startedAt: 0, finishedAt: 0, events } });
    const older = { id: alloc!.id, clientStatus: 'pending', clientDescription: 'Setting up the allocation', taskStates: state('pending', [received]) };
    const newer = { id: alloc!.id, clientStatus: 'running', clientDescription: 'Tasks are running', taskStates: state('running', [received, started]) };
    await jobs.updateAllocations(alloc!.nodeId, [newer] as never);
    await jobs.updateAllocations(alloc!.nodeId, [older] as never);
    const now = store.snapshot().get('allocations', rowKey(alloc!.id))!;
    assert.equal(now.clientStatus, 'running');
    assert.equal(now.taskStates['t']!.events.length, 2);
    const failed = { at: 3000, type: 'Terminated', message: 'Exit Code: 1', details: {} };
    await jobs.updateAllocations(alloc!.nodeId, [{ ...newer, clientStatus: 'failed', taskStates: state('dead', [received, started, failed]) }] as never);
    assert.equal(store.snapshot().get('allocations', rowKey(alloc!.id))!.clientStatus, 'failed', 'a newer report still applies');
  });

  it('reschedules a failed allocation after the policy delay, on the injectable clock', async () => {
    seed();
    const worker = new EvalWorker({ store, jobs, clock, logger: silentLogger() });
    worker.start();
    try {
      await register({ id: 'w', groups: [{ name: 'g', reschedule: { attempts: 1, interval: '1h', unlimited: false, delay: '30s' }, tasks: [{ name: 't', driver: 'exec' }] }] });
      const [alloc] = store.snapshot().list('allocations');
      await jobs.updateAllocations(alloc!.nodeId, [{ id: alloc!.id, clientStatus: 'failed', clientDescription: 'exit 1' }]);
      await clock.waitForSleepers(1);
      assert.equal(store.snapshot().list('allocations').length, 1, 'not before the delay');
      await clock.advance(30_000);
      const afterDelay = await eventually('the rescheduled allocation', () => store.snapshot().list('allocations', { filter: (a) => a.desiredStatus === 'run' && a.clientStatus === 'pending' })[0]);
      assert.equal(afterDelay.previousAllocation, alloc!.id);
      assert.equal(afterDelay.rescheduleAttempts, 1);

      // Out of attempts: the second failure stays failed.
      await jobs.updateAllocations(afterDelay.nodeId, [{ id: afterDelay.id, clientStatus: 'failed' }]);
      await clock.advance(60_000);
      await settle(worker);
      assert.equal(store.snapshot().list('allocations').length, 2);
    } finally {
      await worker.stop();
    }
  });

  it('runs a system job on nodes as they join, and replaces allocations of a node that goes down', async () => {
    seed();
    const worker = new EvalWorker({ store, jobs, clock, logger: silentLogger() });
    worker.start();
    try {
      await register({ id: 'sys', type: 'system', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] });
      await register({ id: 'svc', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 100, memoryMb: 100 } }] }] });
      assert.equal(store.snapshot().list('allocations', { filter: (a) => a.jobId === 'sys' }).length, 3);
      store.writeNow((txn) => txn.put('nodes', testNode('n4')));
      await eventually('the system job on the new node', () => store.snapshot().list('allocations', { filter: (a) => a.jobId === 'sys' && a.nodeId === 'n4' })[0]);

      const svc = store.snapshot().list('allocations', { filter: (a) => a.jobId === 'svc' })[0]!;
      const node = store.snapshot().get('nodes', rowKey(svc.nodeId))!;
      store.writeNow((txn) => txn.put('nodes', { ...node, status: 'down' }));
      const replacement = await eventually('the replacement', () =>
        store.snapshot().list('allocations', { filter: (a) => a.jobId === 'svc' && a.previousAllocation === svc.id })[0],
      );
      assert.notEqual(replacement.nodeId, svc.nodeId);
      assert.equal(store.snapshot().get('allocations', rowKey(svc.id))!.clientStatus, 'lost');
    } finally {
      await worker.stop();
    }
  });

  it('retries a blocked evaluation when the claim holding it is released', async () => {
    seed();
    const worker = new EvalWorker({ store, jobs, clock, logger: silentLogger() });
    worker.start();
    try {
      store.writeNow((txn) =>
        txn.put('claims', {
          namespace: 'default',
          volumeId: 'data',
          pluginId: 'hostpath',
          externalVolumeId: 'ext-data',
          allocId: 'old-alloc',
          nodeId: 'n1',
          externalNodeId: 'ext-n1',
          mode: 'write',
          accessMode: 'single-node-writer',
          attachmentMode: 'file-system',
          state: 'taken',
          controllerPublish: 'none',
          publishContext: {},
          releaseReason: '',
          releaseAttempts: 0,
          lastError: '',
          claimTime: 0,
        }),
      );
      const { evaluation } = await register(csiJob());
      assert.equal(evaluation.status, 'blocked');
      store.writeNow((txn) => txn.delete('claims', rowKey('default', 'data', 'old-alloc')));
      const done = await eventually('the blocked evaluation to complete', () => store.snapshot().list('evaluations', { filter: (e) => e.id === evaluation.id && e.status === 'complete' })[0]);
      assert.equal(done.placed, 1);
    } finally {
      await worker.stop();
    }
  });

  it('retries a blocked evaluation when a batch allocation finishes and frees its capacity', async () => {
    store.writeNow((txn) => txn.put('nodes', testNode('solo')));
    const worker = new EvalWorker({ store, jobs, clock, logger: silentLogger() });
    await worker.start();
    try {
      const batch = (id: string) => ({ id, type: 'batch', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 600, memoryMb: 10 } }] }] });
      await register(batch('first'));
      const second = await register(batch('second'));
      assert.equal(second.evaluation.status, 'blocked', 'the node has 1000 MHz; the first job holds 600');
      const [first] = store.snapshot().list('allocations', { filter: (a) => a.jobId === 'first' });
      // The batch task ends on its own: desired status stays "run", the client reports it complete.
      await jobs.updateAllocations('solo', [{ id: first!.id, clientStatus: 'complete' }]);
      const done = await eventually('the blocked evaluation to place the second job', () =>
        store.snapshot().list('evaluations', { filter: (e) => e.id === second.evaluation.id && e.status === 'complete' })[0],
      );
      assert.equal(done.placed, 1);
    } finally {
      await worker.stop();
    }
  });

  it('places a system job again when it is resubmitted or its node restarts after its allocation finished: no wedged plugin job', async () => {
    seed();
    const nodes = new NodeService({ store, clock, logger: silentLogger() });
    const worker = new EvalWorker({ store, jobs, clock, logger: silentLogger() });
    await worker.start();
    try {
      const sys = { id: 'plugin', type: 'system', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] };
      await register(sys);
      const onN1 = () => store.snapshot().list('allocations', { filter: (a) => a.jobId === 'plugin' && a.nodeId === 'n1' });
      // The agent on n1 was drained (SIGINT): its allocation finished while still wanted.
      const [first] = onN1();
      await jobs.updateAllocations('n1', [{ id: first!.id, clientStatus: 'complete', clientDescription: 'drained' }]);
      await settle(worker);
      assert.equal(onN1().filter((a) => a.desiredStatus === 'run' && a.clientStatus === 'pending').length, 0, 'not replaced while nothing changed');

      // The agent starts again with its kept data dir: same node ID, registered again.
      const { id: _id, status: _s, statusDescription: _d, lastHeartbeat: _h, createIndex: _c, modifyIndex: _m, ...fingerprint } = testNode('n1');
      await nodes.register(fingerprint, { id: 'n1' });
      const again = await eventually('a new allocation of the system job on the restarted node', () =>
        onN1().find((a) => a.desiredStatus === 'run' && a.clientStatus === 'pending'),
      );
      assert.equal(again.previousAllocation, first!.id);
      assert.equal(store.snapshot().get('allocations', rowKey(first!.id))!.desiredStatus, 'stop');

      // It fails; an unchanged resubmission places it once more (and only once).
      await jobs.updateAllocations('n1', [{ id: again.id, clientStatus: 'failed', clientDescription: 'exit 1' }]);
      await settle(worker);
      const resubmitted = await register(sys);
      assert.equal(resubmitted.evaluation.placed, 1);
      const latest = onN1().find((a) => a.desiredStatus === 'run')!;
      assert.equal(latest.clientStatus, 'pending');
      assert.equal(latest.previousAllocation, again.id);
      await settle(worker);
      assert.equal(onN1().filter((a) => a.desiredStatus === 'run').length, 1, 'one allocation per node');
    } finally {
      await worker.stop();
    }
  });

  it('runs a service job again after its allocation failed with no reschedule left: resubmitted, changed, or purged and run again', async () => {
    seed();
    const spec = (env: Record<string, string> = {}) => ({
      id: 'svc',
      groups: [{ name: 'g', reschedule: { attempts: 0, unlimited: false }, tasks: [{ name: 't', driver: 'exec', env }] }],
    });
    const failLive = async (): Promise<string> => {
      const [live] = store.snapshot().list('allocations', { filter: (a) => a.jobId === 'svc' && a.desiredStatus === 'run' && a.clientStatus === 'pending' });
      assert.ok(live, 'a live allocation to fail');
      await jobs.updateAllocations(live.nodeId, [{ id: live.id, clientStatus: 'failed', clientDescription: 'exit 1' }]);
      return live.id;
    };
    await register(spec());
    const firstId = await failLive();
    // No attempts left: re-evaluating alone places nothing.
    assert.equal((await jobs.evaluate('default', 'svc', { trigger: 'alloc-failure', always: true })).evaluation!.placed, 0);

    const same = await register(spec());
    assert.equal(same.evaluation.placed, 1, 'an unchanged resubmission runs it again');
    const secondId = await failLive();
    assert.notEqual(secondId, firstId);

    const changed = await register(spec({ A: '1' }));
    assert.equal(changed.evaluation.placed, 1, 'a changed spec runs it again');
    await failLive();

    // Purged: its stopped allocations are gone from the allocation list, and the same ID runs again.
    await jobs.stop('default', 'svc', { purge: true });
    assert.deepEqual(store.snapshot().list('allocations', { filter: (a) => a.jobId === 'svc' }), []);
    const rerun = await register(spec());
    assert.equal(rerun.evaluation.placed, 1);
  });
});

/** Waits until the worker has handled every change written so far: what it would do about them is done. */
async function settle(worker: EvalWorker): Promise<void> {
  const target = store.latestIndex();
  await eventually(`the eval worker to handle the changes up to index ${target}`, () => worker.handledIndex >= target);
  await nextTurn();
}
