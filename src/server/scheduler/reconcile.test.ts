import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJobSpec, type Allocation, type Job, type Node } from '../../structs/index.js';
import { emptyUsage, type NodeUsage } from './placement.js';
import { FENCED_DESCRIPTION, reconcile, reconcileSystem } from './reconcile.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';

function job(spec: Record<string, unknown> = {}, extra: Partial<Job> = {}): Job {
  const s = parseJobSpec({
    id: 'web',
    groups: [{ name: 'g', count: 3, reschedule: { attempts: 2, interval: '1h', unlimited: false, delay: '30s', delayFunction: 'constant' }, tasks: [{ name: 't', driver: 'exec' }] }],
    ...spec,
  });
  return { ...s, stop: false, status: 'running', version: 1, groupVersions: { g: 1 }, submitTime: 0, createIndex: 1, modifyIndex: 1, ...extra };
}

let seq = 0;
function alloc(index: number, extra: Partial<Allocation> = {}): Allocation {
  seq++;
  return {
    id: `a${seq}`,
    namespace: 'default',
    jobId: 'web',
    jobVersion: 1,
    taskGroup: 'g',
    index,
    nodeId: 'n1',
    desiredStatus: 'run',
    desiredDescription: '',
    clientStatus: 'running',
    clientDescription: '',
    taskStates: {},
    rescheduleAttempts: 0,
    createIndex: seq,
    modifyIndex: seq,
    createTime: 0,
    modifyTime: 0,
    ...extra,
  };
}

const nodes = (...list: Node[]): Map<string, Node> => new Map(list.map((n) => [n.id, n]));
const up = nodes(testNode('n1'), testNode('n2'));

describe('reconcile', () => {
  it('places every missing index of a new job', () => {
    const r = reconcile(job(), [], up, 0);
    assert.deepEqual(r.place.map((p) => p.index), [0, 1, 2]);
    assert.equal(r.stop.length, 0);
  });

  it('has nothing to do when the allocations match the spec', () => {
    const r = reconcile(job(), [alloc(0), alloc(1), alloc(2)], up, 0);
    assert.deepEqual(r, { stop: [], place: [], inPlace: [] });
  });

  it('stops the highest indexes when scaled down, and everything when the job stops', () => {
    const allocs = [alloc(0), alloc(1), alloc(2)];
    const down = reconcile(job({ groups: [{ name: 'g', count: 1, tasks: [{ name: 't', driver: 'exec' }] }] }), allocs, up, 0);
    assert.deepEqual(down.stop.map((s) => s.allocId).sort(), [allocs[1]!.id, allocs[2]!.id].sort());
    const stopped = reconcile(job({}, { stop: true }), allocs, up, 0);
    assert.equal(stopped.stop.length, 3);
    assert.ok(stopped.stop.every((s) => s.description === 'job stopped'));
    assert.equal(stopped.place.length, 0);
  });

  it('marks allocations on a down node lost and replaces them', () => {
    const lostNode = alloc(1, { nodeId: 'n2' });
    const r = reconcile(job(), [alloc(0), lostNode, alloc(2)], nodes(testNode('n1'), testNode('n2', { status: 'down' })), 0);
    assert.deepEqual(r.stop, [{ allocId: lostNode.id, description: 'node is down', lost: true }]);
    assert.deepEqual(r.place, [{ group: 'g', index: 1, previousAllocation: lostNode.id, rescheduleAttempts: 0 }]);
  });

  it('reschedules a failed allocation only after the policy delay, and only within its attempts', () => {
    const failed = alloc(2, { clientStatus: 'failed', modifyTime: 1000 });
    const early = reconcile(job(), [alloc(0), alloc(1), failed], up, 1000 + 29_999);
    assert.deepEqual(early.place, []);
    assert.equal(early.followUpAt, 31_000);

    const due = reconcile(job(), [alloc(0), alloc(1), failed], up, 31_000);
    assert.deepEqual(due.place, [{ group: 'g', index: 2, previousAllocation: failed.id, rescheduleAttempts: 1 }]);
    assert.equal(due.stop[0]!.allocId, failed.id);

    // Two reschedules within the interval (1h) use up the 2 attempts.
    const now = 10 ** 9;
    const first = alloc(2, { clientStatus: 'failed', desiredStatus: 'stop', createTime: now - 7_200_000 });
    const second = alloc(2, { clientStatus: 'failed', desiredStatus: 'stop', rescheduleAttempts: 1, previousAllocation: first.id, createTime: now - 600_000 });
    const third = alloc(2, { clientStatus: 'failed', rescheduleAttempts: 2, previousAllocation: second.id, createTime: now - 300_000 });
    const none = reconcile(job(), [alloc(0), alloc(1), first, second, third], up, now);
    assert.deepEqual(none, { stop: [], place: [], inPlace: [] });
    // Once the older reschedule has left the interval, one attempt is free again.
    const later = reconcile(job(), [alloc(0), alloc(1), first, second, third], up, now + 3_000_000);
    assert.equal(later.place.length, 1);
    assert.equal(later.place[0]!.rescheduleAttempts, 3);
  });

  it('replaces at once, without a reschedule delay or attempt, an allocation whose task its node stopped by fencing (the node lost its servers)', () => {
    const fencedState = { state: 'dead' as const, failed: true, restarts: 0, startedAt: 1, finishedAt: 2, events: [{ at: 2, type: 'Fenced', message: 'Task stopped on the node', details: {} }] };
    const fenced = alloc(2, { clientStatus: 'failed', modifyTime: 1000, taskStates: { t: fencedState } });
    const r = reconcile(job(), [alloc(0), alloc(1), fenced], up, 1001);
    assert.deepEqual(r.place, [{ group: 'g', index: 2, previousAllocation: fenced.id, rescheduleAttempts: 0 }]);
    assert.deepEqual(r.stop, [{ allocId: fenced.id, description: FENCED_DESCRIPTION, lost: false }]);
    assert.equal(r.followUpAt, undefined);
  });

  it('waits longer before each reschedule under an exponential delay function, up to max_delay', () => {
    const spec = { groups: [{ name: 'g', count: 1, reschedule: { attempts: 10, interval: '1h', unlimited: false, delay: '30s', delayFunction: 'exponential', maxDelay: '100s' }, tasks: [{ name: 't', driver: 'exec' }] }] };
    // The third reschedule of index 0 (two happened before): 30 s doubled twice, 120 s, capped at 100 s.
    const failed = alloc(0, { clientStatus: 'failed', rescheduleAttempts: 2, modifyTime: 1000 });
    const early = reconcile(job(spec), [failed], up, 1000 + 99_999);
    assert.deepEqual(early.place, []);
    assert.equal(early.followUpAt, 101_000);
    assert.equal(reconcile(job(spec), [failed], up, 101_000).place[0]?.rescheduleAttempts, 3);
  });

  it('replaces allocations whose group changed, but not for a change elsewhere', () => {
    const allocs = [alloc(0), alloc(1), alloc(2)];
    const changed = reconcile(job({}, { version: 2, groupVersions: { g: 2 } }), allocs, up, 0);
    assert.equal(changed.place.length, 3);
    assert.ok(changed.place.every((p) => p.previousAllocation));
    // Not replaced: brought to the new version in place (Nomad's in-place update), their node still fitting.
    const unchanged = reconcile(job({}, { version: 2, groupVersions: { g: 1 } }), allocs, up, 0);
    assert.deepEqual(unchanged, { stop: [], place: [], inPlace: allocs.map((a) => ({ allocId: a.id, group: 'g' })) });
  });

  it('leaves a finished batch allocation alone', () => {
    const r = reconcile(job({ type: 'batch' }), [alloc(0, { clientStatus: 'complete' }), alloc(1), alloc(2)], up, 0);
    assert.deepEqual(r, { stop: [], place: [], inPlace: [] });
  });

  it('runs a system job on every node that is up, including nodes that join later', () => {
    const sys = job({ type: 'system', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] });
    const first = reconcileSystem(sys, [], [testNode('n1'), testNode('n2'), testNode('n3', { status: 'down' })]);
    assert.deepEqual(first.missing.map((m) => m.nodeId), ['n1', 'n2']);
    const later = reconcileSystem(sys, [alloc(0, { nodeId: 'n1' }), alloc(0, { nodeId: 'n2' })], [testNode('n1'), testNode('n2'), testNode('n4')]);
    assert.deepEqual(later.missing.map((m) => m.nodeId), ['n4']);
    assert.equal(later.stop.length, 0);
  });

  describe('in-place updates (only tasks\' resource values changed)', () => {
    // Version 2 changed only resources (groupVersions stays at 1): the group now needs 200 MHz / 400 MB per allocation.
    const resized = (memoryMb: number): Job =>
      job({ groups: [{ name: 'g', count: 2, tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 200, memoryMb } }] }] }, {
        version: 2,
        groupVersions: { g: 1 },
        groupResourceVersions: { g: 2 },
      });
    const used = (memoryMb: number): Map<string, NodeUsage> => new Map([['n1', { ...emptyUsage(), cpuMhz: 200, memoryMb }]]);
    const running = (): Allocation[] => [alloc(0, { resources: { cpuMhz: 100, memoryMb: 100 } }), alloc(1, { resources: { cpuMhz: 100, memoryMb: 100 } })];

    it('updates live allocations in place when the new resources fit on their node, and counts them there', () => {
      const allocs = running();
      const usage = used(200);
      const r = reconcile(resized(400), allocs, up, 0, { usage });
      assert.deepEqual(r.inPlace, allocs.map((a) => ({ allocId: a.id, group: 'g' })));
      assert.deepEqual([r.stop, r.place], [[], []]);
      // 200 MB in use, each allocation grows from 100 to 400 MB.
      assert.equal(usage.get('n1')!.memoryMb, 800);
      assert.equal(usage.get('n1')!.cpuMhz, 400);
    });

    it('replaces an allocation whose new resources no longer fit on its node', () => {
      const allocs = running();
      const r = reconcile(resized(400), allocs, up, 0, { usage: used(500) });
      // A 1000 MB node with 500 MB used: 500 - 100 + 400 = 800 fits for the first; 800 - 100 + 400 = 1100 does not for the second.
      assert.deepEqual(r.inPlace, [{ allocId: allocs[0]!.id, group: 'g' }]);
      assert.deepEqual(r.stop, [{ allocId: allocs[1]!.id, description: 'job updated', lost: false }]);
      assert.deepEqual(r.place, [{ group: 'g', index: 1, previousAllocation: allocs[1]!.id, rescheduleAttempts: 0 }]);
    });

    it('replaces allocations when anything else of the group changed too, or without usage to check against', () => {
      const allocs = running();
      const other = reconcile({ ...resized(400), groupVersions: { g: 2 } }, allocs, up, 0, { usage: used(200) });
      assert.deepEqual(other.inPlace, []);
      assert.equal(other.stop.length, 2);
      assert.equal(other.place.length, 2);
      const blind = reconcile(resized(400), allocs, up, 0);
      assert.deepEqual(blind.inPlace, []);
      assert.equal(blind.stop.length, 2);
    });

    it('leaves allocations already at the new version alone', () => {
      const allocs = running().map((a) => ({ ...a, jobVersion: 2 }));
      assert.deepEqual(reconcile(resized(400), allocs, up, 0, { usage: used(200) }), { stop: [], place: [], inPlace: [] });
    });

    it('updates a system job\'s allocation in place on its node', () => {
      const sys = { ...resized(400), type: 'system' as const };
      const a = alloc(0, { resources: { cpuMhz: 100, memoryMb: 100 } });
      const r = reconcileSystem(sys, [a], [testNode('n1')], { usage: used(100) });
      assert.deepEqual(r.inPlace, [{ allocId: a.id, group: 'g' }]);
      assert.deepEqual([r.stop, r.missing], [[], []]);
    });
  });
});
