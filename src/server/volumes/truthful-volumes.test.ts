// Volume operations that tell the truth: one plugin volume belongs to one
// Berth volume, snapshot delete deletes exactly the snapshot named or says
// it cannot, expand refuses a size that is no growth or is past
// capacity_max, and sizes past the CSI limits are the caller's mistake
// (INVALID naming the field), never a server failure.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { VolumeError } from './index.js';
import { Cluster } from '../../../test/support/server-cluster.js';

function refused(code: string, field: string | undefined, message: RegExp) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof VolumeError, `expected a VolumeError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.field, field, e.message);
    assert.match(e.message, message);
    return true;
  };
}

describe('volumes that tell the truth', () => {
  let c: Cluster;
  const fsCap = { accessMode: 'single-node-writer', attachmentMode: 'file-system' } as const;
  const GiB = 1024 ** 3;

  before(async () => {
    c = await Cluster.start([{ id: 'node-a', externalId: 'ext-a', roles: ['controller', 'node'] }]);
    await c.volumes.create({ id: 'data', pluginId: 'fake', capabilities: [fsCap], capacityMinBytes: GiB, capacityMaxBytes: 4 * GiB });
  });
  after(() => c.close());

  it('registering a plugin volume another Berth volume has is refused, naming the first', async () => {
    const ext = c.volumes.get('default', 'data')!.externalId;
    await assert.rejects(
      c.volumes.register({ id: 'data-again', externalId: ext, pluginId: 'fake', capabilities: [fsCap] }),
      refused('CONFLICT', 'externalId', new RegExp(`"${ext}" is already registered as volume data \\(namespace default\\)`)),
    );
    assert.equal(c.volumes.get('default', 'data-again'), undefined);
    // Re-registering the owner itself is still an update.
    await c.volumes.register({ id: 'data', externalId: ext, pluginId: 'fake', capabilities: [fsCap], capacityMaxBytes: 4 * GiB });
  });

  it('two concurrent registrations of one plugin volume: exactly one wins', async () => {
    const { volume } = await c.volumes.create({ id: 'spare', pluginId: 'fake', capabilities: [fsCap] }).then((v) => ({ volume: v }));
    await c.volumes.deregister('default', 'spare');
    const results = await Promise.allSettled(
      ['r1', 'r2', 'r3'].map((id) => c.volumes.register({ id, externalId: volume.externalId, pluginId: 'fake', capabilities: [fsCap] })),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, JSON.stringify(results.map((r) => r.status)));
    const owners = c.volumes.list().filter((v) => v.externalId === volume.externalId);
    assert.equal(owners.length, 1);
    await c.volumes.deregister('default', owners[0]!.id);
  });

  it('creating a volume whose name another volume of the plugin has is refused, and the other keeps its plugin volume', async () => {
    const ext = c.volumes.get('default', 'data')!.externalId;
    const deletes = c.fake('node-a').callsTo('DeleteVolume').length;
    await assert.rejects(
      c.volumes.create({ id: 'copy', name: 'data', pluginId: 'fake', capabilities: [fsCap], capacityMinBytes: GiB }),
      refused('CONFLICT', 'name', /volume data \(namespace default\) already has plugin fake's volume named "data"/),
    );
    assert.equal(c.volumes.get('default', 'copy'), undefined);
    assert.equal(c.volumes.get('default', 'data')?.externalId, ext);
    assert.equal(c.fake('node-a').callsTo('DeleteVolume').length, deletes, 'the other volume was not deleted');
  });

  it('a create that the plugin answers with a plugin volume a registered volume has is refused and deletes nothing', async () => {
    // "other" was registered under its own ID; the plugin's name for it is "shared".
    const made = await c.volumes.create({ id: 'made', name: 'shared', pluginId: 'fake', capabilities: [fsCap] });
    await c.volumes.deregister('default', 'made');
    await c.volumes.register({ id: 'other', externalId: made.externalId, pluginId: 'fake', capabilities: [fsCap] });
    const deletes = c.fake('node-a').callsTo('DeleteVolume').length;
    await assert.rejects(
      c.volumes.create({ id: 'twin', name: 'shared', pluginId: 'fake', capabilities: [fsCap] }),
      refused('CONFLICT', 'name', new RegExp(`"${made.externalId}" is already registered as volume other`)),
    );
    assert.equal(c.volumes.get('default', 'twin'), undefined);
    assert.equal(c.fake('node-a').callsTo('DeleteVolume').length, deletes);
  });

  it('snapshot delete of a prefix or a bogus ID is NOT_FOUND and the snapshot stays; the exact ID deletes it', async () => {
    const snap = await c.volumes.createSnapshot('default', 'data', 'nightly');
    const prefix = snap.snapshotId.slice(0, -1);
    for (const id of [prefix, 'no-such-snapshot']) {
      await assert.rejects(c.volumes.deleteSnapshot('fake', id), refused('NOT_FOUND', 'snapshotId', /has no snapshot with ID/));
    }
    assert.ok((await c.volumes.listSnapshots('fake')).some((s) => s.snapshotId === snap.snapshotId), 'the snapshot stays');
    assert.deepEqual(await c.volumes.deleteSnapshot('fake', snap.snapshotId), { snapshotId: snap.snapshotId, verified: true });
    assert.ok(!(await c.volumes.listSnapshots('fake')).some((s) => s.snapshotId === snap.snapshotId), 'the snapshot is gone');
  });

  it('expand to a size not larger than the capacity, or past capacity_max, is refused and nothing changes', async () => {
    const expands = c.fake('node-a').callsTo('ControllerExpandVolume').length;
    await assert.rejects(
      c.volumes.expand('default', 'data', { requiredBytes: 5 * 1024 * 1024 }),
      refused('INVALID', 'requiredBytes', /already has 1073741824 bytes \(1\.0 GiB\); expand takes a size larger than that/),
    );
    await assert.rejects(c.volumes.expand('default', 'data', { requiredBytes: GiB }), refused('INVALID', 'requiredBytes', /larger than that/));
    await assert.rejects(
      c.volumes.expand('default', 'data', { requiredBytes: 5 * GiB }),
      refused('INVALID', 'requiredBytes', /at most 4294967296 bytes \(4\.0 GiB, its capacity_max\)/),
    );
    assert.equal(c.fake('node-a').callsTo('ControllerExpandVolume').length, expands, 'no plugin call');
    assert.equal(c.volumes.get('default', 'data')?.capacityBytes, GiB);
    const grown = await c.volumes.expand('default', 'data', { requiredBytes: 2 * GiB });
    assert.equal(grown.capacityBytes, 2 * GiB);
    const call = c.fake('node-a').callsTo('ControllerExpandVolume').at(-1);
    assert.match(JSON.stringify(call), /4294967296/, 'capacity_max bounds what the plugin may give');
  });

  it('secrets over 4 KiB and a 300-byte external ID are INVALID naming the field, before any plugin call', async () => {
    const calls = c.fake('node-a').calls.length;
    await assert.rejects(
      c.volumes.register({ id: 'long', externalId: 'x'.repeat(300), pluginId: 'fake', capabilities: [fsCap] }),
      refused('INVALID', 'externalId', /^externalId is 300 bytes; the CSI limit is 128$/),
    );
    await assert.rejects(
      c.volumes.create({ id: 'secretive', pluginId: 'fake', capabilities: [fsCap], secrets: { key: 's'.repeat(5000) } }),
      refused('INVALID', 'secrets', /^secrets hold 5003 bytes; the CSI limit is 4096$/),
    );
    assert.equal(c.fake('node-a').calls.length, calls, 'no plugin call');
  });

  it('with no controller of the plugin running, says so instead of blaming its capabilities', async () => {
    await c.store.write((txn) => {
      const p = txn.get('plugins', 'fake')!;
      txn.put('plugins', { ...p, controllers: {}, controllersHealthy: 0, controllerCapabilities: [] });
    });
    await assert.rejects(
      c.volumes.create({ id: 'later', pluginId: 'fake', capabilities: [fsCap] }),
      refused('UNAVAILABLE', 'pluginId', /^plugin fake has no running controller; it cannot create volumes until one runs$/),
    );
  });
});

describe('volume detach under a live allocation', () => {
  let c: Cluster;
  const fsCap = { accessMode: 'single-node-writer', attachmentMode: 'file-system' } as const;

  before(async () => {
    c = await Cluster.start([
      { id: 'ctrl', externalId: 'ext-w', roles: ['controller'] },
      { id: 'node-w', externalId: 'ext-w', roles: ['node'] },
    ]);
    await c.volumes.create({ id: 'data', pluginId: 'fake', capabilities: [fsCap] });
    await c.alloc('a1', 'node-w');
    await c.volumes.claim({ volumeId: 'data', allocId: 'a1', mode: 'write' });
  });
  after(() => c.close());

  it('is refused, naming the allocation, and nothing is unpublished', async () => {
    await assert.rejects(
      c.volumes.detach('default', 'data', 'node-w'),
      refused('CONFLICT', undefined, /volume data is in use on node node-w by allocation a1 \(job .*, running\); stop it first, or detach with force/),
    );
    assert.equal(c.agent('node-w').callsOf('csi.node.detach').length, 0);
    assert.equal(c.claimRow('data', 'a1')?.state, 'taken');
  });

  it('with force, an allocation that does not stop in time leaves the volume attached (UNAVAILABLE, retryable)', async () => {
    await assert.rejects(
      c.volumes.detach('default', 'data', 'node-w', { force: true, stopWaitMs: 50, stopAllocation: async () => undefined }),
      refused('UNAVAILABLE', undefined, /allocation a1 did not stop within 0 s; nothing was detached/),
    );
    assert.equal(c.claimRow('data', 'a1')?.state, 'taken');
    assert.equal(c.agent('node-w').callsOf('csi.node.detach').length, 0);
  });

  it('with force, stops the allocation first, waits until it stopped, then detaches', async () => {
    const order: string[] = [];
    const detached = c.volumes.detach('default', 'data', 'node-w', {
      force: true,
      stopAllocation: async (allocId) => {
        order.push(`stop ${allocId}`);
        // The node stops the task and reports it, a moment later.
        setImmediate(() => void c.alloc(allocId, 'node-w', 'complete').then(() => order.push(`${allocId} complete`)));
      },
    });
    assert.deepEqual(await detached, { stoppedAllocations: ['a1'] });
    assert.deepEqual(order, ['stop a1', 'a1 complete']);
    assert.equal(c.agent('node-w').callsOf('csi.node.detach').length, 1);
    assert.equal(c.claimRow('data', 'a1'), undefined);
  });
});
