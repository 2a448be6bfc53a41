import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { inspect } from 'node:util';
import { ManualClock, SecretMap } from '../../lib/index.js';
import { FakeHarness, MULTI, RW } from '../../../test/support/client-volumes.js';
import { PUBLISH_BUCKET, STAGE_BUCKET, type PublishRecord, type StageRecord } from './volume-records.js';
import { ClientVolumeError } from './client-volume-error.js';
import type { VolumeUsage } from './mount-paths.js';

const vol = { id: 'vol-1', volumeContext: { zone: 'z1' } };

function rpcs(h: FakeHarness): string[] {
  return h.fake.calls.map((c) => c.rpc);
}

function isClientVolumeError(code: string): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof ClientVolumeError, `expected a ClientVolumeError, got ${inspect(err)}`);
    assert.equal(err.code, code);
    return true;
  };
}

describe('VolumeManager with the fake plugin', () => {
  let h: FakeHarness;

  beforeEach(async () => {
    h = new FakeHarness();
    await h.fake.start();
  });

  afterEach(async () => {
    await h.close();
  });

  it('stages a volume once and publishes it per allocation; unpublishes each before the one unstage (scenario 6)', async () => {
    const vm = await h.manager();
    const allocs = ['a1', 'a2', 'a3', 'a4'];
    const sources = [];
    for (const a of allocs) sources.push((await vm.mountVolume(vol, a, MULTI)).source);

    assert.equal(h.fake.callsTo('NodeStageVolume').length, 1);
    assert.equal(h.fake.callsTo('NodePublishVolume').length, 4);
    const staging = h.fake.callsTo('NodeStageVolume')[0]!.request['stagingTargetPath'] as string;
    assert.ok(existsSync(staging), 'the CO creates the staging directory');
    for (const [i, call] of h.fake.callsTo('NodePublishVolume').entries()) {
      assert.equal(call.request['stagingTargetPath'], staging);
      assert.equal(call.request['targetPath'], sources[i]);
      assert.ok(existsSync(path.dirname(sources[i]!)), 'the CO creates the parent of the target');
      assert.ok(!existsSync(sources[i]!), 'the plugin, not the CO, creates the target');
    }
    assert.deepEqual(new Set(sources).size, 4);

    // Unmounting all but one: no unstage yet, the count lives in the store.
    for (const a of allocs.slice(0, 3)) await vm.unmountVolume(vol, a, MULTI);
    assert.equal(h.fake.callsTo('NodeUnstageVolume').length, 0);
    assert.equal(h.fake.staged.get('vol-1'), staging);

    // A new manager over the reopened state still knows the last user.
    await vm.stop();
    h.reopenStore();
    const vm2 = await h.manager();
    await vm2.unmountVolume(vol, 'a4', MULTI);
    const order = rpcs(h).filter((r) => r.startsWith('Node'));
    assert.deepEqual(order, [
      'NodeStageVolume',
      'NodePublishVolume',
      'NodePublishVolume',
      'NodePublishVolume',
      'NodePublishVolume',
      'NodeUnpublishVolume',
      'NodeUnpublishVolume',
      'NodeUnpublishVolume',
      'NodeUnpublishVolume',
      'NodeUnstageVolume',
    ]);
    assert.equal(h.fake.staged.size, 0);
    assert.equal(h.fake.published.size, 0);
    assert.deepEqual(readdirSync(path.join(h.mountRoot, 'per-alloc')), [], 'empty allocation directories are removed');
    assert.deepEqual(readdirSync(path.join(h.mountRoot, 'staging')), [], 'empty staging directories are removed');
    assert.equal(h.store.bucket(STAGE_BUCKET).list().length, 0);
    assert.equal(h.store.bucket(PUBLISH_BUCKET).list().length, 0);
  });

  it('does not send a step again that is recorded done', async () => {
    const vm = await h.manager();
    const first = await vm.mountVolume(vol, 'a1', RW);
    const again = await vm.mountVolume(vol, 'a1', RW);
    assert.equal(again.source, first.source);
    assert.deepEqual(rpcs(h), ['NodeStageVolume', 'NodePublishVolume']);
  });

  it('skips stage and unstage when the plugin lacks STAGE_UNSTAGE_VOLUME', async () => {
    await h.fake.stop();
    const h2 = new FakeHarness({ nodeCapabilities: ['GET_VOLUME_STATS'] });
    try {
      await h2.fake.start();
      const vm = await h2.manager({ getCapabilities: () => ['GET_VOLUME_STATS'] });
      await vm.mountVolume(vol, 'a1', RW);
      await vm.mountVolume(vol, 'a2', RW);
      await vm.unmountVolume(vol, 'a1', RW);
      await vm.unmountVolume(vol, 'a2', RW);
      assert.deepEqual(rpcs(h2), ['NodePublishVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnpublishVolume']);
      assert.equal(h2.fake.callsTo('NodePublishVolume')[0]!.request['stagingTargetPath'], '');
    } finally {
      await h2.close();
    }
  });

  it('writes the record of a step before calling the plugin', async () => {
    const vm = await h.manager();
    h.fake.hangNext('NodePublishVolume');
    const mounting = vm.mountVolume(vol, 'a1', RW, { signal: AbortSignal.timeout(10_000) });
    await h.fake.waitForCall('NodePublishVolume');
    const [pub] = h.store.bucket<PublishRecord>(PUBLISH_BUCKET).list();
    assert.equal(pub?.value.state, 'pending');
    assert.equal(pub?.value.op, 'publish');
    const [stage] = h.store.bucket<StageRecord>(STAGE_BUCKET).list();
    assert.equal(stage?.value.state, 'done');
    await vm.stop();
    await assert.rejects(mounting, isClientVolumeError('CLIENT_VOLUME_MOUNT_UNCERTAIN'));
    assert.equal(h.store.bucket<PublishRecord>(PUBLISH_BUCKET).list()[0]?.value.state, 'uncertain');
  });

  it('retries an UNAVAILABLE stage after a backoff on its clock, with the same arguments (scenario 7)', async () => {
    const clock = new ManualClock(1_000);
    const vm = await h.manager({ clock, backoff: { maxAttempts: 5, initialDelayMs: 1_000, maxDelayMs: 10_000, jitter: 0 } });
    h.fake.failNext('NodeStageVolume', 'UNAVAILABLE', 'restarting', 2);
    const mounting = vm.mountVolume(vol, 'a1', RW);
    await clock.waitForSleepers(1);
    assert.equal(h.fake.callsTo('NodeStageVolume').length, 1, 'no second attempt before the backoff ran out');
    await clock.advance(1_000);
    await clock.waitForSleepers(1);
    assert.equal(h.fake.callsTo('NodeStageVolume').length, 2);
    await clock.advance(2_000);
    const { source } = await mounting;
    const stages = h.fake.callsTo('NodeStageVolume');
    assert.equal(stages.length, 3);
    assert.deepEqual(stages[2]!.request, stages[0]!.request);
    assert.ok(h.fake.published.get('vol-1')?.has(source));
  });

  it('records a publish that keeps timing out as uncertain and still sends Unpublish and Unstage on teardown (scenario 7)', async () => {
    // A deadline long enough for each attempt to reach the plugin on a loaded machine (the fake counts what arrives).
    const vm = await h.manager({ callDeadlineMs: 1_000 });
    h.fake.hangNext('NodePublishVolume', 3);
    await assert.rejects(vm.mountVolume(vol, 'a1', RW), (err) => {
      assert.ok(err instanceof ClientVolumeError);
      assert.equal(err.code, 'CLIENT_VOLUME_MOUNT_UNCERTAIN');
      assert.match(err.message, /DEADLINE_EXCEEDED/);
      return true;
    });
    assert.equal(h.fake.callsTo('NodePublishVolume').length, 3, 'retried up to the policy');
    assert.equal(h.store.bucket<PublishRecord>(PUBLISH_BUCKET).list()[0]?.value.state, 'uncertain');

    await vm.unmountVolume(vol, 'a1', RW);
    assert.deepEqual(rpcs(h).slice(-2), ['NodeUnpublishVolume', 'NodeUnstageVolume']);
    assert.equal(h.store.bucket(PUBLISH_BUCKET).list().length, 0);
    assert.equal(h.store.bucket(STAGE_BUCKET).list().length, 0);
  });

  it('records an uncertain stage and sends Unstage on teardown even though nothing was published (scenario 7)', async () => {
    const vm = await h.manager();
    h.fake.failNext('NodeStageVolume', 'DEADLINE_EXCEEDED', 'slow disk', 3);
    await assert.rejects(vm.mountVolume(vol, 'a1', RW), isClientVolumeError('CLIENT_VOLUME_MOUNT_UNCERTAIN'));
    assert.equal(h.fake.callsTo('NodePublishVolume').length, 0);
    await vm.unmountVolume(vol, 'a1', RW);
    assert.equal(h.fake.callsTo('NodeUnpublishVolume').length, 0, 'nothing was ever sent to publish');
    assert.equal(h.fake.callsTo('NodeUnstageVolume').length, 1);
  });

  it('treats INVALID_ARGUMENT on stage as not done: nothing recorded, no Unstage on teardown (scenario 8)', async () => {
    const vm = await h.manager();
    h.fake.failNext('NodeStageVolume', 'INVALID_ARGUMENT', 'bad fs type');
    await assert.rejects(vm.mountVolume(vol, 'a1', RW), (err) => {
      assert.ok(err instanceof ClientVolumeError);
      assert.equal(err.code, 'CLIENT_VOLUME_MOUNT_FAILED');
      assert.match(err.message, /INVALID_ARGUMENT: bad fs type/);
      return true;
    });
    assert.equal(h.fake.callsTo('NodeStageVolume').length, 1, 'a final code is not retried');
    assert.equal(h.store.bucket(STAGE_BUCKET).list().length, 0);
    assert.deepEqual(readdirSync(path.join(h.mountRoot, 'staging')), [], 'the empty staging directory is removed');
    await vm.unmountVolume(vol, 'a1', RW);
    assert.deepEqual(rpcs(h), ['NodeStageVolume']);
  });

  it('treats FAILED_PRECONDITION on publish as not done: no Unpublish owed, the unused staging is undone (scenario 8)', async () => {
    const vm = await h.manager();
    h.fake.failNext('NodePublishVolume', 'FAILED_PRECONDITION', 'device busy');
    await assert.rejects(vm.mountVolume(vol, 'a1', RW), isClientVolumeError('CLIENT_VOLUME_MOUNT_FAILED'));
    assert.deepEqual(rpcs(h), ['NodeStageVolume', 'NodePublishVolume', 'NodeUnstageVolume']);
    assert.equal(h.store.bucket(PUBLISH_BUCKET).list().length, 0);
    await vm.unmountVolume(vol, 'a1', RW);
    assert.equal(h.fake.callsTo('NodeUnpublishVolume').length, 0);
  });

  it('keeps the staging when a publish fails while another allocation uses it', async () => {
    const vm = await h.manager();
    await vm.mountVolume(vol, 'a1', MULTI);
    h.fake.failNext('NodePublishVolume', 'NOT_FOUND', 'no such volume');
    await assert.rejects(vm.mountVolume(vol, 'a2', MULTI), isClientVolumeError('CLIENT_VOLUME_MOUNT_FAILED'));
    assert.equal(h.fake.callsTo('NodeUnstageVolume').length, 0);
    assert.ok(h.fake.staged.has('vol-1'));
  });

  it('counts NOT_FOUND on Unpublish and Unstage as done', async () => {
    const vm = await h.manager();
    await vm.mountVolume(vol, 'a1', RW);
    h.fake.failNext('NodeUnpublishVolume', 'NOT_FOUND');
    h.fake.failNext('NodeUnstageVolume', 'NOT_FOUND');
    await vm.unmountVolume(vol, 'a1', RW);
    assert.equal(h.store.bucket(PUBLISH_BUCKET).list().length, 0);
    assert.equal(h.store.bucket(STAGE_BUCKET).list().length, 0);
  });

  it('keeps the publication when Unpublish fails with a final code, and unmounts on a later try', async () => {
    const vm = await h.manager();
    await vm.mountVolume(vol, 'a1', RW);
    h.fake.failNext('NodeUnpublishVolume', 'FAILED_PRECONDITION', 'target busy');
    await assert.rejects(vm.unmountVolume(vol, 'a1', RW), isClientVolumeError('CLIENT_VOLUME_UNMOUNT_FAILED'));
    assert.equal(h.fake.callsTo('NodeUnstageVolume').length, 0, 'never unstage under a live publication');
    assert.equal(h.store.bucket<PublishRecord>(PUBLISH_BUCKET).list()[0]?.value.state, 'done');
    await vm.unmountVolume(vol, 'a1', RW);
    assert.deepEqual(rpcs(h).slice(-2), ['NodeUnpublishVolume', 'NodeUnstageVolume']);
  });

  it('never lets the plugin see overlapping calls for one volume, and a hung volume blocks no other (scenario 11)', async () => {
    const vm = await h.manager();
    h.fake.delayNext('NodeStageVolume', 30);
    h.fake.delayNext('NodePublishVolume', 20, 6);
    await Promise.all(['a1', 'a2', 'a3', 'a4', 'a5', 'a6'].map((a) => vm.mountVolume(vol, a, MULTI)));
    await Promise.all(['a1', 'a2', 'a3', 'a4', 'a5', 'a6'].map((a) => vm.unmountVolume(vol, a, MULTI)));
    assert.equal(h.fake.maxConcurrentPerVolume('vol-1'), 1);
    assert.equal(h.fake.callsTo('NodeStageVolume').length, 1);
    assert.equal(h.fake.callsTo('NodeUnstageVolume').length, 1);
    assert.equal(rpcs(h).at(-1), 'NodeUnstageVolume');

    // vol-2's publish hangs; vol-3 is mounted and unmounted meanwhile.
    h.fake.clearCalls();
    h.fake.hangNext('NodePublishVolume');
    const hung = new AbortController();
    const stuck = vm.mountVolume({ id: 'vol-2' }, 'a1', RW, { signal: hung.signal });
    await h.fake.waitForCall('NodePublishVolume');
    await vm.mountVolume({ id: 'vol-3' }, 'a1', RW);
    await vm.unmountVolume({ id: 'vol-3' }, 'a1', RW);
    // A second caller for the hung volume waits its turn rather than overlapping.
    const queued = vm.unmountVolume({ id: 'vol-2' }, 'a1', RW);
    assert.equal(h.fake.callsTo('NodeUnpublishVolume').filter((c) => c.request['volumeId'] === 'vol-2').length, 0);
    hung.abort();
    await assert.rejects(stuck, isClientVolumeError('CLIENT_VOLUME_MOUNT_UNCERTAIN'));
    await queued;
    assert.equal(h.fake.maxConcurrentPerVolume('vol-2'), 1);
    assert.deepEqual(
      h.fake.calls.filter((c) => c.request['volumeId'] === 'vol-2').map((c) => c.rpc),
      ['NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume'],
    );
  });

  it('asks for the current client on every attempt, so a replaced plugin instance gets the retry', async () => {
    const vm = await h.manager();
    const old = h.client;
    h.fake.failNext('NodeStageVolume', 'UNAVAILABLE', 'going away');
    const originalStage = old.nodeStageVolume.bind(old);
    // The first attempt goes to the old client; the CSI manager then swaps in a new one.
    old.nodeStageVolume = async (req, opts) => {
      h.client = h.newClient();
      return originalStage(req, opts);
    };
    await vm.mountVolume(vol, 'a1', RW);
    assert.notEqual(h.client, old);
    assert.equal(h.fake.callsTo('NodeStageVolume').length, 2);
  });

  it('never puts secrets or mount flags in logs, errors or the state file (scenario 16)', async () => {
    const vm = await h.manager();
    const secrets = new SecretMap({ key: 's3cr3t-value' });
    const usage: VolumeUsage = { ...RW, mountOptions: { fsType: 'ext4', mountFlags: ['noatime', 'password=hunter2'] } };
    const v = { id: 'vol-s', volumeContext: { region: 'r1', authToken: 'tok-abc123' } };
    await vm.mountVolume(v, 'a1', usage, { secrets });
    const stage = h.fake.callsTo('NodeStageVolume')[0]!;
    assert.deepEqual((stage.request['secrets'] as SecretMap).reveal(), { key: 's3cr3t-value' }, 'the plugin gets the secrets');
    h.fake.failNext('NodePublishVolume', 'UNAVAILABLE', 'flaky', 3);
    let error: unknown;
    await vm.mountVolume(v, 'a2', usage, { secrets }).catch((e: unknown) => (error = e));
    assert.ok(error instanceof ClientVolumeError);
    await vm.unmountVolume(v, 'a2', usage);
    await vm.unmountVolume(v, 'a1', usage);
    assert.deepEqual(h.fake.callsTo('NodeUnpublishVolume').map((c) => Object.keys(c.request).includes('secrets')), [false, false]);

    await vm.mountVolume(v, 'a3', usage, { secrets });
    await vm.stop();
    h.store.close();
    const files = readdirSync(path.dirname(h.statePath)).map((f) => readFileSync(path.join(path.dirname(h.statePath), f)).toString('latin1'));
    const printed = [...h.logLines, inspect(error, { depth: 10 }), JSON.stringify(error), String(error), ...files].join('\n');
    for (const leak of ['s3cr3t-value', 'hunter2', 'tok-abc123', 'noatime']) {
      assert.ok(!printed.includes(leak), `"${leak}" leaked`);
    }
    assert.ok(h.logLines.some((l) => l.includes('volume published')), 'the logs were captured');
    h.store = (await import('../state/index.js')).SqliteClientStateStore.open(h.statePath);
  });

  it('passes stats and node expansion through when the plugin has the capability', async () => {
    const vm = await h.manager();
    await assert.rejects(vm.stats(vol, 'a1', RW), isClientVolumeError('CLIENT_VOLUME_NOT_MOUNTED'));
    await vm.mountVolume(vol, 'a1', RW);
    const stats = await vm.stats(vol, 'a1', RW);
    assert.equal(stats.usage[0]?.unit, 'BYTES');
    const call = h.fake.callsTo('NodeGetVolumeStats')[0]!;
    assert.equal(call.request['volumePath'], h.fake.callsTo('NodePublishVolume')[0]!.request['targetPath']);
    const expanded = await vm.expand(vol, 'a1', RW, { capacityRange: { requiredBytes: 2 ** 30 } });
    assert.equal(expanded.capacityBytes, 2 ** 30);

    const bare = await h.manager({ getCapabilities: () => ['STAGE_UNSTAGE_VOLUME'] });
    await assert.rejects(bare.stats(vol, 'a1', RW), isClientVolumeError('CLIENT_VOLUME_NOT_SUPPORTED'));
    await assert.rejects(bare.expand(vol, 'a1', RW, { capacityRange: { requiredBytes: 1 } }), isClientVolumeError('CLIENT_VOLUME_NOT_SUPPORTED'));
  });

  it('sends the paths as the plugin sees them and creates the directories where the host sees them', async () => {
    // The fake mounts nothing; the mount table says what a plugin whose mount root propagates would leave on the host.
    const mountInfoPath = path.join(h.dir, 'mountinfo');
    writeFileSync(mountInfoPath, '');
    const vm = await h.manager({ pluginMountRoot: '/csi', mountInfoPath });
    writeFileSync(mountInfoPath, `900 30 0:99 / ${path.join(vm.paths.root, 'per-alloc/a1/vol-1/rw-file-system-single-node-writer')} rw shared:9 - ext4 /dev/vda rw\n`);
    const { source } = await vm.mountVolume(vol, 'a1', RW);
    const stage = h.fake.callsTo('NodeStageVolume')[0]!.request;
    const publish = h.fake.callsTo('NodePublishVolume')[0]!.request;
    assert.equal(stage['stagingTargetPath'], '/csi/staging/default/vol-1/rw-file-system-single-node-writer');
    assert.equal(publish['targetPath'], '/csi/per-alloc/a1/vol-1/rw-file-system-single-node-writer');
    assert.equal(source, path.join(vm.paths.root, 'per-alloc/a1/vol-1/rw-file-system-single-node-writer'));
    assert.ok(existsSync(path.join(vm.paths.root, 'staging/default/vol-1/rw-file-system-single-node-writer')));
    assert.ok(existsSync(path.dirname(source)));
    await vm.unmountVolume(vol, 'a1', RW);
    assert.equal(h.fake.callsTo('NodeUnstageVolume')[0]!.request['stagingTargetPath'], stage['stagingTargetPath']);
    assert.equal(h.fake.callsTo('NodeUnpublishVolume')[0]!.request['targetPath'], publish['targetPath']);
  });

  it('refuses a publish of a plugin in its own file system that left nothing mounted on the host, and undoes it', async () => {
    const mountInfoPath = path.join(h.dir, 'mountinfo');
    writeFileSync(mountInfoPath, '');
    const vm = await h.manager({ pluginMountRoot: '/csi/mounts', mountInfoPath });
    await assert.rejects(vm.mountVolume(vol, 'a1', RW), (err: unknown) => {
      isClientVolumeError('CLIENT_VOLUME_MOUNT_FAILED')(err);
      assert.match((err as Error).message, /published it at \/csi\/mounts\/per-alloc\/a1\/vol-1\/rw-file-system-single-node-writer in its own file system, but nothing is mounted at .* on the host: its mount root does not propagate back/);
      return true;
    });
    assert.deepEqual(rpcs(h).filter((r) => r.startsWith('Node') && r !== 'NodeGetCapabilities'), ['NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume'], 'the publish and its staging are undone');
  });

  it('leaves an uncertain publication that needs secrets to the caller after a restart, without tearing it down', async () => {
    const vm = await h.manager();
    const secrets = new SecretMap({ key: 'k' });
    h.fake.hangNext('NodePublishVolume');
    const mounting = vm.mountVolume(vol, 'a1', RW, { secrets }).catch((e: unknown) => e);
    await h.fake.waitForCall('NodePublishVolume');
    await vm.stop();
    assert.ok((await mounting) instanceof ClientVolumeError);

    h.reopenStore();
    h.fake.clearCalls();
    const vm2 = await h.manager();
    const report = await vm2.reconcile([{ volumeId: 'vol-1', allocId: 'a1' }]);
    assert.deepEqual(report.awaitingMount, [{ volumeId: 'vol-1', allocId: 'a1' }]);
    assert.equal(h.fake.calls.length, 0, 'neither re-sent without its secrets nor torn down');
    await vm2.mountVolume(vol, 'a1', RW, { secrets });
    assert.deepEqual(rpcs(h), ['NodeStageVolume', 'NodePublishVolume']);
    assert.deepEqual((h.fake.callsTo('NodePublishVolume')[0]!.request['secrets'] as SecretMap).reveal(), { key: 'k' });
    assert.equal(h.store.bucket<PublishRecord>(PUBLISH_BUCKET).list()[0]?.value.state, 'done');
  });

  it('publishes a block volume to a target the plugin creates under a parent the CO creates', async () => {
    const vm = await h.manager();
    const block: VolumeUsage = { readOnly: true, attachmentMode: 'block-device', accessMode: 'single-node-reader-only' };
    const { source } = await vm.mountVolume(vol, 'a1', block);
    const publish = h.fake.callsTo('NodePublishVolume')[0]!.request;
    assert.equal(publish['targetPath'], source);
    assert.equal(publish['readonly'], true);
    assert.match(source, /ro-block-device-single-node-reader-only$/);
    assert.ok(existsSync(path.dirname(source)) && !existsSync(source));
    await vm.unmountVolume(vol, 'a1', block);
    assert.deepEqual(rpcs(h), ['NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume']);
  });

  it('refuses calls before start and after stop; stop is safe twice', async () => {
    const vm = await h.manager();
    await vm.stop();
    await vm.stop();
    await assert.rejects(vm.mountVolume(vol, 'a1', RW), isClientVolumeError('CLIENT_VOLUME_MANAGER_STOPPED'));
    assert.equal(vm.state, 'stopped');
  });
});
