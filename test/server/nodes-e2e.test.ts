// Nodes coming and going, over the real HTTP API with the heartbeat TTL on
// an injected clock: a system job (a CSI plugin, as plugins usually are)
// follows the nodes; a service allocation on a node that misses its
// heartbeats is marked lost and replaced elsewhere.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../../src/lib/index.js';
import type * as Api from '../../src/api/index.js';
import type { AllocationListStub } from '../../src/api/index.js';
import type { Node } from '../../src/structs/index.js';
import { fingerprint, startServer, TOKENS, type Harness } from './_harness.js';
import { eventually } from '../support/eventually.js';

const clock = new ManualClock(1_700_000_000_000);
let h: Harness;
before(async () => {
  h = await startServer({ clock, heartbeatTtlMs: 30_000 });
});
after(async () => {
  await h.close();
});

async function register(name: string): Promise<string> {
  const res = await h.call<{ node: Node }>('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint: fingerprint(name) } });
  assert.equal(res.status, 200);
  return res.body.node.id;
}

async function allocsOf(jobId: string): Promise<AllocationListStub[]> {
  return (await h.call<AllocationListStub[]>('GET', `/v1/job/${jobId}/allocations`)).body;
}

describe('nodes joining and going down', () => {
  it('runs the plugin system job on every node and replaces what a down node ran', async () => {
    const n1 = await register('n1');
    const n2 = await register('n2');
    const plugin = await h.submit({
      job: {
        id: 'plugin-fake',
        type: 'system',
        groups: [{ name: 'plugin', tasks: [{ name: 'plugin', driver: 'exec', csiPlugin: { id: 'fake', type: 'monolith', mountDir: '/csi' } }] }],
      },
    });
    assert.equal(plugin.body.evaluation?.BerthPlaced, 2);
    const web = await h.submit({ job: { id: 'web', groups: [{ name: 'web', tasks: [{ name: 't', driver: 'exec' }] }] } });
    assert.equal(web.body.evaluation?.BerthPlaced, 1);
    const [first] = await allocsOf('web');
    const doomed = first!.NodeID;
    const survivor = doomed === n1 ? n2 : n1;

    // Only the survivor keeps heartbeating; the other misses the TTL.
    await clock.advance(20_000);
    const beat = await h.call<Record<string, unknown>>('POST', `/v1/node/${survivor}/heartbeat`, { token: TOKENS.node, body: {} });
    assert.equal(beat.status, 200);
    // As Nomad's Node.UpdateStatus: the TTL, not the node row (the whole cluster's heartbeats reach the leader).
    assert.deepEqual(beat.body, { heartbeatTtlMs: 30_000 });
    // 35 s of silence: past the TTL, but within the 10 s of grace after it (Nomad's heartbeat_grace).
    await clock.advance(15_000);
    assert.equal((await h.call<Api.Node>('GET', `/v1/node/${doomed}`)).body.Status, 'ready');
    await clock.advance(6_000);
    const down = await eventually('the node to be marked down', async () => {
      const n = await h.call<Api.Node>('GET', `/v1/node/${doomed}`);
      return n.body.Status === 'down' ? n.body : undefined;
    });
    assert.match(down.StatusDescription, /heartbeat/);
    assert.equal(down.Events?.at(-1)?.Message, 'Node heartbeat missed');

    const replacementId = await eventually('the replacement', async () => (await allocsOf('web')).find((a) => a.ID === first!.ID)?.NextAllocation || undefined);
    const replacement = (await allocsOf('web')).find((a) => a.ID === replacementId)!;
    assert.equal(replacement.NodeID, survivor);
    const lost = (await allocsOf('web')).find((a) => a.ID === first!.ID)!;
    assert.equal(lost.ClientStatus, 'lost');
    assert.equal(lost.DesiredStatus, 'stop');
    const onDoomed = (await allocsOf('plugin-fake')).find((a) => a.NodeID === doomed)!;
    assert.equal(onDoomed.ClientStatus, 'lost', 'system allocations on the down node are lost, not moved');

    // A node that joins gets the system job.
    const n3 = await register('n3');
    await eventually('the plugin on the new node', async () => (await allocsOf('plugin-fake')).find((a) => a.NodeID === n3));
    const live = (await allocsOf('plugin-fake')).filter((a) => a.DesiredStatus === 'run');
    assert.deepEqual(live.map((a) => a.NodeID).sort(), [survivor, n3].sort());
  });
});

describe('the heartbeat TTL of a server with max_heartbeats_per_second', () => {
  it('gives nodes a TTL long enough that all of them stay under the rate, at registration and with every heartbeat', async () => {
    const slow = await startServer({ heartbeatTtlMs: 10_000, maxHeartbeatsPerSecond: 0.1 });
    try {
      const reg = await slow.call<{ node: Node; heartbeatTtlMs: number }>('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint: fingerprint('r1') } });
      // One node heartbeating every third of its TTL at 0.1 a second: 30 s.
      assert.equal(reg.body.heartbeatTtlMs, 30_000);
      await slow.call('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint: fingerprint('r2') } });
      const beat = await slow.call<{ heartbeatTtlMs: number }>('POST', `/v1/node/${reg.body.node.id}/heartbeat`, { token: TOKENS.node, body: {} });
      assert.deepEqual(beat.body, { heartbeatTtlMs: 60_000 }, 'two nodes: twice as long');
    } finally {
      await slow.close();
    }
  });
});
