import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJobSpec, type Allocation, type Job, type Node } from '../../structs/index.js';
import { reconcile, reconcileSystem } from './reconcile.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';

function job(spec: Record<string, unknown> = {}, extra: Partial<Job> = {}): Job {
  const s = parseJobSpec({
    id: 'web',
    groups: [{ name: 'g', count: 3, reschedule: { attempts: 2, delay: '30s' }, tasks: [{ name: 't', driver: 'exec' }] }],
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
    assert.deepEqual(r, { stop: [], place: [] });
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

    // Two reschedules within the interval (1h by default) use up the 2 attempts.
    const now = 10 ** 9;
    const first = alloc(2, { clientStatus: 'failed', desiredStatus: 'stop', createTime: now - 7_200_000 });
    const second = alloc(2, { clientStatus: 'failed', desiredStatus: 'stop', rescheduleAttempts: 1, previousAllocation: first.id, createTime: now - 600_000 });
    const third = alloc(2, { clientStatus: 'failed', rescheduleAttempts: 2, previousAllocation: second.id, createTime: now - 300_000 });
    const none = reconcile(job(), [alloc(0), alloc(1), first, second, third], up, now);
    assert.deepEqual(none, { stop: [], place: [] });
    // Once the older reschedule has left the interval, one attempt is free again.
    const later = reconcile(job(), [alloc(0), alloc(1), first, second, third], up, now + 3_000_000);
    assert.equal(later.place.length, 1);
    assert.equal(later.place[0]!.rescheduleAttempts, 3);
  });

  it('replaces allocations whose group changed, but not for a change elsewhere', () => {
    const allocs = [alloc(0), alloc(1), alloc(2)];
    const changed = reconcile(job({}, { version: 2, groupVersions: { g: 2 } }), allocs, up, 0);
    assert.equal(changed.place.length, 3);
    assert.ok(changed.place.every((p) => p.previousAllocation));
    const unchanged = reconcile(job({}, { version: 2, groupVersions: { g: 1 } }), allocs, up, 0);
    assert.deepEqual(unchanged, { stop: [], place: [] });
  });

  it('leaves a finished batch allocation alone', () => {
    const r = reconcile(job({ type: 'batch' }), [alloc(0, { clientStatus: 'complete' }), alloc(1), alloc(2)], up, 0);
    assert.deepEqual(r, { stop: [], place: [] });
  });

  it('runs a system job on every node that is up, including nodes that join later', () => {
    const sys = job({ type: 'system', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] });
    const first = reconcileSystem(sys, [], [testNode('n1'), testNode('n2'), testNode('n3', { status: 'down' })]);
    assert.deepEqual(first.missing.map((m) => m.nodeId), ['n1', 'n2']);
    const later = reconcileSystem(sys, [alloc(0, { nodeId: 'n1' }), alloc(0, { nodeId: 'n2' })], [testNode('n1'), testNode('n2'), testNode('n4')]);
    assert.deepEqual(later.missing.map((m) => m.nodeId), ['n4']);
    assert.equal(later.stop.length, 0);
  });
});
