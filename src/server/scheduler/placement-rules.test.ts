// Placement with constraints, affinities and spreads: where allocations land and what the metrics say.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describePlacementFailure, parseJobSpec, type JobSpec, type Node } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { placeGroup } from './placement.js';

function jobOf(rules: Record<string, unknown>, count: number, groupRules: Record<string, unknown> = {}): JobSpec {
  return parseJobSpec({
    id: 'j',
    ...rules,
    groups: [{ name: 'g', count, ...groupRules, tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 10, memoryMb: 10 } }] }],
  });
}

// Three racks, two classes; big enough that resources never decide.
const cluster = (): Node[] => [
  testNode('a', { meta: { rack: 'r1' }, nodeClass: 'fast', resources: { cpuMhz: 10_000, memoryMb: 10_000 } }),
  testNode('b', { meta: { rack: 'r1' }, nodeClass: 'slow', resources: { cpuMhz: 10_000, memoryMb: 10_000 } }),
  testNode('c', { meta: { rack: 'r2' }, nodeClass: 'slow', resources: { cpuMhz: 10_000, memoryMb: 10_000 } }),
  testNode('d', { meta: { rack: 'r3' }, nodeClass: 'slow', resources: { cpuMhz: 10_000, memoryMb: 10_000 } }),
];

function place(job: JobSpec, nodes: Node[], existing: Array<{ nodeId: string; group: string }> = []) {
  const group = job.groups[0]!;
  return placeGroup({
    jobId: job.id,
    datacenters: ['*'],
    group,
    indexes: Array.from({ length: group.count }, (_, i) => i),
    nodes,
    usage: new Map(),
    volumes: new Map(),
    job,
    existing,
  });
}

const tally = (nodeIds: string[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const id of nodeIds) out[id] = (out[id] ?? 0) + 1;
  return out;
};

describe('placement with constraints', () => {
  it('places only on nodes that satisfy every constraint, and says which one filtered how many', () => {
    const r = place(jobOf({ constraints: [{ attribute: '${meta.rack}', value: 'r1' }] }, 3), cluster());
    assert.ok(r.placements.every((p) => p.nodeId === 'a' || p.nodeId === 'b'));
    const m = r.placements[0]!.metrics;
    assert.deepEqual(m.constraintFiltered, { '${meta.rack} = r1': 2 });
    assert.equal(m.nodesFiltered, 2);
    assert.equal(m.nodesEvaluated, 4);
    assert.deepEqual(m.classFiltered, { slow: 2 });
  });

  it('fails with Nomad\'s "Constraint ... filtered N nodes" when no node qualifies', () => {
    const r = place(jobOf({}, 1, { constraints: [{ attribute: '${node.class}', value: 'gpu' }] }), cluster());
    assert.equal(r.placements.length, 0);
    assert.ok(r.failure);
    assert.equal(describePlacementFailure(r.failure), 'Constraint "${node.class} = gpu" filtered 4 nodes');
    assert.deepEqual(r.failure.metrics?.constraintFiltered, { '${node.class} = gpu': 4 });
  });

  it('distinct_hosts puts at most one allocation on a node, counting the ones already running', () => {
    const r = place(jobOf({ constraints: [{ distinctHosts: true }] }, 4), cluster(), [{ nodeId: 'a', group: 'g' }]);
    assert.deepEqual(tally(r.placements.map((p) => p.nodeId)), { b: 1, c: 1, d: 1 });
    assert.ok(r.failure);
    assert.match(describePlacementFailure(r.failure), /Constraint "distinct_hosts" filtered 4 nodes/);
  });

  it('distinct_property allows `value` allocations per value of the property', () => {
    const r = place(jobOf({}, 6, { constraints: [{ distinctProperty: '${meta.rack}', value: '2' }] }), cluster());
    const byRack: Record<string, number> = {};
    const rackOf: Record<string, string> = { a: 'r1', b: 'r1', c: 'r2', d: 'r3' };
    for (const p of r.placements) byRack[rackOf[p.nodeId]!] = (byRack[rackOf[p.nodeId]!] ?? 0) + 1;
    assert.deepEqual(byRack, { r1: 2, r2: 2, r3: 2 });
    assert.equal(r.failure, undefined);
  });
});

describe('placement with affinities', () => {
  it('prefers nodes matching a positive affinity and avoids a negative one, and shows the score', () => {
    const r = place(jobOf({ affinities: [{ attribute: '${node.class}', value: 'fast', weight: 100 }] }, 1), cluster());
    assert.equal(r.placements[0]!.nodeId, 'a');
    const top = r.placements[0]!.metrics.scoreMetaData[0]!;
    assert.equal(top.nodeId, 'a');
    assert.equal(top.scores['node-affinity'], 1);
    assert.equal(top.normScore, (top.scores['binpack']! + 1) / 2, 'normalized: the mean of the scores that apply');

    const avoid = place(jobOf({ affinities: [{ attribute: '${meta.rack}', value: 'r1', weight: -50 }] }, 2), cluster());
    assert.ok(avoid.placements.every((p) => p.nodeId === 'c' || p.nodeId === 'd'));
  });
});

describe('placement with spread', () => {
  it('follows target percentages over the attribute', () => {
    // 10 allocations, 70% on r1 and 30% on r2: r3 gets none (no target left for it).
    const job = jobOf({}, 10, { spreads: [{ attribute: '${meta.rack}', targets: [{ value: 'r1', percent: 70 }, { value: 'r2', percent: 30 }] }] });
    const r = place(job, cluster());
    const rackOf: Record<string, string> = { a: 'r1', b: 'r1', c: 'r2', d: 'r3' };
    const byRack: Record<string, number> = {};
    for (const p of r.placements) byRack[rackOf[p.nodeId]!] = (byRack[rackOf[p.nodeId]!] ?? 0) + 1;
    assert.deepEqual(byRack, { r1: 7, r2: 3 });
  });

  it('spreads evenly without targets', () => {
    const job = jobOf({ spreads: [{ attribute: '${meta.rack}' }] }, 6);
    const r = place(job, cluster());
    const rackOf: Record<string, string> = { a: 'r1', b: 'r1', c: 'r2', d: 'r3' };
    const byRack: Record<string, number> = {};
    for (const p of r.placements) byRack[rackOf[p.nodeId]!] = (byRack[rackOf[p.nodeId]!] ?? 0) + 1;
    assert.deepEqual(byRack, { r1: 2, r2: 2, r3: 2 });
    assert.ok(r.placements.slice(1).some((p) => p.metrics.scoreMetaData.some((s) => 'allocation-spread' in s.scores)));
  });
});
