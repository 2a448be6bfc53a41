import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../lib/index.js';
import { parseJobSpec, type Allocation, type Job, type Node, type VolumeClaim } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { decideDrain, jobKey } from './drain-decisions.js';

function job(id: string, spec: Record<string, unknown>): Job {
  const s = parseJobSpec({ id, ...spec });
  return { ...s, stop: false, status: 'running', version: 1, groupVersions: {}, submitTime: 0, createIndex: 1, modifyIndex: 1 };
}

const web = job('web', {
  groups: [{ name: 'g', count: 3, migrate: { maxParallel: 1, healthCheck: 'task_states', minHealthyTimeMs: '10s' }, tasks: [{ name: 't', driver: 'exec' }] }],
});
const batch = job('report', { type: 'batch', groups: [{ name: 'g', count: 1, tasks: [{ name: 't', driver: 'exec' }] }] });
const plugin = job('plugin', {
  type: 'system',
  groups: [{ name: 'nodes', tasks: [{ name: 'p', driver: 'exec', csiPlugin: { id: 'hostpath', type: 'monolith' } }] }],
});
const logs = job('logs', { type: 'system', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] });

let seq = 0;
function alloc(j: Job, nodeId: string, extra: Partial<Allocation> = {}): Allocation {
  seq++;
  return {
    id: `a${seq}`,
    namespace: 'default',
    jobId: j.id,
    jobVersion: 1,
    taskGroup: j.groups[0]!.name,
    index: 0,
    nodeId,
    desiredStatus: 'run',
    desiredDescription: '',
    clientStatus: 'running',
    clientDescription: '',
    taskStates: { t: { state: 'running', failed: false, restarts: 0, startedAt: 0, finishedAt: 0, events: [] } },
    rescheduleAttempts: 0,
    createIndex: seq,
    modifyIndex: seq,
    createTime: 0,
    modifyTime: 0,
    ...extra,
  };
}

function claim(allocId: string, nodeId: string): VolumeClaim {
  return { namespace: 'default', volumeId: 'data', allocId, pluginId: 'hostpath', nodeId, state: 'taken' } as VolumeClaim;
}

function draining(deadlineMs = 3_600_000, ignoreSystemJobs = false, now = 0): Node {
  return { ...testNode('n1'), schedulingEligibility: 'ineligible', drainStrategy: { deadlineMs, forceDeadline: deadlineMs > 0 ? now + deadlineMs : deadlineMs < 0 ? now : 0, ignoreSystemJobs, startedAt: now } };
}

const jobs = new Map([web, batch, plugin, logs].map((j) => [jobKey(j.namespace, j.id), j]));
const decide = (node: Node, allocs: Allocation[], claims: VolumeClaim[], now: number) =>
  decideDrain({ node, allocs, jobs, claims, nodes: new Map([[node.id, node]]), now });

/** The world after the scheduler applied a migration: the old stopped, a replacement started on n2 at `now`. */
function migrated(allocs: Allocation[], ids: string[], now: number): Allocation[] {
  const out: Allocation[] = [];
  for (const a of allocs) {
    if (!ids.includes(a.id)) {
      out.push(a);
      continue;
    }
    out.push({ ...a, desiredStatus: 'stop', desiredTransition: { migrate: true }, clientStatus: 'complete' });
    out.push(alloc(web, 'n2', { index: a.index ?? 0, taskStates: { t: { state: 'running', failed: false, restarts: 0, startedAt: now, finishedAt: 0, events: [] } } }));
  }
  return out;
}


describe('decideDrain', () => {
  it('moves a service group one allocation at a time, each after its replacement has been healthy for min_healthy_time', async () => {
    const clock = new ManualClock(100_000);
    const node = draining(3_600_000, false, clock.now());
    let allocs = [0, 1, 2].map((i) => alloc(web, 'n1', { index: i }));

    const first = decide(node, allocs, [], clock.now());
    assert.equal(first.migrate.length, 1, 'max_parallel = 1');
    assert.equal(first.done, false);
    assert.match(first.message, /migrating 1 allocation; 2 allocations wait for their group's migrate max_parallel/);

    allocs = migrated(allocs, first.migrate, clock.now());
    const waiting = decide(node, allocs, [], clock.now());
    assert.deepEqual(waiting.migrate, [], 'the replacement is not healthy yet');
    assert.equal(waiting.recheckAt, clock.now() + 10_000, 'woken when the replacement becomes healthy');

    await clock.advance(10_000);
    const second = decide(node, allocs, [], clock.now());
    assert.equal(second.migrate.length, 1);
    assert.notEqual(second.migrate[0], first.migrate[0]);
  });

  it('leaves batch work to finish until the deadline, then forces everything off', async () => {
    const clock = new ManualClock(0);
    const node = draining(60_000, false, clock.now());
    const allocs = [alloc(batch, 'n1')];
    assert.deepEqual(decide(node, allocs, [], clock.now()).migrate, []);
    await clock.advance(60_000);
    assert.deepEqual(decide(node, allocs, [], clock.now()).migrate, [allocs[0]!.id]);
  });

  it('stops system allocations last, and a CSI plugin only once no claim on the node uses it', () => {
    const app = alloc(web, 'n1', { csiVolumes: [{ volumeId: 'data', pluginId: 'hostpath', readOnly: false }] });
    const pluginAlloc = alloc(plugin, 'n1', { taskStates: {} });
    const logAlloc = alloc(logs, 'n1');
    const node = draining(-1);
    const forced = decide(node, [app, pluginAlloc, logAlloc], [claim(app.id, 'n1')], 0);
    assert.ok(forced.migrate.includes(app.id));
    assert.ok(forced.migrate.includes(logAlloc.id), 'a forced drain stops other system allocations at once');
    assert.ok(!forced.migrate.includes(pluginAlloc.id), 'the plugin waits for its volume');
    assert.match(forced.message, /plugin hostpath keeps running until 1 volume claim on the node is released/);

    // The app stopped but its claim is still being released (NodeUnpublish, NodeUnstage): the plugin still runs.
    const stoppedApp = { ...app, desiredStatus: 'stop' as const, clientStatus: 'complete' as const };
    const stoppedLogs = { ...logAlloc, desiredStatus: 'stop' as const, clientStatus: 'complete' as const };
    const releasing = decide(node, [stoppedApp, pluginAlloc, stoppedLogs], [claim(app.id, 'n1')], 0);
    assert.deepEqual(releasing.migrate, []);
    assert.equal(releasing.done, false);

    // Released: now the plugin goes; once it stopped, the drain is done.
    const released = decide(node, [stoppedApp, pluginAlloc, stoppedLogs], [], 0);
    assert.deepEqual(released.migrate, [pluginAlloc.id]);
    const done = decide(node, [stoppedApp, { ...pluginAlloc, clientStatus: 'complete' }, stoppedLogs], [], 0);
    assert.equal(done.done, true);
    assert.equal(done.message, 'drain complete');
  });

  it('keeps system allocations with -ignore-system and is done once the rest left', () => {
    const node = draining(-1, true);
    const app = alloc(web, 'n1');
    const logAlloc = alloc(logs, 'n1');
    const first = decide(node, [app, logAlloc], [], 0);
    assert.deepEqual(first.migrate, [app.id]);
    const after = decide(node, [{ ...app, desiredStatus: 'stop', clientStatus: 'complete' }, logAlloc], [], 0);
    assert.deepEqual(after.migrate, []);
    assert.equal(after.done, true);
  });

  it('is done at once on an empty node, and not draining without a strategy', () => {
    assert.equal(decide(draining(), [], [], 0).done, true);
    assert.equal(decide(testNode('n1'), [alloc(web, 'n1')], [], 0).migrate.length, 0);
  });
});
