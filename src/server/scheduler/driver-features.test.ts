// A docker task with `privileged = true` goes only to a node whose docker
// driver allows privileged containers (`allow_privileged = true`, reported
// as driver.docker.privileged.enabled); with none, the evaluation says why.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describePlacementFailure, parseJobSpec, type JobSpec, type Node } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { placeGroup } from './placement.js';

function dockerJob(config: Record<string, unknown>): JobSpec {
  return parseJobSpec({
    id: 'plugin',
    groups: [{ name: 'nodes', count: 1, tasks: [{ name: 'plugin', driver: 'docker', config: { image: 'registry.local/hostpath:1', ...config }, resources: { cpuMhz: 10, memoryMb: 10 } }] }],
  });
}

/** A node with a healthy docker driver; `privileged` as the driver reports it (Nomad's plugin: the attribute only when allowed). */
function dockerNode(id: string, privileged: string | undefined, where: 'driver' | 'node' = 'driver'): Node {
  const attrs: Record<string, string> = privileged === undefined ? {} : { 'driver.docker.privileged.enabled': privileged };
  return testNode(id, {
    drivers: { docker: { detected: true, healthy: true, healthReason: 'healthy', networkModes: ['host', 'bridge', 'none', 'cni/*'], ...(where === 'driver' ? { attributes: attrs } : {}) } },
    attributes: where === 'node' ? { 'driver.docker': '1', ...attrs } : { 'driver.docker': '1' },
  });
}

function place(job: JobSpec, nodes: Node[]) {
  const group = job.groups[0]!;
  return placeGroup({ jobId: job.id, datacenters: ['*'], group, indexes: [0], nodes, usage: new Map(), volumes: new Map(), job, existing: [] });
}

describe('placement of privileged docker tasks', () => {
  it('places a privileged task on the node that allows privileged containers, not on the one that does not', () => {
    const r = place(dockerJob({ privileged: true }), [dockerNode('locked', undefined), dockerNode('open', 'true')]);
    assert.equal(r.failure, undefined);
    assert.deepEqual(r.placements.map((p) => p.nodeId), ['open']);
  });

  it('refuses it where no node allows them, with the reason in the failed placement', () => {
    const r = place(dockerJob({ privileged: true }), [dockerNode('a', undefined), dockerNode('b', 'false'), dockerNode('c', undefined, 'node')]);
    assert.equal(r.placements.length, 0);
    assert.ok(r.failure);
    assert.equal(
      describePlacementFailure(r.failure),
      '3 nodes did not allow privileged containers in driver "docker" (driver.docker.privileged.enabled is not true: allow_privileged is off)',
    );
  });

  it('reads the attribute from the node when the driver reports it there, and leaves unprivileged tasks alone', () => {
    assert.deepEqual(place(dockerJob({ privileged: true }), [dockerNode('n', 'true', 'node')]).placements.map((p) => p.nodeId), ['n']);
    assert.deepEqual(place(dockerJob({ privileged: false }), [dockerNode('n', undefined)]).placements.map((p) => p.nodeId), ['n']);
    assert.deepEqual(place(dockerJob({}), [dockerNode('n', undefined)]).placements.map((p) => p.nodeId), ['n']);
  });
});
