// The reconciler's update rules against the spec each allocation runs
// (jobAt): destructive vs in-place per group, allocations whose node no
// longer satisfies the job, and reverts that keep what already runs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../lib/index.js';
import { parseJobSpec, type Allocation, type Job, type Node } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { testAllocation } from '../../../test/support/server-rows.js';
import { emptyUsage } from './placement.js';
import { reconcile, reconcileSystem } from './reconcile.js';

const clock = new ManualClock(5_000_000);

const baseGroup = (extra: Record<string, unknown> = {}, task: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: 'web',
  count: 3,
  tasks: [{ name: 't', driver: 'exec', env: { V: '1' }, ...task }],
  ...extra,
});

/**
 * The job's versions, oldest first: each spec becomes version i. The
 * group versions are set as if every version were destructive, so that
 * only the comparison with the kept versions can keep an allocation.
 */
function versions(...specs: Array<Record<string, unknown>>): { job: Job; jobAt: (v: number) => Job | undefined } {
  const kept = specs.map((spec, version): Job => ({
    ...parseJobSpec({ id: 'shop', ...spec }),
    stop: false,
    status: 'running',
    version,
    groupVersions: { web: version },
    groupResourceVersions: { web: version },
    submitTime: 0,
    createIndex: 1,
    modifyIndex: 1,
  }));
  return { job: kept[kept.length - 1]!, jobAt: (v) => kept[v] };
}

let seq = 0;
function alloc(index: number, nodeId: string, jobVersion: number, extra: Partial<Allocation> = {}): Allocation {
  seq++;
  return testAllocation(`a${seq}`, nodeId, { jobId: 'shop', taskGroup: 'web', index, jobVersion, resources: { cpuMhz: 100, memoryMb: 300 }, createIndex: seq, modifyIndex: seq, ...extra });
}

const byId = (...list: Node[]): Map<string, Node> => new Map(list.map((n) => [n.id, n]));
const linux = { 'kernel.name': 'linux' };
const cluster = byId(testNode('n1', { attributes: linux }), testNode('n2', { attributes: linux }), testNode('n3', { attributes: { 'kernel.name': 'freebsd' }, datacenter: 'dc2' }));
const inPlace = (allocs: readonly Allocation[]): Array<{ allocId: string; group: string }> => allocs.map((a) => ({ allocId: a.id, group: 'web' }));

describe('reconcile: updates against the spec each allocation runs', () => {
  it('updates in place, without a stop, for a change of count, constraints, update or another group; replaces for env', () => {
    const edits: Array<Record<string, unknown>> = [
      { groups: [baseGroup({ count: 3, update: { maxParallel: 1 } })] },
      { groups: [baseGroup({ count: 3, constraints: [{ attribute: '${node.datacenter}', operator: 'regexp', value: 'dc' }] })] },
      { groups: [baseGroup(), { name: 'api', meta: { x: '2' }, tasks: [{ name: 'u', driver: 'exec' }] }] },
    ];
    for (const edit of edits) {
      const { job, jobAt } = versions({ groups: [baseGroup(), { name: 'api', tasks: [{ name: 'u', driver: 'exec' }] }] }, edit);
      const allocs = [alloc(0, 'n1', 0), alloc(1, 'n2', 0), alloc(2, 'n3', 0)];
      const r = reconcile(job, allocs, cluster, clock.now(), { jobAt });
      // (api has no allocation here: only its placement is asked.)
      assert.deepEqual([r.stop, r.place.filter((p) => p.group === 'web'), r.inPlace], [[], [], inPlace(allocs)], JSON.stringify(edit));
    }
    const { job, jobAt } = versions({ groups: [baseGroup()] }, { groups: [baseGroup({}, { env: { V: '2' } })] });
    const allocs = [alloc(0, 'n1', 0), alloc(1, 'n2', 0), alloc(2, 'n1', 0)];
    const r = reconcile(job, allocs, cluster, clock.now(), { jobAt });
    assert.deepEqual(r.stop.map((s) => [s.allocId, s.description]), allocs.map((a) => [a.id, 'job updated']));
    assert.deepEqual(r.place.map((p) => p.previousAllocation), allocs.map((a) => a.id));
    assert.deepEqual(r.inPlace, []);
  });

  it('stops and places again an allocation whose node no longer satisfies a new constraint, and keeps the others in place', () => {
    const { job, jobAt } = versions({ groups: [baseGroup()] }, { constraints: [{ attribute: '${attr.kernel.name}', value: 'linux' }], groups: [baseGroup()] });
    const [a0, a1, a2] = [alloc(0, 'n1', 0), alloc(1, 'n2', 0), alloc(2, 'n3', 0)];
    const r = reconcile(job, [a0!, a1!, a2!], cluster, clock.now(), { jobAt });
    assert.deepEqual(r.inPlace, inPlace([a0!, a1!]));
    assert.deepEqual(r.stop, [{ allocId: a2!.id, description: 'job updated: its node no longer satisfies constraint "${attr.kernel.name} = linux"', lost: false }]);
    assert.deepEqual(r.place, [{ group: 'web', index: 2, previousAllocation: a2!.id, rescheduleAttempts: 0 }]);
    // Applied (the replacement placed on a node that fits): nothing more to do.
    const after = [{ ...a0!, jobVersion: 1 }, { ...a1!, jobVersion: 1 }, { ...a2!, desiredStatus: 'stop' as const }, alloc(2, 'n1', 1)];
    assert.deepEqual(reconcile(job, after, cluster, clock.now(), { jobAt }), { stop: [], place: [], inPlace: [] });
  });

  it('moves allocations off a datacenter the job no longer names, a few at a time under its update block', () => {
    const group = baseGroup({ update: { maxParallel: 1 } });
    const { job, jobAt } = versions({ datacenters: ['dc1', 'dc2'], groups: [group] }, { datacenters: ['dc1'], groups: [group] });
    const allocs = [alloc(0, 'n3', 0), alloc(1, 'n3', 0), alloc(2, 'n1', 0)];
    const r = reconcile(job, allocs, cluster, clock.now(), { jobAt });
    assert.deepEqual(r.inPlace, inPlace([allocs[2]!]));
    assert.deepEqual(r.stop.map((s) => s.allocId), [allocs[0]!.id]);
    assert.match(r.stop[0]!.description, /datacenter "dc2" is not among the job's \(dc1\)/);
    assert.deepEqual(r.place.map((p) => p.index), [0]);
  });

  it('replaces only what differs from the version reverted to: allocations of that spec (an older version) are updated in place', () => {
    // v0 runs env V=1; v1 (V=2) rolled out halfway and failed; v2 reverts to v0's spec.
    const { job, jobAt } = versions({ groups: [baseGroup()] }, { groups: [baseGroup({}, { env: { V: '2' } })] }, { groups: [baseGroup()] });
    const old0 = alloc(0, 'n1', 0);
    const new1 = alloc(1, 'n2', 1);
    const old2 = alloc(2, 'n2', 0);
    const r = reconcile(job, [old0, new1, old2], cluster, clock.now(), { jobAt });
    assert.deepEqual(r.inPlace, inPlace([old0, old2]));
    assert.deepEqual(r.stop.map((s) => s.allocId), [new1.id]);
    assert.deepEqual(r.place.map((p) => [p.index, p.previousAllocation]), [[1, new1.id]]);
  });

  it('takes new resource values in place only where they fit, even when they come with a constraint change', () => {
    const { job, jobAt } = versions(
      { groups: [baseGroup()] },
      { constraints: [{ attribute: '${node.datacenter}', value: 'dc1' }], groups: [baseGroup({}, { resources: { cpuMhz: 100, memoryMb: 600 } })] },
    );
    const allocs = [alloc(0, 'n1', 0), alloc(1, 'n1', 0), alloc(2, 'n2', 0)];
    // n1 carries two 300 MB allocations of 1000 MB: one grows to 600 MB, the second would need 1200.
    const usage = new Map([['n1', { ...emptyUsage(), cpuMhz: 200, memoryMb: 600 }], ['n2', { ...emptyUsage(), cpuMhz: 100, memoryMb: 300 }]]);
    const r = reconcile(job, allocs, cluster, clock.now(), { jobAt, usage });
    assert.deepEqual(r.inPlace, inPlace([allocs[0]!, allocs[2]!]));
    assert.deepEqual(r.stop.map((s) => [s.allocId, s.description]), [[allocs[1]!.id, 'job updated']]);
  });

  it('stops a system job\'s allocation on a node that no longer satisfies the job, and places none there', () => {
    const sys = (spec: Record<string, unknown>): Record<string, unknown> => ({ type: 'system', groups: [baseGroup({ count: 1 })], ...spec });
    const { job, jobAt } = versions(sys({}), sys({ constraints: [{ attribute: '${attr.kernel.name}', value: 'linux' }] }));
    const allocs = [alloc(0, 'n1', 0), alloc(0, 'n2', 0), alloc(0, 'n3', 0)];
    const r = reconcileSystem(job, allocs, [...cluster.values()], { jobAt });
    assert.deepEqual(r.inPlace, inPlace(allocs.slice(0, 2)));
    assert.deepEqual(r.stop.map((s) => s.allocId), [allocs[2]!.id]);
    assert.match(r.stop[0]!.description, /no longer satisfies constraint/);
    assert.deepEqual(r.missing, []);
  });

  it('without the kept version of an allocation, falls back on the job\'s group versions', () => {
    const { job } = versions({ groups: [baseGroup()] }, { groups: [baseGroup()] });
    const allocs = [alloc(0, 'n1', 0), alloc(1, 'n2', 0), alloc(2, 'n1', 0)];
    // Version 1 is marked as a destructive change of the group: replaced.
    assert.equal(reconcile(job, allocs, cluster, clock.now(), { jobAt: () => undefined }).stop.length, 3);
    assert.deepEqual(reconcile({ ...job, groupVersions: { web: 0 }, groupResourceVersions: { web: 0 } }, allocs, cluster, clock.now()).inPlace, inPlace(allocs));
  });
});
