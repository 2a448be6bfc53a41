// The release state machine, interrupted at every step by a server restart
// (new services over the same SQLite file) and resumed by the claim watcher;
// the watcher against allocations that stop or vanish and nodes that go down.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CsiClient, VolumeCapability } from '../../csi/index.js';
import type { ClaimState } from '../../structs/index.js';
import { rowKey } from '../state/index.js';
import { Cluster } from '../../../test/support/server-cluster.js';
import { nextTurn } from '../../../test/support/eventually.js';

describe('claim release', () => {
  let c: Cluster;
  let externalId: string;

  beforeEach(async () => {
    c = await Cluster.start([
      { id: 'ctrl', externalId: 'ext-w', roles: ['controller'] },
      { id: 'node-w', externalId: 'ext-w', roles: ['node'] },
    ]);
    const client = new CsiClient({ endpoint: c.fake('ctrl').endpoint });
    externalId = (await client.createVolume({ name: 'data', volumeCapabilities: [VolumeCapability.mount('single-node-writer')] })).volumeId;
    await client.close();
    await c.volumes.register({ id: 'data', externalId, pluginId: 'fake', capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }] });
    await c.alloc('a1', 'node-w');
  });
  afterEach(() => c.close());

  const state = (): ClaimState | undefined => c.claimRow('data', 'a1')?.state;
  const attached = (): boolean => c.fake('ctrl').controllerPublished.get(externalId)?.has('ext-w') === true;

  async function claimed(): Promise<void> {
    await c.volumes.claim({ volumeId: 'data', allocId: 'a1', mode: 'write' });
    assert.ok(attached());
  }

  /** After a restart: the watcher frees the claim and the volume can be claimed again (docs/csi-rules.md scenario 18). */
  async function resumesToFree(): Promise<void> {
    await c.watcher.start();
    await c.until(() => state() === undefined, ['claims'], 'the claim to be freed');
    assert.equal(attached(), false, 'detached on the controller');
    await c.alloc('a2', 'node-w');
    await c.volumes.claim({ volumeId: 'data', allocId: 'a2', mode: 'write' });
  }

  it('a claim refused only by a release in progress is taken the moment the release ends, with no time passing', async () => {
    await claimed();
    c.agent('node-w').pause();
    const releasing = c.volumes.release('default', 'data', 'a1');
    await c.until(() => c.agent('node-w').callsOf('csi.node.detach').length === 1, ['claims'], 'the node detach');
    assert.equal(state(), 'unpublishing');
    await c.alloc('a2', 'node-w');
    const startedAt = c.clock.now();
    let settled = false;
    const claim = c.volumes.claim({ volumeId: 'data', allocId: 'a2', mode: 'write' }).finally(() => {
      settled = true;
    });
    for (let i = 0; i < 5; i++) await nextTurn();
    assert.equal(settled, false, 'the claim waits for the release instead of answering CONFLICT');
    c.agent('node-w').resume();
    await releasing;
    const taken = await claim;
    assert.equal(taken.allocId, 'a2');
    assert.equal(taken.state, 'taken');
    assert.equal(c.clock.now(), startedAt, 'no backoff timer: the clock never moved');
    assert.equal(c.claimRow('data', 'a1'), undefined);
  });

  it('resumes a release interrupted while the node was detaching (unpublishing)', async () => {
    await claimed();
    c.agent('node-w').pause();
    const interrupted = c.volumes.release('default', 'data', 'a1').catch((e: unknown) => e);
    await c.until(() => c.agent('node-w').callsOf('csi.node.detach').length === 1, ['claims'], 'the node detach');
    assert.equal(state(), 'unpublishing');
    await c.restart();
    assert.ok((await interrupted) instanceof Error, 'the old server died mid-release');
    assert.equal(state(), 'unpublishing', 'the checkpoint survived the restart');
    await resumesToFree();
    assert.equal(c.agent('node-w').callsOf('csi.node.detach').length, 1, 'the new server asked the node again');
    assert.equal(c.fake('ctrl').callsTo('ControllerUnpublishVolume').length, 1);
  });

  it('resumes a release interrupted while the controller was detaching (node-detached)', async () => {
    await claimed();
    c.agent('ctrl').pause();
    const interrupted = c.volumes.release('default', 'data', 'a1').catch((e: unknown) => e);
    await c.until(() => c.agent('ctrl').callsOf('csi.controller.unpublish').length === 1, ['claims'], 'the controller unpublish');
    assert.equal(state(), 'node-detached');
    await c.restart();
    await interrupted;
    assert.equal(state(), 'node-detached');
    await resumesToFree();
    assert.equal(c.agent('node-w').callsOf('csi.node.detach').length, 0, 'the node step is not repeated');
    assert.equal(c.agent('ctrl').callsOf('csi.controller.unpublish').length, 1, 'the controller step is');
  });

  it('finishes a release interrupted after the controller detached (controller-detached) without calling anyone', async () => {
    await claimed();
    // A crash between the controller step's checkpoint and the last write leaves this state.
    await c.router.call('fake', 'csi.controller.unpublish', { pluginId: 'fake', volumeId: externalId, nodeId: 'ext-w', secrets: {} });
    await c.store.write((txn) => txn.put('claims', { ...c.claimRow('data', 'a1')!, state: 'controller-detached', releaseReason: 'allocation complete' }));
    await c.restart();
    c.fake('ctrl').clearCalls();
    await resumesToFree();
    assert.equal(c.fake('ctrl').callsTo('ControllerUnpublishVolume').length, 0);
    assert.equal(c.agent('node-w').callsOf('csi.node.detach').length, 0);
  });

  it('undoes a ControllerPublish interrupted by a restart (taken, publish pending)', async () => {
    c.agent('ctrl').pause();
    const interrupted = c.volumes.claim({ volumeId: 'data', allocId: 'a1', mode: 'write' }).catch((e: unknown) => e);
    await c.until(() => c.agent('ctrl').callsOf('csi.controller.publish').length === 1, ['claims'], 'the publish');
    await c.fake('ctrl').whenIdle();
    assert.ok(attached(), 'the plugin attached it, but the server never heard back');
    assert.equal(c.claimRow('data', 'a1')?.controllerPublish, 'pending', 'recorded before the call');
    await c.restart();
    await interrupted;
    await resumesToFree();
    assert.equal(c.agent('ctrl').callsOf('csi.controller.unpublish').length >= 1, true);
  });

  it('the same allocation claiming again after its publishing server died waits for the interrupted publish to be undone, then gets its claim', async () => {
    c.agent('ctrl').pause();
    const interrupted = c.volumes.claim({ volumeId: 'data', allocId: 'a1', mode: 'write' }).catch((e: unknown) => e);
    await c.until(() => c.agent('ctrl').callsOf('csi.controller.publish').length === 1, ['claims'], 'the publish');
    await c.restart();
    await interrupted;
    assert.equal(c.claimRow('data', 'a1')?.controllerPublish, 'pending');
    // The node retries its claim on the new server (it was refused for good before: the allocation failed).
    let settled = false;
    const again = c.volumes.claim({ volumeId: 'data', allocId: 'a1', mode: 'write' }).finally(() => {
      settled = true;
    });
    for (let i = 0; i < 5; i++) await nextTurn();
    assert.equal(settled, false, 'the claim waits for the release of the interrupted one instead of failing');
    await c.watcher.start();
    const claim = await again;
    assert.equal(claim.controllerPublish, 'published');
    assert.ok(attached());
    const calls = c.fake('ctrl').calls.map((call) => call.rpc).filter((rpc) => rpc.startsWith('Controller'));
    assert.deepEqual(calls.slice(-2), ['ControllerUnpublishVolume', 'ControllerPublishVolume'], 'the interrupted publish undone before the claim was made again');
  });

  it('releases claims of allocations that finish or vanish, never of a running one on a live node', async () => {
    await claimed();
    await c.watcher.start();
    await c.alloc('a1', 'node-w', 'running');
    await c.store.write((txn) => txn.put('allocations', { ...txn.get('allocations', rowKey('a1'))!, desiredStatus: 'stop' }));
    // The window closes within one turn: a store write wakes the watcher synchronously and its
    // pass is synchronous, so it has looked at the stopped allocation by then; a release it had
    // started would still be running (it calls the node over a socket).
    await nextTurn();
    assert.equal(c.volumes.releasing(rowKey('default', 'data', 'a1')), false, 'the watcher started no release');
    assert.equal(state(), 'taken', 'a running allocation keeps its claim, even when told to stop');
    assert.equal(c.watcher.sweep().length, 0);

    await c.alloc('a1', 'node-w', 'complete');
    await c.until(() => state() === undefined, ['claims'], 'release after complete');
    assert.equal(attached(), false);
    assert.equal(c.agent('node-w').callsOf('csi.node.detach').length, 1);

    await c.alloc('a3', 'node-w');
    await c.volumes.claim({ volumeId: 'data', allocId: 'a3', mode: 'write' });
    await c.store.write((txn) => txn.delete('allocations', rowKey('a3')));
    await c.until(() => c.claimRow('data', 'a3') === undefined, ['claims'], 'release after the allocation vanished');
    assert.equal(attached(), false);
  });

  it('releases the claims of a node that goes down: no node call, but ControllerUnpublish still runs', async () => {
    await claimed();
    await c.watcher.start();
    await c.nodes.markDown('node-w', 'missed heartbeats');
    await c.until(() => state() === undefined, ['claims'], 'release after node down');
    assert.equal(c.agent('node-w').callsOf('csi.node.detach').length, 0, 'a down node is not asked');
    assert.equal(attached(), false, 'the controller detached it');
  });

  it('backs off after a failed step, keeps the error on the claim, and retries on the clock', async () => {
    await claimed();
    c.fake('node-w').failNext('NodeUnpublishVolume', 'INTERNAL', 'device busy');
    await c.watcher.start();
    await c.alloc('a1', 'node-w', 'failed');
    await c.until(() => (c.claimRow('data', 'a1')?.releaseAttempts ?? 0) === 1, ['claims'], 'the failed attempt');
    const row = c.claimRow('data', 'a1')!;
    assert.equal(row.state, 'unpublishing');
    assert.match(row.lastError, /device busy/);
    assert.equal(row.releaseReason, 'allocation failed');
    await c.clock.waitForSleepers(1);
    assert.equal(c.agent('node-w').callsOf('csi.node.detach').length, 1, 'waiting out the backoff');
    await c.clock.advance(1000);
    await c.until(() => state() === undefined, ['claims'], 'the retry');
    assert.equal(c.agent('node-w').callsOf('csi.node.detach').length, 2);
  });

  it('stop() does not wait for a node that never answers: the release stays at its checkpoint, uncounted', async () => {
    await claimed();
    c.agent('node-w').pause();
    await c.watcher.start();
    await c.alloc('a1', 'node-w', 'complete');
    await c.until(() => c.agent('node-w').callsOf('csi.node.detach').length === 1, ['claims'], 'the node detach');
    await c.watcher.stop();
    assert.equal(c.watcher.state, 'stopped');
    const row = c.claimRow('data', 'a1')!;
    assert.equal(row.state, 'unpublishing');
    assert.equal(row.releaseAttempts, 0, 'a shutdown is not a failed attempt');
    c.agent('node-w').resume();
  });

  it('detach(volume, node) forces the release of that node\'s claims', async () => {
    await claimed();
    // (A detach is refused while a live allocation uses the volume there: see truthful-volumes.test.ts.)
    await c.alloc('a1', 'node-w', 'lost');
    await c.volumes.detach('default', 'data', 'node-w');
    assert.equal(state(), undefined);
    assert.equal(attached(), false);
  });
});
