// Fencing across a partition: the write claim of a node the server cannot
// hear from is not handed on before the node has had time to stop its writer,
// unless the node says its allocation ended or an operator detaches the volume.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CsiClient, VolumeCapability } from '../../csi/index.js';
import { rowKey } from '../state/index.js';
import { Cluster } from '../../../test/support/server-cluster.js';
import { FENCE_MARGIN_MS } from './claim-fence.js';

const STOP_AFTER_MS = 60_000;
const KILL_MS = 3_000;

for (const publish of [true, false]) {
  describe(`the write claim of a silent node (${publish ? 'with' : 'without'} ControllerPublish)`, () => {
    let c: Cluster;

    beforeEach(async () => {
      c = await Cluster.start([
        { id: 'node-a', externalId: 'ext-a', roles: ['node'] },
        // The controller runs on the node that stays reachable.
        // (The fake controller knows one node ID: with it, both nodes report it.)
        { id: 'node-b', externalId: publish ? 'ext-a' : 'ext-b', roles: publish ? ['controller', 'node'] : ['node'] },
      ]);
      // The agents promise to stop writers 60 s after losing the server, with a 3 s kill timeout.
      for (const id of ['node-a', 'node-b']) {
        await c.nodes.register({ ...(await c.agent(id).fingerprint()), stopAfterDisconnectMs: STOP_AFTER_MS, killTimeoutMs: KILL_MS }, { id });
      }
      let externalId = 'vol-data';
      if (publish) {
        const client = new CsiClient({ endpoint: c.fake('node-b').endpoint });
        externalId = (await client.createVolume({ name: 'data', volumeCapabilities: [VolumeCapability.mount('single-node-writer')] })).volumeId;
        await client.close();
      }
      await c.volumes.register({ id: 'data', externalId, pluginId: 'fake', capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }] });
      await c.alloc('old', 'node-a');
      await c.volumes.claim({ volumeId: 'data', allocId: 'old', mode: 'write' });
      await c.watcher.start();
    });
    afterEach(() => c.close());

    /** The node goes silent: marked down, its allocation lost (as the reconciler does), a replacement placed on node-b. */
    async function partition(): Promise<number> {
      const lastHeard = c.clock.now();
      await c.clock.advance(31_000);
      await c.nodes.markDown('node-a', 'missed heartbeats for 31 s');
      await c.store.write((txn) => {
        const a = txn.get('allocations', rowKey('old'))!;
        txn.put('allocations', { ...a, desiredStatus: 'stop', clientStatus: 'lost', clientDescription: 'node is down' });
      });
      await c.alloc('new', 'node-b');
      return lastHeard;
    }

    it('keeps the claim, says until when and why, refuses the replacement, and frees it once the fence ends', async () => {
      const lastHeard = await partition();
      const until = lastHeard + STOP_AFTER_MS + KILL_MS + FENCE_MARGIN_MS;
      await c.until(() => c.claimRow('data', 'old')?.fencedUntil !== undefined, ['claims'], 'the fence recorded on the claim');
      const row = c.claimRow('data', 'old')!;
      assert.equal(row.state, 'taken');
      assert.equal(row.fencedUntil, until);
      assert.match(row.fenceReason!, /node node-a .* was last heard from at .*stop after disconnect 60 s \+ kill timeout 3 s \+ margin 5 s/);
      assert.ok(c.volumes.claims({ volumeId: 'data' }).some((cl) => cl.fencedUntil === until), 'the API shows it');

      await assert.rejects(c.volumes.claim({ volumeId: 'data', allocId: 'new', mode: 'write' }), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'CONFLICT');
        assert.match(err.message, /claimed on node node-a \(its node is silent: held until \d{4}-/);
        return true;
      });

      // A moment before the end: still held.
      await c.clock.advance(until - c.clock.now() - 1);
      assert.equal(c.claimRow('data', 'old')?.state, 'taken');
      await c.clock.advance(1);
      await c.until(() => c.claimRow('data', 'old') === undefined, ['claims'], 'the fenced claim released');
      assert.equal(c.agent('node-a').callsOf('csi.node.detach').length, 0, 'the down node is not asked');
      if (publish) assert.equal(c.fake('node-b').controllerPublished.get(c.store.snapshot().get('volumes', rowKey('default', 'data'))!.externalId)?.has('ext-a') ?? false, false);
      await c.volumes.claim({ volumeId: 'data', allocId: 'new', mode: 'write' });
    });

    it('frees it at once when the node comes back and reports its allocation ended', async () => {
      await partition();
      await c.until(() => c.claimRow('data', 'old')?.fencedUntil !== undefined, ['claims'], 'the fence');
      await c.nodes.heartbeat('node-a');
      await c.store.write((txn) => {
        const a = txn.get('allocations', rowKey('old'))!;
        txn.put('allocations', { ...a, clientStatus: 'complete', clientDescription: 'stopped' });
      });
      await c.until(() => c.claimRow('data', 'old') === undefined, ['claims'], 'the claim released on the node\'s word');
      assert.equal(c.agent('node-a').callsOf('csi.node.detach').length, 1, 'the node that is back unpublishes');
    });

    it('frees it at once when an operator detaches the volume from the silent node', async () => {
      await partition();
      await c.until(() => c.claimRow('data', 'old')?.fencedUntil !== undefined, ['claims'], 'the fence');
      await c.volumes.detach('default', 'data', 'node-a');
      assert.equal(c.claimRow('data', 'old'), undefined);
      await c.volumes.claim({ volumeId: 'data', allocId: 'new', mode: 'write' });
    });
  });
}

describe('a node that promised nothing (an agent without stop-after-disconnect)', () => {
  it('has its claims released when it is marked down, as before', async () => {
    const c = await Cluster.start([{ id: 'node-a', externalId: 'ext-a', roles: ['node'] }]);
    try {
      await c.volumes.register({ id: 'data', externalId: 'vol-data', pluginId: 'fake', capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }] });
      await c.alloc('old', 'node-a');
      await c.volumes.claim({ volumeId: 'data', allocId: 'old', mode: 'write' });
      await c.watcher.start();
      await c.nodes.markDown('node-a', 'missed heartbeats');
      await c.until(() => c.claimRow('data', 'old') === undefined, ['claims'], 'the release');
    } finally {
      await c.close();
    }
  });
});
