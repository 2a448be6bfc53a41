// A group in bridge or cni/<name> mode is placed only on a node that
// fingerprinted that network mode; the placement failure says why, with
// Nomad's "missing network". A node that does not list its modes (an older
// agent) is not ruled out.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJobSpec, type Node, type TaskGroup } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { placeGroup } from './placement.js';

const DRIVERS: Node['drivers'] = { exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host', 'none', 'bridge', 'cni/*'] } };

function group(mode: string): TaskGroup {
  const job = parseJobSpec({ id: 'j', groups: [{ name: 'g', network: { mode }, tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 100, memoryMb: 100 } }] }] });
  return job.groups[0]!;
}

function place(g: TaskGroup, nodes: Node[]) {
  return placeGroup({ jobId: 'j', datacenters: ['*'], group: g, indexes: [0], nodes, usage: new Map(), volumes: new Map() });
}

describe('network feasibility', () => {
  it('a bridge group goes to the node with the CNI plugins, never to one without; with none such, the failure says "missing network"', () => {
    const without = testNode('without', { drivers: DRIVERS, networkModes: ['host', 'none'] });
    const withCni = testNode('with', { drivers: DRIVERS, networkModes: ['host', 'none', 'bridge'] });
    for (let i = 0; i < 5; i++) assert.equal(place(group('bridge'), [without, withCni]).placements[0]?.nodeId, 'with');
    const r = place(group('bridge'), [without]);
    assert.equal(r.placements.length, 0);
    assert.deepEqual(r.failure?.reasons, { 'were missing network "bridge" (the CNI plugins a bridge needs are not in its cni_path)': 1 });
  });

  it('a cni/<name> group needs that network on the node; host groups go anywhere; an agent that does not say is not checked', () => {
    const n = testNode('n', { drivers: DRIVERS, networkModes: ['host', 'none', 'bridge', 'cni/mynet'] });
    assert.equal(place(group('cni/mynet'), [n]).placements.length, 1);
    assert.deepEqual(place(group('cni/other'), [n]).failure?.reasons, { 'were missing network "cni/other" (no CNI network "other" in its cni_config_dir)': 1 });
    assert.equal(place(group('host'), [testNode('h', { drivers: DRIVERS, networkModes: [] })]).placements.length, 1);
    assert.equal(place(group('bridge'), [testNode('old', { drivers: DRIVERS })]).placements.length, 1);
  });
});
