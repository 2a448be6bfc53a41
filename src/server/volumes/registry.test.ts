// The volume registry's edges as the HTTP API shows them: a bad request is
// refused with INVALID naming its field before any plugin call, and a
// plugin's paged listing survives a stale paging token.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { VolumeError } from './index.js';
import { Cluster } from '../../../test/support/server-cluster.js';

function invalid(field: string, message: string) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof VolumeError, `expected a VolumeError, got ${String(e)}`);
    assert.equal(e.code, 'INVALID', e.message);
    assert.equal(e.field, field);
    assert.equal(e.message, message);
    return true;
  };
}

describe('volume registry', () => {
  let c: Cluster;
  const fsCap = { accessMode: 'single-node-writer', attachmentMode: 'file-system' } as const;

  before(async () => {
    c = await Cluster.start([{ id: 'node-a', externalId: 'ext-a', roles: ['controller', 'node'] }]);
    await c.volumes.create({ id: 'data', pluginId: 'fake', capabilities: [fsCap] });
  });
  after(() => c.close());

  it('refuses bad input naming the field, and calls no plugin', async () => {
    const calls = c.fake('node-a').calls.length;
    await assert.rejects(
      c.volumes.register({ id: 'x', externalId: 'y', pluginId: 'fake', capabilities: [fsCap], capacityMinBytes: -1 }),
      invalid('capacityMinBytes', 'capacityMinBytes must be a whole number of bytes'),
    );
    await assert.rejects(
      c.volumes.create({ id: 'x', pluginId: 'fake', capabilities: [fsCap], secrets: { password: 1 as never } }),
      invalid('secrets', 'secrets must map strings to strings'),
    );
    await assert.rejects(c.volumes.expand('default', 'data', { requiredBytes: 0 }), invalid('requiredBytes', 'requiredBytes must be positive'));
    await assert.rejects(
      c.volumes.expand('default', 'data', { requiredBytes: 'big' as never }),
      invalid('requiredBytes', 'requiredBytes must be a whole number of bytes'),
    );
    await assert.rejects(
      c.volumes.expand('default', 'data', { requiredBytes: 1 << 20, limitBytes: 0.5 }),
      invalid('limitBytes', 'limitBytes must be a whole number of bytes'),
    );
    await assert.rejects(
      c.volumes.createSnapshot('default', 'data', 'snap', { parameters: { keep: true as never } }),
      invalid('parameters', 'parameters must map strings to strings'),
    );
    await assert.rejects(c.volumes.createSnapshot('default', 'data', ''), invalid('name', 'name is required'));
    await assert.rejects(c.volumes.deleteSnapshot('fake', 'snap-1', { secrets: 'pw' as never }), invalid('secrets', 'secrets must map strings to strings'));
    assert.equal(c.fake('node-a').calls.length, calls, 'no plugin call');
  });

  it('starts a paged listing again when the plugin says its token went stale (ABORTED)', async () => {
    const first = await c.volumes.createSnapshot('default', 'data', 'snap-a');
    c.fake('node-a').failNext('ListSnapshots', 'ABORTED', 'token expired');
    const listed = await c.volumes.listSnapshots('fake', { volumeId: 'data' });
    assert.deepEqual(listed.map((s) => s.snapshotId), [first.snapshotId]);
    assert.equal(c.fake('node-a').callsTo('ListSnapshots').length, 2, 'asked again from the top');
    await c.volumes.deleteSnapshot('fake', first.snapshotId);
  });
});
