// The claim watcher's passes over a real SQLite store, a fake plugin and a
// fake node agent: after a write it looks only at the claims of the
// allocations and nodes the write touched, and at every claim again once
// FULL_PASS_MS of clock time went by.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CsiClient, VolumeCapability } from '../../csi/index.js';
import type { VolumeClaim } from '../../structs/index.js';
import { Cluster } from '../../../test/support/server-cluster.js';
import { nextTurn } from '../../../test/support/eventually.js';
import { ClaimWatcher, FULL_PASS_MS } from './claim-watcher.js';

describe('the claim watcher', () => {
  let c: Cluster;
  let watcher: ClaimWatcher;
  /** The allocations whose claims the watcher's passes looked at, in order. */
  const looked: string[] = [];

  beforeEach(async () => {
    c = await Cluster.start([{ id: 'node-w', externalId: 'ext-w', roles: ['controller', 'node'] }]);
    const client = new CsiClient({ endpoint: c.fake('node-w').endpoint });
    for (const id of ['v1', 'v2', 'v3']) {
      const { volumeId } = await client.createVolume({ name: id, volumeCapabilities: [VolumeCapability.mount('single-node-writer')] });
      await c.volumes.register({ id, externalId: volumeId, pluginId: 'fake', capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }] });
      await c.alloc(`a-${id}`, 'node-w');
      await c.volumes.claim({ volumeId: id, allocId: `a-${id}`, mode: 'write' });
    }
    await client.close();
    looked.length = 0;
    // The volumes' own release machine, counting the claims each pass asks about.
    const volumes = c.volumes;
    watcher = new ClaimWatcher({
      store: c.store,
      clock: c.clock,
      volumes: {
        releaseReason: (snap, claim: VolumeClaim) => (looked.push(claim.allocId), volumes.releaseReason(snap, claim)),
        releasing: (key) => volumes.releasing(key),
        releaseByKey: (key, reason, signal) => volumes.releaseByKey(key, reason, signal),
      },
    });
  });
  afterEach(async () => {
    await watcher.stop();
    await c.close();
  });

  it('looks at the claims a write concerns, and at every claim again after FULL_PASS_MS', async () => {
    await watcher.start();
    assert.deepEqual([...looked].sort(), ['a-v1', 'a-v2', 'a-v3'], 'the first pass looks at every claim');

    looked.length = 0;
    await c.alloc('a-v1', 'node-w', 'complete');
    await c.until(() => c.claimRow('v1', 'a-v1') === undefined, ['claims'], 'the finished allocation’s claim released');
    assert.ok(looked.length > 0 && looked.every((a) => a === 'a-v1'), `only a-v1's claim looked at: ${looked.join(', ')}`);

    // A write that concerns no claim: nothing looked at; past FULL_PASS_MS, every claim is.
    looked.length = 0;
    await c.alloc('other', 'node-w');
    await nextTurn();
    assert.deepEqual(looked, []);
    await c.clock.advance(FULL_PASS_MS);
    await c.alloc('other', 'node-w', 'complete');
    await nextTurn();
    assert.deepEqual([...looked].sort(), ['a-v2', 'a-v3']);
    assert.equal(c.claimRow('v2', 'a-v2')?.state, 'taken', 'running allocations keep their claims');
  });
});
