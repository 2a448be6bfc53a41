// Claim rules per access mode, on a node-only plugin (no controller), so
// the rules are tested on their own.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AccessMode } from '../../csi/index.js';
import { VolumeError } from './index.js';
import { Cluster } from '../../../test/support/server-cluster.js';

const nodeOnly = { pluginCapabilities: [] as [] };

function rejectsWith(code: string, pattern?: RegExp) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof VolumeError, `expected a VolumeError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (pattern) assert.match(e.message, pattern);
    return true;
  };
}

describe('claims per access mode', () => {
  let c: Cluster;
  before(async () => {
    c = await Cluster.start([
      { id: 'node-a', externalId: 'ext-a', roles: ['node'], plugin: nodeOnly },
      { id: 'node-b', externalId: 'ext-b', roles: ['node'], plugin: nodeOnly },
    ]);
    for (const [id, node] of [['a1', 'node-a'], ['a2', 'node-a'], ['b1', 'node-b'], ['b2', 'node-b']] as const) await c.alloc(id, node);
  });
  after(() => c.close());

  async function volume(id: string, accessMode: AccessMode): Promise<void> {
    await c.volumes.register({ id, externalId: `ext-${id}`, pluginId: 'fake', capabilities: [{ accessMode, attachmentMode: 'file-system' }] });
  }

  it('single-node-writer: one writer, all claims on one node; free again once released', async () => {
    await volume('snw', 'single-node-writer');
    const claim = await c.volumes.claim({ volumeId: 'snw', allocId: 'a1', mode: 'write' });
    assert.equal(claim.nodeId, 'node-a');
    assert.equal(claim.controllerPublish, 'none', 'a node-only plugin needs no ControllerPublish');
    assert.deepEqual(await c.volumes.claim({ volumeId: 'snw', allocId: 'a1', mode: 'write' }), claim, 'repeating a claim is safe');
    await assert.rejects(c.volumes.claim({ volumeId: 'snw', allocId: 'a2', mode: 'write' }), rejectsWith('CONFLICT', /already has a writer/));
    await assert.rejects(c.volumes.claim({ volumeId: 'snw', allocId: 'b1', mode: 'read' }), rejectsWith('CONFLICT', /claimed on node node-a/));
    await c.volumes.claim({ volumeId: 'snw', allocId: 'a2', mode: 'read' });

    await c.volumes.release('default', 'snw', 'a1');
    await c.volumes.release('default', 'snw', 'a2');
    assert.deepEqual(c.volumes.get('default', 'snw')!.claims, []);
    const again = await c.volumes.claim({ volumeId: 'snw', allocId: 'b1', mode: 'write' });
    assert.equal(again.nodeId, 'node-b', 'the volume can be claimed again elsewhere (scenario 18)');
    await c.volumes.release('default', 'snw', 'b1');
  });

  it('single-node-reader-only and multi-node-reader-only take no writers', async () => {
    await volume('snr', 'single-node-reader-only');
    await volume('mnr', 'multi-node-reader-only');
    await assert.rejects(c.volumes.claim({ volumeId: 'snr', allocId: 'a1', mode: 'write' }), rejectsWith('INVALID', /no write claims/));
    await assert.rejects(c.volumes.claim({ volumeId: 'mnr', allocId: 'a1', mode: 'write' }), rejectsWith('INVALID'));
    await c.volumes.claim({ volumeId: 'snr', allocId: 'a1', mode: 'read' });
    await assert.rejects(c.volumes.claim({ volumeId: 'snr', allocId: 'b1', mode: 'read' }), rejectsWith('CONFLICT'), 'single node');
    await c.volumes.claim({ volumeId: 'mnr', allocId: 'a1', mode: 'read' });
    await c.volumes.claim({ volumeId: 'mnr', allocId: 'b1', mode: 'read' });
    assert.equal(c.volumes.get('default', 'mnr')!.claims.length, 2);
    for (const [v, a] of [['snr', 'a1'], ['mnr', 'a1'], ['mnr', 'b1']] as const) await c.volumes.release('default', v, a);
  });

  it('multi-node-single-writer: one writer anywhere, any readers', async () => {
    await volume('mnsw', 'multi-node-single-writer');
    await c.volumes.claim({ volumeId: 'mnsw', allocId: 'a1', mode: 'write' });
    await c.volumes.claim({ volumeId: 'mnsw', allocId: 'b1', mode: 'read' });
    await c.volumes.claim({ volumeId: 'mnsw', allocId: 'a2', mode: 'read' });
    await assert.rejects(c.volumes.claim({ volumeId: 'mnsw', allocId: 'b2', mode: 'write' }), rejectsWith('CONFLICT', /writer/));
    for (const a of ['a1', 'b1', 'a2']) await c.volumes.release('default', 'mnsw', a);
  });

  it('multi-node-multi-writer: writers on every node', async () => {
    await volume('mnmw', 'multi-node-multi-writer');
    for (const a of ['a1', 'a2', 'b1', 'b2']) await c.volumes.claim({ volumeId: 'mnmw', allocId: a, mode: 'write' });
    assert.equal(c.volumes.get('default', 'mnmw')!.claims.length, 4);
    for (const a of ['a1', 'a2', 'b1', 'b2']) await c.volumes.release('default', 'mnmw', a);
  });

  it('refuses modes the volume does not offer, unknown volumes and allocations, finished allocations, and unschedulable plugins', async () => {
    await volume('modes', 'multi-node-multi-writer');
    await assert.rejects(
      c.volumes.claim({ volumeId: 'modes', allocId: 'a1', mode: 'write', accessMode: 'single-node-writer' }),
      rejectsWith('INVALID', /does not offer single-node-writer/),
    );
    await assert.rejects(
      c.volumes.claim({ volumeId: 'modes', allocId: 'a1', mode: 'write', attachmentMode: 'block-device' }),
      rejectsWith('INVALID'),
    );
    await assert.rejects(c.volumes.claim({ volumeId: 'nope', allocId: 'a1', mode: 'read' }), rejectsWith('NOT_FOUND'));
    await assert.rejects(c.volumes.claim({ volumeId: 'modes', allocId: 'ghost', mode: 'read' }), rejectsWith('NOT_FOUND'));
    await c.alloc('done', 'node-a', 'complete');
    await assert.rejects(c.volumes.claim({ volumeId: 'modes', allocId: 'done', mode: 'read' }), rejectsWith('INVALID', /not running/));

    // node-b's plugin turns unhealthy: claims there wait; node-a still works.
    c.nodes.heartbeat('node-b', await c.agent('node-b').fingerprint({ unhealthy: ['fake'] }));
    await assert.rejects(c.volumes.claim({ volumeId: 'modes', allocId: 'b1', mode: 'read' }), (e: unknown) => {
      assert.ok(e instanceof VolumeError && e.code === 'UNAVAILABLE' && e.retryable);
      return true;
    });
    assert.equal(c.volumes.get('default', 'modes')!.schedulable, true, 'a healthy node plugin is left on node-a');
    c.nodes.heartbeat('node-a', await c.agent('node-a').fingerprint({ unhealthy: ['fake'] }));
    assert.equal(c.volumes.get('default', 'modes')!.schedulable, false);
    c.nodes.heartbeat('node-a', await c.agent('node-a').fingerprint());
    c.nodes.heartbeat('node-b', await c.agent('node-b').fingerprint());
  });

  it('counts max volumes per node for the plugin (scenario 10)', async () => {
    const limited = await Cluster.start([{ id: 'node-m', externalId: 'ext-m', roles: ['node'], plugin: { ...nodeOnly, maxVolumesPerNode: 1 } }]);
    try {
      await limited.alloc('m1', 'node-m');
      await limited.alloc('m2', 'node-m');
      for (const id of ['v1', 'v2']) {
        await limited.volumes.register({ id, externalId: id, pluginId: 'fake', capabilities: [{ accessMode: 'multi-node-multi-writer', attachmentMode: 'file-system' }] });
      }
      await limited.volumes.claim({ volumeId: 'v1', allocId: 'm1', mode: 'write' });
      await limited.volumes.claim({ volumeId: 'v1', allocId: 'm2', mode: 'write' }, {});
      await assert.rejects(limited.volumes.claim({ volumeId: 'v2', allocId: 'm2', mode: 'write' }), rejectsWith('EXHAUSTED', /maximum/));
    } finally {
      await limited.close();
    }
  });
});
