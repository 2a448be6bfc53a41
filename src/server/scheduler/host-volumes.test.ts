import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describePlacementFailure, parseJobSpec, type HostVolume, type Node, type TaskGroup } from '../../structs/index.js';
import { testHostVolume, testNode } from '../../../test/support/scheduler-nodes.js';
import { HostVolumeChecker, type HostVolumeUse } from './host-volumes.js';
import { placeGroup } from './placement.js';

function group(volume: Record<string, unknown>): TaskGroup {
  const job = parseJobSpec({
    id: 'j',
    groups: [
      {
        name: 'g',
        count: 2,
        volumes: { d: { type: 'host', source: 'data', ...volume } },
        tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 10, memoryMb: 10 }, volumeMounts: [{ volume: 'd', destination: '/d' }] }],
      },
    ],
  });
  return job.groups[0]!;
}

const hostVolume = testHostVolume;

const withVolume = (id: string, volId: string): Node => testNode(id, { hostVolumes: { data: { path: `/v/${volId}`, readOnly: false, id: volId } } });

function place(g: TaskGroup, nodes: Node[], vols: HostVolume[], opts: { uses?: HostVolumeUse[]; sticky?: string[]; count?: number } = {}) {
  const hostVolumes = new HostVolumeChecker({
    group: g,
    volumes: new Map(vols.map((v) => [v.id, v])),
    nodes: new Map(nodes.map((n) => [n.id, n])),
    uses: opts.uses ?? [],
    unmetStickyVolumes: new Set(opts.sticky ?? []),
  });
  return placeGroup({ jobId: 'j', datacenters: ['*'], group: g, indexes: [...Array(opts.count ?? 1).keys()], nodes, usage: new Map(), volumes: new Map(), hostVolumes });
}

describe('host volume feasibility (Nomad HostVolumeChecker)', () => {
  it('places a group only on the node that has its dynamic host volume, with Nomad\'s reason for the others', () => {
    const nodes = [testNode('a', { hostVolumes: {} }), withVolume('b', 'v1'), testNode('c', { hostVolumes: {} })];
    const r = place(group({}), nodes, [hostVolume('v1', 'b')]);
    assert.deepEqual(r.placements.map((p) => p.nodeId), ['b']);
    const none = place(group({ source: 'data' }), [testNode('a', { hostVolumes: {} })], []);
    assert.equal(none.placements.length, 0);
    assert.match(describePlacementFailure(none.failure!), /Constraint "missing compatible host volumes" filtered 1 node/);
  });

  it('does not place on a volume that is not ready (its node no longer reports it)', () => {
    const node = testNode('b', { hostVolumes: { data: { path: '/other', readOnly: false, id: 'v-other' } } });
    assert.equal(place(group({}), [node], [hostVolume('v1', 'b')]).placements.length, 0);
  });

  it('checks the access mode: reader-only takes read-only requests, writer writes, single-writer one writer on the node', () => {
    const nodes = [withVolume('b', 'v1')];
    assert.equal(place(group({ accessMode: 'single-node-reader-only', readOnly: true }), nodes, [hostVolume('v1', 'b', 'single-node-reader-only')]).placements.length, 1);
    assert.equal(place(group({}), nodes, [hostVolume('v1', 'b', 'single-node-reader-only')]).placements.length, 0, 'a writer on a reader-only volume');
    const single = hostVolume('v1', 'b', 'single-node-single-writer');
    const g = group({ accessMode: 'single-node-single-writer' });
    assert.equal(place(g, nodes, [single], { count: 2 }).placements.length, 1, 'only one writer of the two is placed');
    assert.equal(place(g, nodes, [single], { uses: [{ nodeId: 'b', source: 'data', readOnly: false }] }).placements.length, 0, 'another writer runs there');
    assert.equal(place(group({ accessMode: 'single-node-multi-writer' }), nodes, [hostVolume('v1', 'b', 'single-node-multi-writer')], { count: 2 }).placements.length, 2);
  });

  it('keeps a sticky group on the volume its claim names, and refuses sticky on a static host volume', () => {
    const nodes = [withVolume('a', 'v1'), withVolume('b', 'v2')];
    const vols = [hostVolume('v1', 'a'), hostVolume('v2', 'b')];
    const r = place(group({ sticky: true }), nodes, vols, { sticky: ['v2'] });
    assert.deepEqual(r.placements.map((p) => p.nodeId), ['b']);
    const staticNode = testNode('s', { hostVolumes: { data: { path: '/srv', readOnly: false, id: '' } } });
    assert.equal(place(group({ sticky: true }), [staticNode], []).placements.length, 0);
    assert.equal(place(group({}), [staticNode], []).placements.length, 1, 'a static host volume without sticky');
  });

  it('takes a read-only static host volume for read-only requests only', () => {
    const node = testNode('s', { hostVolumes: { data: { path: '/srv', readOnly: true, id: '' } } });
    assert.equal(place(group({}), [node], []).placements.length, 0);
    assert.equal(place(group({ readOnly: true }), [node], []).placements.length, 1);
  });
});
