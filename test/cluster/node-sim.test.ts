// A hundred simulated nodes (test/support/node-sim: client nodes that speak
// to the servers through the agent's own serverconn code, running no task)
// on three `berth agent --server` processes over a three-member etcd, and a
// fake CSI plugin whose controller one simulated node serves. In sequence:
//   - every node registers, reports the plugin, and holds its node
//     connection on the leader;
//   - a batch job of 300 allocations is placed, each allocation run by the
//     one node it was placed on, once, and all are reported complete;
//   - a batch job claims 20 CSI volumes (one per allocation): each is
//     published through the controller over the node connection to the
//     node of its allocation, then released and unpublished, and no claim
//     is left (on a loaded machine a leader change during a publish may
//     fail an allocation, which is replaced: what matters is that every
//     index completes and nothing stays attached);
//   - with a service job running, the leader is SIGKILLed: another server
//     leads, every node reconnects to it, and after every node heartbeated
//     a full TTL's worth more, no node was marked down and the service's
//     allocations are the same ones, running, none run twice.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AllocationListStub, CSIPlugin, CSIVolumeListStub, VolumeClaimListStub } from '../../src/api/index.js';
import { volumeRequest } from '../support/csi-api.js';
import { SIM_PLUGIN, SimCluster, simBatchJob, simServiceJob, simVolumeJob } from '../support/node-sim/index.js';
import { registration } from '../support/nomad-jobs.js';

const NODES = 100;
let c: SimCluster;

before(async () => {
  c = await SimCluster.start({ nodes: NODES, heartbeatTtl: '5s', leaseTtl: '2s', csi: true, taskRunMs: 50 });
});

after(async () => {
  await c?.close();
});

function terminal(a: AllocationListStub): boolean {
  return a.ClientStatus === 'complete' || a.ClientStatus === 'failed' || a.ClientStatus === 'lost';
}

describe('a hundred simulated nodes on three servers over etcd', () => {
  it('registers every node, with its CSI node plugin, connected to the leader', async () => {
    const nodes = await c.nodes();
    assert.equal(nodes.length, NODES);
    assert.ok(nodes.every((n) => n.Status === 'ready'));
    const leader = await c.allOnLeader();
    assert.equal(c.fleet.connectedCount(leader.url), NODES);
    const plugin = (await c.call<CSIPlugin>('GET', `/v1/plugin/csi/${SIM_PLUGIN}`)).body;
    assert.equal(plugin.NodesHealthy, NODES);
    assert.equal(plugin.ControllersHealthy, 1);
  });

  it('places a 300-allocation batch job and gets every allocation reported complete, each run once where it was placed', async () => {
    await c.callRetrying('PUT', '/v1/jobs', registration(simBatchJob('sim-batch', 300)));
    const allocs = await c.waitAllocs('sim-batch', (l) => l.length === 300 && l.every(terminal));
    assert.ok(allocs.every((a) => a.ClientStatus === 'complete'), 'every allocation completed');
    assert.equal(new Set(allocs.map((a) => a.Name)).size, 300, 'one allocation per name');
    for (const a of allocs) assert.deepEqual(c.fleet.started.get(a.ID), [a.NodeID], `${a.Name} ran once, on its node`);
  });

  it('claims, publishes, releases and unpublishes 20 CSI volumes through the simulated controller', async () => {
    for (let i = 0; i < 20; i++) {
      const id = `sv[${i}]`;
      await c.callRetrying(
        'PUT',
        `/v1/volume/csi/${encodeURIComponent(id)}/create`,
        volumeRequest(id, { pluginId: SIM_PLUGIN, name: `sv-${i}`, capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }] }),
      );
    }
    await c.callRetrying('PUT', '/v1/jobs', registration(simVolumeJob('sim-csi', 'sv', 20)));
    // Every index ends with one complete allocation. On a loaded machine a leader may change while a
    // claim is being published; its allocation may then fail and be replaced (a batch job reschedules).
    const allocs = await c.waitAllocs('sim-csi', (l) => l.every(terminal) && new Set(l.filter((a) => a.ClientStatus === 'complete').map((a) => a.Name)).size === 20, {
      signal: AbortSignal.timeout(300_000),
    });
    const complete = allocs.filter((a) => a.ClientStatus === 'complete');
    assert.equal(complete.length, 20, `one complete allocation per index; the others: ${allocs.filter((a) => a.ClientStatus !== 'complete').map((a) => `${a.Name}: ${a.ClientDescription}`).join('; ')}`);
    // Every claim released (a claim stays, in its release state, until its volume is unpublished everywhere).
    let index = 0;
    let claims: VolumeClaimListStub[] = [];
    const until = Date.now() + 300_000;
    for (;;) {
      const r = await c.call<VolumeClaimListStub[]>('GET', `/v1/volumes/csi/claims${index ? `?index=${index}&wait=5s` : ''}`);
      claims = r.body;
      if (claims.length === 0) break;
      assert.ok(Date.now() < until, `claims left after 300 s: ${JSON.stringify(claims)}`);
      index = r.index;
    }
    const volumes = (await c.call<CSIVolumeListStub[]>('GET', '/v1/volumes?type=csi')).body;
    assert.equal(volumes.length, 20);
    const fake = c.fake!;
    // Each volume published to the node its complete allocation ran on (the plugin's node ID of that simulated node).
    const nodeOf = new Map(c.simNodes.map((n, i) => [n.nodeId, `sim-ext-${i}`]));
    const published = fake.callsTo('ControllerPublishVolume');
    const lastPublish = new Map(published.map((p) => [String(p.request['volumeId']), String(p.request['nodeId'])]));
    for (const a of complete) {
      const v = volumes.find((x) => x.ID === `sv[${a.Name?.match(/\[(\d+)\]$/)?.[1]}]`);
      assert.equal(lastPublish.get(v?.ExternalID ?? ''), nodeOf.get(a.NodeID), `${a.Name}'s volume was published to its node`);
    }
    // Nothing stays attached: every publish is followed by an unpublish of that volume from that node.
    const signal = AbortSignal.timeout(120_000);
    const attached = (): string[] => {
      const open = new Map<string, number>();
      for (const call of fake.calls) {
        const key = `${String(call.request['volumeId'])} on ${String(call.request['nodeId'])}`;
        if (call.rpc === 'ControllerPublishVolume') open.set(key, 1);
        else if (call.rpc === 'ControllerUnpublishVolume') open.delete(key);
      }
      return [...open.keys()];
    };
    await c.fleet.until(() => attached().length === 0, signal).catch(() => assert.fail(`still attached after 120 s: ${attached().join(', ')}`));
  });

  it('survives a leader SIGKILL: every node reconnects to the new leader, none is marked down, no allocation is lost or run twice', async () => {
    await c.callRetrying('PUT', '/v1/jobs', registration(simServiceJob('sim-svc', 50)));
    const before = await c.waitAllocs('sim-svc', (l) => l.length === 50 && l.every((a) => a.ClientStatus === 'running'));
    const leader = await c.leader();
    await c.fleet.fresh();
    const heartbeats = c.fleet.heartbeatCounts();
    await leader.run.stop('SIGKILL');
    const next = await c.allOnLeader();
    assert.notEqual(next.name, leader.name);
    // A full TTL of heartbeats (one every third of it) from every node after the kill.
    await c.fleet.until(() => c.fleet.heartbeatCounts().every((n, i) => n >= (heartbeats[i] ?? 0) + 3));
    const nodes = await c.nodes(next);
    assert.equal(nodes.length, NODES);
    const down = nodes.filter((n) => n.Status !== 'ready' || n.StatusDescription !== 'registered');
    assert.deepEqual(down.map((n) => `${n.Name}: ${n.Status} (${n.StatusDescription})`), [], 'no node was marked down, even for a moment');
    const after = (await c.call<AllocationListStub[]>('GET', '/v1/job/sim-svc/allocations', undefined, next)).body;
    assert.deepEqual(after.map((a) => a.ID).sort(), before.map((a) => a.ID).sort(), 'the same allocations');
    assert.ok(after.every((a) => a.ClientStatus === 'running' && a.DesiredStatus === 'run'));
    assert.deepEqual(c.fleet.doubled(), [], 'no allocation ran twice');
  });
});
