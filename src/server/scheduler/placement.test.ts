import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describePlacementFailure, parseJobSpec, type Node, type TaskGroup } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { emptyUsage, placeGroup, type NodeUsage, type PlacementVolume } from './placement.js';

function group(extra: Record<string, unknown> = {}, task: Record<string, unknown> = {}): TaskGroup {
  const job = parseJobSpec({
    id: 'j',
    groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 100, memoryMb: 100 }, ...task }], ...extra }],
  });
  return job.groups[0]!;
}

function volume(id: string, extra: Partial<PlacementVolume> = {}): PlacementVolume {
  return { id, pluginId: 'hostpath', accessMode: 'single-node-writer', topologies: [], schedulable: true, claims: [], ...extra };
}

const csiGroup = (extra: Record<string, unknown> = {}): TaskGroup =>
  group({ volumes: { data: { type: 'csi', source: 'vol', ...extra } } }, { volumeMounts: [{ volume: 'data', destination: '/data' }] });

function place(g: TaskGroup, nodes: Node[], opts: { indexes?: number[]; volumes?: PlacementVolume[]; usage?: Map<string, NodeUsage>; algorithm?: 'binpack' | 'spread' } = {}) {
  return placeGroup({
    jobId: 'j',
    datacenters: ['*'],
    group: g,
    indexes: opts.indexes ?? [0],
    nodes,
    usage: opts.usage ?? new Map(),
    volumes: new Map((opts.volumes ?? []).map((v) => [v.id, v])),
    ...(opts.algorithm ? { algorithm: opts.algorithm } : {}),
  });
}

describe('placement', () => {
  it('counts each reason a node was ruled out, as Nomad reports it', () => {
    const nodes = [
      testNode('a', { plugin: { id: 'hostpath', healthy: false } }),
      testNode('b'),
      testNode('c', { status: 'down' }),
      testNode('d', { drivers: {} }),
    ];
    const r = place(csiGroup(), nodes, { volumes: [volume('vol')] });
    assert.equal(r.placements.length, 0);
    assert.ok(r.failure);
    assert.equal(r.failure.unplaced, 1);
    assert.equal(r.failure.nodesEvaluated, 4);
    assert.deepEqual(r.failure.reasons, {
      'lacked a healthy node plugin for hostpath': 2,
      'were down': 1,
      'lacked the driver "exec"': 1,
    });
    assert.match(describePlacementFailure(r.failure), /^2 nodes lacked a healthy node plugin for hostpath/);
  });

  it('places only where the driver supports the network mode', () => {
    const nodes = [
      testNode('a', { drivers: { exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host'] } } }),
      testNode('b'),
    ];
    const r = place(group({ network: { mode: 'none' } }), nodes);
    assert.deepEqual(r.placements.map((p) => p.nodeId), ['b']);
  });

  it('places a task with memory_enforced only where its driver has cgroups, and says why not elsewhere', () => {
    const exec = (cgroups?: 'v1' | 'v2' | 'none') => ({
      exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host', 'none'] as Array<'host' | 'none'>, ...(cgroups ? { cgroups } : {}) },
    });
    const nodes = [testNode('a', { drivers: exec('none') }), testNode('b', { drivers: exec() }), testNode('c', { drivers: exec('v2') })];
    const enforced = group({}, { resources: { cpuMhz: 100, memoryMb: 100, memoryEnforced: true } });
    const r = place(enforced, nodes);
    assert.deepEqual(r.placements.map((p) => p.nodeId), ['c']);
    const none = place(enforced, nodes.slice(0, 2));
    assert.equal(none.placements.length, 0);
    assert.equal(none.failure?.reasons['could not enforce resources (no cgroups) for driver "exec"'], 2);
    // Without the flag any node will do.
    assert.equal(place(group(), nodes.slice(0, 1)).placements.length, 1);
  });

  it('never overcommits cpu or memory, and reports exhaustion', () => {
    const g = group({}, { resources: { cpuMhz: 400, memoryMb: 100 } });
    const r = place(g, [testNode('a'), testNode('b')], { indexes: [0, 1, 2, 3, 4] });
    assert.equal(r.placements.length, 4);
    assert.equal(r.failure?.unplaced, 1);
    assert.deepEqual(r.failure?.reasons, { 'exhausted cpu': 2 });
    assert.equal(r.failure?.nodesExhausted, 2);
  });

  it('bin-packs onto the fuller node', () => {
    const usage = new Map([['b', { ...emptyUsage(), cpuMhz: 500, memoryMb: 500 }]]);
    const r = place(group(), [testNode('a'), testNode('b'), testNode('c')], { usage });
    assert.equal(r.placements[0]!.nodeId, 'b');
  });

  it("with the scheduler configuration's spread algorithm, prefers the emptiest node", () => {
    const usage = new Map([
      ['a', { ...emptyUsage(), cpuMhz: 300, memoryMb: 300 }],
      ['b', { ...emptyUsage(), cpuMhz: 500, memoryMb: 500 }],
    ]);
    const r = place(group(), [testNode('a'), testNode('b'), testNode('c')], { usage, algorithm: 'spread' });
    assert.equal(r.placements[0]!.nodeId, 'c');
    assert.equal(place(group(), [testNode('a'), testNode('b'), testNode('c')], { usage, algorithm: 'binpack' }).placements[0]!.nodeId, 'b');
  });

  it('does not place past the plugin max volumes per node (scenario 10)', () => {
    const usage = new Map([['a', { ...emptyUsage(), volumes: new Map([['hostpath', new Set(['other'])]]) }]]);
    const nodes = [testNode('a', { plugin: { id: 'hostpath', max: 1 } }), testNode('b', { plugin: { id: 'hostpath', max: 1 } })];
    const r = place(csiGroup({ perAlloc: true }), nodes, {
      indexes: [0, 1, 2],
      usage,
      volumes: [volume('vol[0]'), volume('vol[1]'), volume('vol[2]')],
    });
    assert.deepEqual(r.placements.map((p) => p.nodeId), ['b']);
    assert.equal(r.failure?.unplaced, 2);
    assert.deepEqual(r.failure?.reasons, { 'reached the maximum number of volumes for plugin hostpath': 2 });
  });

  it('treats a node whose plugin answered RESOURCE_EXHAUSTED as full for new volumes (scenario 10)', () => {
    const nodes = [testNode('a', { plugin: { id: 'hostpath' } }), testNode('b', { plugin: { id: 'hostpath' } })];
    const r = place(csiGroup(), nodes, { volumes: [volume('vol', { exhaustedNodes: new Set(['a']) })] });
    assert.deepEqual(r.placements.map((p) => p.nodeId), ['b']);
    const none = place(csiGroup(), nodes, { volumes: [volume('vol', { exhaustedNodes: new Set(['a', 'b']) })] });
    assert.deepEqual(none.failure?.reasons, { 'reached the volume limit of plugin hostpath': 2 });
    assert.equal(none.failure?.nodesExhausted, 2);
  });

  it('honours the volume topology', () => {
    const nodes = [testNode('a', { plugin: { id: 'hostpath', zone: 'z1' } }), testNode('b', { plugin: { id: 'hostpath', zone: 'z2' } })];
    const r = place(csiGroup(), nodes, { volumes: [volume('vol', { topologies: [{ zone: 'z2' }] })] });
    assert.deepEqual(r.placements.map((p) => p.nodeId), ['b']);
  });

  it('gives a single-writer volume to one writer only, and readers of a single-node volume to its node', () => {
    const nodes = [testNode('a', { plugin: { id: 'hostpath' } }), testNode('b', { plugin: { id: 'hostpath' } })];
    const taken = volume('vol', { claims: [{ allocId: 'old', nodeId: 'a', mode: 'write' }] });
    const blocked = place(csiGroup(), nodes, { volumes: [taken] });
    assert.equal(blocked.placements.length, 0);
    assert.deepEqual(blocked.failure?.reasons, { 'found no free write claim on volume vol': 2 });

    // The allocation being replaced does not hold its own replacement back.
    const replacing = placeGroup({
      jobId: 'j',
      datacenters: ['*'],
      group: csiGroup(),
      indexes: [0],
      nodes,
      usage: new Map(),
      volumes: new Map([['vol', taken]]),
      replacing: new Set(['old']),
    });
    assert.equal(replacing.placements.length, 1);

    // Two writers in one run: the second finds the claim the first took.
    const two = place(csiGroup(), nodes, { indexes: [0, 1], volumes: [volume('vol')] });
    assert.equal(two.placements.length, 1);
    assert.equal(two.failure?.unplaced, 1);

    const readers = place(csiGroup({ readOnly: true, accessMode: 'single-node-reader-only' }), nodes, {
      volumes: [volume('vol', { accessMode: 'single-node-reader-only', claims: [{ allocId: 'r', nodeId: 'b', mode: 'read' }] })],
    });
    assert.deepEqual(readers.placements.map((p) => p.nodeId), ['b']);

    const multi = place(csiGroup({ accessMode: 'multi-node-multi-writer' }), nodes, {
      indexes: [0, 1, 2],
      volumes: [volume('vol', { accessMode: 'multi-node-multi-writer', claims: [{ allocId: 'x', nodeId: 'a', mode: 'write' }] })],
    });
    assert.equal(multi.placements.length, 3);
  });

  it('refuses a reader on a volume held by a single-node-writer claim, as claim admission does', () => {
    const nodes = [testNode('a', { plugin: { id: 'hostpath' } })];
    const held = volume('vol', {
      accessMode: 'single-node-reader-only',
      claims: [{ allocId: 'w', nodeId: 'a', mode: 'write', accessMode: 'single-node-writer', attachmentMode: 'file-system' }],
    });
    const r = place(csiGroup({ readOnly: true, accessMode: 'single-node-reader-only' }), nodes, { volumes: [held] });
    assert.equal(r.placements.length, 0);
    assert.deepEqual(r.failure?.reasons, { 'could not use volume vol, which is in use as single-node-writer/file-system': 1 });
  });

  it('spreads allocations of one job rather than stacking them', () => {
    const r = place(group(), [testNode('a'), testNode('b'), testNode('c')], { indexes: [0, 1, 2] });
    assert.deepEqual(new Set(r.placements.map((p) => p.nodeId)).size, 3);
  });
});
