// Volumes whose plugin has a controller: validation at registration,
// ControllerPublish routed to controllers (with failover), docs/csi-rules.md
// scenarios 9, 10, 15 and 16, controller operations.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { CsiClient, VolumeCapability } from '../../csi/index.js';
import { csiNodeEligibility, withNodeInstances } from '../../structs/index.js';
import { rowKey } from '../state/index.js';
import { VolumeError } from './index.js';
import { Cluster } from '../../../test/support/server-cluster.js';
import { nextTurn } from '../../../test/support/eventually.js';

const fsCap = (accessMode: 'single-node-writer' | 'multi-node-multi-writer' = 'single-node-writer') => ({ accessMode, attachmentMode: 'file-system' as const });

function code(expected: string, pattern?: RegExp) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof VolumeError, `expected a VolumeError, got ${String(e)}`);
    assert.equal(e.code, expected, e.message);
    if (pattern) assert.match(e.message, pattern);
    return true;
  };
}

describe('volumes with a controller', () => {
  let c: Cluster;
  const logLines: string[] = [];
  /** External IDs of volumes that exist on both fake controllers. */
  const shared: string[] = [];

  before(async () => {
    const logger = pino(
      { level: 'trace' },
      new Writable({
        write(chunk, _enc, done) {
          logLines.push(String(chunk));
          done();
        },
      }),
    );
    // Two controller-only nodes and one worker. The fakes' node IDs all name
    // the worker, since a fake controller attaches only to its own node ID.
    c = await Cluster.start(
      [
        { id: 'ctrl-1', externalId: 'ext-w', roles: ['controller'] },
        { id: 'ctrl-2', externalId: 'ext-w', roles: ['controller'] },
        { id: 'node-w', externalId: 'ext-w', roles: ['node'] },
      ],
      { logger },
    );
    // Volumes that both controllers know (created in the same order, so with the same IDs).
    for (const node of ['ctrl-1', 'ctrl-2']) {
      const client = new CsiClient({ endpoint: c.fake(node).endpoint });
      for (const name of ['s1', 's2', 's3', 's4', 's5', 's6']) {
        const v = await client.createVolume({ name, volumeCapabilities: [VolumeCapability.mount('single-node-writer')] });
        if (node === 'ctrl-1') shared.push(v.volumeId);
      }
      await client.close();
    }
    for (const id of ['w1', 'w2', 'w3', 'w4']) await c.alloc(id, 'node-w');
  });
  after(() => c.close());

  /** The fake controller the router will try first. */
  const first = () => c.fake(c.router.candidates('fake')[0]!);
  const second = () => c.fake(c.router.candidates('fake')[1]!);

  const register = (id: string, externalId: string, extra: Record<string, unknown> = {}) =>
    c.volumes.register({ id, externalId, pluginId: 'fake', capabilities: [fsCap()], ...extra });

  it('the plugin is derived with its controllers, and needs ControllerPublish', () => {
    const snap = c.store.snapshot();
    const p = withNodeInstances(snap.get('plugins', rowKey('fake'))!, snap.list('nodes'));
    assert.deepEqual(Object.keys(p.controllers).sort(), ['ctrl-1', 'ctrl-2']);
    assert.deepEqual(Object.keys(p.nodes), ['node-w']);
    assert.equal(p.controllerRequired, true);
    assert.equal(p.nodes['node-w']!.externalNodeId, 'ext-w');
  });

  it('validates a registration through a controller, and reports the plugin message when it does not confirm (scenario 15)', async () => {
    const view = await register('valid', shared[0]!);
    assert.equal(view.schedulable, true);
    assert.equal(c.fake('ctrl-1').callsTo('ValidateVolumeCapabilities').length, 1);

    c.fake('ctrl-1').answerNext('ValidateVolumeCapabilities', { message: 'the backend serves this volume read-only' });
    await assert.rejects(register('unconfirmed', shared[1]!), code('INVALID', /not validated.*read-only/));

    // `confirmed` without the requested capability: not validated either.
    c.fake('ctrl-1').answerNext('ValidateVolumeCapabilities', {
      confirmed: { volumeCapabilities: [{ mount: {}, accessMode: { mode: 5 } }] },
    });
    await assert.rejects(register('partial', shared[1]!), code('INVALID', /requested but not confirmed/));
    assert.equal(c.volumes.get('default', 'partial'), undefined, 'nothing registered');

    await assert.rejects(register('missing', 'no-such-volume'), code('NOT_FOUND'));
    await assert.rejects(c.volumes.register({ id: 'x', externalId: 'y', pluginId: 'nope', capabilities: [fsCap()] }), (e: unknown) => {
      assert.ok(e instanceof VolumeError && e.code === 'INVALID' && e.field === 'pluginId');
      return true;
    });
    await assert.rejects(
      c.volumes.register({ id: 'x', externalId: 'y', pluginId: 'fake', capabilities: [{ accessMode: 'sometimes' as never, attachmentMode: 'file-system' }] }),
      (e: unknown) => e instanceof VolumeError && e.field === 'capabilities[0].accessMode',
    );
  });

  it('publishes a claim through a controller with the worker\'s external node ID, keeps the publish context, and unpublishes on release', async () => {
    await register('pub', shared[2]!);
    const ctrl = c.fake('ctrl-1');
    ctrl.clearCalls();
    const claim = await c.volumes.claim({ volumeId: 'pub', allocId: 'w1', mode: 'write' });
    assert.equal(claim.controllerPublish, 'published');
    assert.deepEqual(claim.publishContext, { devicePath: `/dev/fake/${shared[2]}` });
    const [publish] = ctrl.callsTo('ControllerPublishVolume');
    assert.equal(publish!.request['nodeId'], 'ext-w');
    assert.equal(publish!.request['volumeId'], shared[2]);

    await c.volumes.release('default', 'pub', 'w1');
    assert.equal(c.claimRow('pub', 'w1'), undefined);
    assert.equal(c.agent('node-w').callsOf('csi.node.detach').at(-1)?.volumeId, shared[2], 'the node was asked to unpublish/unstage');
    assert.equal(ctrl.callsTo('ControllerUnpublishVolume').length, 1);
    assert.equal(ctrl.controllerPublished.get(shared[2]!), undefined, 'detached on the controller');
  });

  it('moves to the other controller when one fails with a retryable error or is gone', async () => {
    await register('failover', shared[3]!);
    c.fake('ctrl-1').failNext('ControllerPublishVolume', 'UNAVAILABLE', 'backend restarting');
    const claim = await c.volumes.claim({ volumeId: 'failover', allocId: 'w1', mode: 'write' });
    assert.equal(claim.controllerPublish, 'published');
    assert.ok(c.fake('ctrl-2').controllerPublished.get(shared[3]!)?.has('ext-w'), 'ctrl-2 attached it');
    await c.volumes.release('default', 'failover', 'w1');

    c.agent('ctrl-1').disconnect();
    c.agent('ctrl-2').disconnect();
    await assert.rejects(c.volumes.claim({ volumeId: 'failover', allocId: 'w1', mode: 'write' }), (e: unknown) => {
      assert.ok(e instanceof VolumeError && e.code === 'UNAVAILABLE' && e.retryable, String(e));
      assert.match(e.message, /no healthy controller/);
      return true;
    });
    assert.equal(c.claimRow('failover', 'w1'), undefined, 'a publish that was never sent leaves no claim');
    c.agent('ctrl-2').connect();
    await c.volumes.claim({ volumeId: 'failover', allocId: 'w1', mode: 'write' });
    await c.volumes.release('default', 'failover', 'w1');
    c.agent('ctrl-1').connect();
  });

  it('sends one controller call at a time per plugin', async () => {
    await register('serial-a', shared[4]!);
    await register('serial-b', shared[5]!);
    const agents = [c.agent('ctrl-1'), c.agent('ctrl-2')];
    const publishes = (): number => agents.reduce((n, a) => n + a.callsOf('csi.controller.publish').length, 0);
    const before = publishes();
    for (const a of agents) a.pause();
    const both = Promise.all([
      c.volumes.claim({ volumeId: 'serial-a', allocId: 'w2', mode: 'write' }),
      c.volumes.claim({ volumeId: 'serial-b', allocId: 'w3', mode: 'write' }),
    ]);
    await c.until(() => publishes() > before, ['claims'], 'the first publish');
    // The window closes once both claims are admitted (their rows wait for the publish): from
    // there the second call reaches the controller within a turn unless the router holds it.
    await c.until(() => c.claimRow('serial-a', 'w2')?.controllerPublish === 'pending' && c.claimRow('serial-b', 'w3')?.controllerPublish === 'pending', ['claims'], 'both claims admitted');
    await nextTurn();
    assert.equal(publishes(), before + 1, 'the second waits for the first');
    for (const a of agents) a.resume();
    await both;
    assert.equal(publishes(), before + 2);
    await c.volumes.release('default', 'serial-a', 'w2');
    await c.volumes.release('default', 'serial-b', 'w3');
  });

  it('FAILED_PRECONDITION (attached elsewhere) fails the claim retryably and records no attachment (scenario 9)', async () => {
    const ctrl = first();
    const other = second();
    other.clearCalls();
    ctrl.clearCalls();
    ctrl.failNext('ControllerPublishVolume', 'FAILED_PRECONDITION', 'volume is attached to another node');
    await assert.rejects(c.volumes.claim({ volumeId: 'valid', allocId: 'w1', mode: 'write' }), (e: unknown) => {
      assert.ok(e instanceof VolumeError && e.code === 'CONFLICT' && e.retryable, String(e));
      assert.match(e.message, /attached elsewhere/);
      return true;
    });
    assert.equal(c.claimRow('valid', 'w1'), undefined, 'no claim recorded');
    assert.equal(other.callsTo('ControllerPublishVolume').length, 0, 'a final error is not tried elsewhere');
    // No unpublish can come later: an owed one is started, and its claim row kept, before the
    // claim rejects (an uncertain publish keeps the row until ControllerUnpublish confirms);
    // the row is gone.
    assert.equal(ctrl.callsTo('ControllerUnpublishVolume').length, 0, 'a final failure owes no unpublish');
    const claim = await c.volumes.claim({ volumeId: 'valid', allocId: 'w1', mode: 'write' });
    assert.equal(claim.controllerPublish, 'published', 'once detached elsewhere, the claim succeeds');
    await c.volumes.release('default', 'valid', 'w1');
  });

  it('RESOURCE_EXHAUSTED marks the node ineligible for the plugin until it re-registers, and the uncertain attach is undone (scenario 10)', async () => {
    for (const node of ['ctrl-1', 'ctrl-2']) c.fake(node).failNext('ControllerPublishVolume', 'RESOURCE_EXHAUSTED', 'node has too many volumes attached');
    const unpublishes = c.fake('ctrl-1').callsTo('ControllerUnpublishVolume').length + c.fake('ctrl-2').callsTo('ControllerUnpublishVolume').length;
    await assert.rejects(c.volumes.claim({ volumeId: 'valid', allocId: 'w4', mode: 'write' }), code('EXHAUSTED', /too many volumes/));
    const snap = c.store.snapshot();
    const plugin = withNodeInstances(snap.get('plugins', rowKey('fake'))!, snap.list('nodes'));
    assert.ok(plugin.exhaustedNodes['node-w'], 'recorded for placement');
    assert.deepEqual(csiNodeEligibility(plugin, 'node-w', 0), { eligible: false, reason: 'reached the volume limit of fake' });
    await c.until(() => c.claimRow('valid', 'w4') === undefined, ['claims'], 'the uncertain claim to be released');
    const after = c.fake('ctrl-1').callsTo('ControllerUnpublishVolume').length + c.fake('ctrl-2').callsTo('ControllerUnpublishVolume').length;
    assert.equal(after, unpublishes + 1, 'ControllerUnpublish sent for the uncertain attach');
    await assert.rejects(c.volumes.claim({ volumeId: 'valid', allocId: 'w4', mode: 'write' }), code('EXHAUSTED'));

    c.nodes.register(await c.agent('node-w').fingerprint(), { id: 'node-w' });
    assert.deepEqual(c.store.snapshot().get('plugins', rowKey('fake'))!.exhaustedNodes, {});
    await c.volumes.claim({ volumeId: 'valid', allocId: 'w4', mode: 'write' });
    await c.volumes.release('default', 'valid', 'w4');
  });

  it('never shows secrets or mount flags in reads, events, claims, errors or logs, yet sends them to the plugin (scenario 16)', async () => {
    const ctrl = first();
    ctrl.clearCalls();
    const view = await register('secret', shared[1]!, {
      secrets: { password: 's3cr3t-pw' },
      mountOptions: { fsType: 'ext4', mountFlags: ['password=hunter2'] },
      context: { apiToken: 'tok-123', zone: 'z1' },
    });
    const claim = await c.volumes.claim({ volumeId: 'secret', allocId: 'w1', mode: 'write' });
    const validate = ctrl.callsTo('ValidateVolumeCapabilities')[0]!;
    assert.deepEqual((validate.request['secrets'] as { reveal(): unknown }).reveal(), { password: 's3cr3t-pw' }, 'the plugin got the secrets');
    let failure = '';
    ctrl.answerNext('ValidateVolumeCapabilities', { message: 'wrong credentials' });
    await register('secret-2', shared[1]!, { secrets: { password: 's3cr3t-pw' }, mountOptions: { mountFlags: ['password=hunter2'] } }).catch(
      (e: unknown) => (failure = `${String(e)} ${JSON.stringify(e)}`),
    );
    assert.match(failure, /wrong credentials/);
    const everything = JSON.stringify([
      view,
      c.volumes.get('default', 'secret'),
      c.volumes.list(),
      claim,
      c.volumes.claims(),
      c.store.snapshot().events(0),
      failure,
      logLines,
    ]);
    for (const secret of ['s3cr3t-pw', 'hunter2', 'tok-123']) assert.ok(!everything.includes(secret), `${secret} leaked`);
    assert.deepEqual(view.secretNames, ['password']);
    assert.deepEqual(view.mountOptions.mountFlags, ['[REDACTED]']);
    assert.equal(view.context['zone'], 'z1');
    await c.volumes.release('default', 'secret', 'w1');
  });

  it('refuses to deregister a claimed volume unless forced, which releases the claims first', async () => {
    await c.volumes.claim({ volumeId: 'secret', allocId: 'w1', mode: 'write' });
    await assert.rejects(c.volumes.deregister('default', 'secret'), code('CONFLICT', /claim/));
    await c.volumes.deregister('default', 'secret', { force: true });
    assert.equal(c.volumes.get('default', 'secret'), undefined);
    assert.deepEqual(c.volumes.claims({ namespace: 'default', volumeId: 'secret' }), []);
    for (const n of ['ctrl-1', 'ctrl-2']) assert.equal(c.fake(n).controllerPublished.get(shared[1]!), undefined, 'detached before it was forgotten');
    await assert.rejects(c.volumes.deregister('default', 'secret'), code('NOT_FOUND'));
  });

  it('creates, snapshots, expands, lists and deletes volumes through the controller', async () => {
    const created = await c.volumes.create({ id: 'made', pluginId: 'fake', capabilities: [fsCap()], capacityMinBytes: 1 << 20 });
    assert.ok(created.externalId.startsWith('vol-'));
    assert.equal(created.capacityBytes, 1 << 20);
    const listed = await c.volumes.listPluginVolumes('fake');
    assert.ok(listed.some((v) => v.volume.volumeId === created.externalId));

    const snap = await c.volumes.createSnapshot('default', 'made', 'snap-1');
    assert.equal(snap.sourceVolumeId, created.externalId);
    assert.deepEqual((await c.volumes.listSnapshots('fake', { volumeId: 'made' })).map((s) => s.snapshotId), [snap.snapshotId]);
    await c.volumes.deleteSnapshot('fake', snap.snapshotId);
    assert.deepEqual(await c.volumes.listSnapshots('fake', { volumeId: 'made' }), []);

    const grown = await c.volumes.expand('default', 'made', { requiredBytes: 4 << 20 });
    assert.equal(grown.capacityBytes, 4 << 20);

    await c.volumes.claim({ volumeId: 'made', allocId: 'w1', mode: 'write' });
    await assert.rejects(c.volumes.delete('default', 'made'), code('CONFLICT'));
    await c.volumes.release('default', 'made', 'w1');
    await c.volumes.delete('default', 'made');
    assert.equal(c.volumes.get('default', 'made'), undefined);
    assert.equal(first().volumes.get(created.externalId), undefined, 'deleted on the plugin');
  });
});

describe('controller calls for a volume that lives on one node', () => {
  let c: Cluster;

  before(async () => {
    // Two nodes each run the plugin as a monolith, like hostpath: a volume is
    // known only to the controller on the node that made it.
    c = await Cluster.start([
      { id: 'node-a', externalId: 'ext-a', roles: ['controller', 'node'], plugin: { topology: { zone: 'a' } } },
      { id: 'node-b', externalId: 'ext-b', roles: ['controller', 'node'], plugin: { topology: { zone: 'b' } } },
    ]);
    await c.alloc('wb', 'node-b');
  });
  after(() => c.close());

  it("go to the controller on the volume's node, though the other sorts first", async () => {
    await c.volumes.create({ id: 'local', pluginId: 'fake', capabilities: [fsCap()], topologyRequest: { required: [{ zone: 'b' }] } });
    assert.equal(c.fake('node-b').callsTo('CreateVolume').length, 1, 'created where it was asked for');
    assert.equal(c.fake('node-a').callsTo('CreateVolume').length, 0);

    const claim = await c.volumes.claim({ volumeId: 'local', allocId: 'wb', mode: 'write' });
    assert.equal(claim.controllerPublish, 'published');
    assert.equal(c.fake('node-b').callsTo('ControllerPublishVolume').length, 1, 'published by the controller that knows the volume');
    assert.equal(c.fake('node-a').callsTo('ControllerPublishVolume').length, 0);

    await c.volumes.release('default', 'local', 'wb');
    assert.equal(c.fake('node-b').callsTo('ControllerUnpublishVolume').length, 1);
    await c.volumes.delete('default', 'local');
    assert.equal(c.fake('node-b').callsTo('DeleteVolume').length, 1);
    assert.equal(c.fake('node-a').calls.filter((x) => x.rpc.startsWith('Controller') && x.rpc !== 'ControllerGetCapabilities').length, 0, 'node-a was never asked');
  });
});
