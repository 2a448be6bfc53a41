// Agent restarts and crashes: a new volume manager over the same client
// state rebuilds what is mounted from its records and the kernel's mount
// table, unmounts nothing before it knows what is wanted, then keeps,
// re-publishes or tears down (docs/csi-rules.md scenarios 12 and 13).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CsiClient } from '../../src/csi/index.js';
import { FakePlugin } from '../support/csi-fake/index.js';
import { TS_LOADER } from '../support/ts-loader.js';
import { RecordedVolumes, type VolumeManager } from '../../src/client/volumes/index.js';
import { entriesOf, HostpathNode, isMounted, mountsUnder, SHARED, type SentCall } from './_volumes.js';

const ALLOC = 'alloc-1';

/** What the node's durable records say is published and staged. */
function recorded(node: HostpathNode): RecordedVolumes {
  return new RecordedVolumes(node.store);
}

describe('volume manager restarts on the hostpath plugin', () => {
  let node: HostpathNode;

  beforeEach(async () => {
    node = new HostpathNode();
    await node.start();
  });

  afterEach(async () => {
    await node.close();
  });

  for (const step of ['NodeStageVolume', 'NodePublishVolume'] as const) {
    for (const wanted of [true, false]) {
      it(`stopped right after ${step}, restarted, ${wanted ? 'still wanted: nothing unmounted, nothing sent twice' : 'no longer wanted: everything torn down'}`, async () => {
        const volume = { id: 'data', externalId: await node.createVolume('data') };
        const vm1 = await node.manager();
        let stopped: Promise<void> | undefined;
        node.client.after = (call: SentCall) => {
          if (call.rpc === step) stopped ??= vm1.stop();
        };
        const first = await vm1.mountVolume(volume, ALLOC, SHARED).then(
          (r) => r,
          (err: unknown) => err,
        );
        await stopped;
        node.client.after = undefined;
        const mountedBefore = mountsUnder(node.mountRoot).sort();
        assert.equal(mountedBefore.length, step === 'NodeStageVolume' ? 1 : 2);
        if (step === 'NodePublishVolume') assert.ok(!(first instanceof Error), 'the publish that returned is kept');

        node.reopenStore();
        node.client.sent.length = 0;
        const vm2 = await node.manager();
        assert.deepEqual(mountsUnder(node.mountRoot).sort(), mountedBefore, 'start() unmounts nothing');
        assert.equal(node.client.sent.length, 0, 'start() calls no plugin');

        const report = await vm2.reconcile(wanted ? [{ volumeId: 'data', allocId: ALLOC }] : []);
        if (wanted) {
          assert.deepEqual(mountsUnder(node.mountRoot).sort(), mountedBefore, 'nothing wanted was unmounted');
          assert.equal(node.client.sent.length, 0, 'intact steps are kept without calling the plugin');
          if (step === 'NodePublishVolume') assert.deepEqual(report.kept, [{ volumeId: 'data', allocId: ALLOC }]);
          // The allocation runner mounts again on restore; only what is missing is sent.
          const { source } = await vm2.mountVolume(volume, ALLOC, SHARED);
          assert.ok(isMounted(source));
          assert.deepEqual(
            node.client.sent.map((c) => c.rpc),
            step === 'NodeStageVolume' ? ['NodePublishVolume'] : [],
          );
          await vm2.unmountVolume(volume, ALLOC, SHARED);
        } else {
          assert.deepEqual(
            node.client.sent.map((c) => c.rpc),
            step === 'NodeStageVolume' ? ['NodeUnstageVolume'] : ['NodeUnpublishVolume', 'NodeUnstageVolume'],
          );
          if (step === 'NodePublishVolume') assert.deepEqual(report.tornDown, [{ volumeId: 'data', allocId: ALLOC }]);
          else assert.deepEqual(report.unstaged, [{ volumeId: 'data', namespace: 'default' }]);
        }
        assert.deepEqual(mountsUnder(node.mountRoot), [], 'nothing leaked');
        assert.deepEqual(entriesOf(path.join(node.mountRoot, 'per-alloc')), []);
        assert.deepEqual(entriesOf(path.join(node.mountRoot, 'staging')), []);
        assert.equal(recorded(node).publications().length, 0);
        assert.equal(recorded(node).stagings().length, 0);
      });
    }
  }

  it('stopped right after NodeUnpublishVolume, restarted: only the owed Unstage is sent', async () => {
    const volume = { id: 'data', externalId: await node.createVolume('data') };
    const vm1 = await node.manager();
    const { source } = await vm1.mountVolume(volume, ALLOC, SHARED);
    let stopped: Promise<void> | undefined;
    node.client.after = (call: SentCall) => {
      if (call.rpc === 'NodeUnpublishVolume') stopped ??= vm1.stop();
    };
    await vm1.unmountVolume(volume, ALLOC, SHARED).catch(() => undefined);
    await stopped;
    node.client.after = undefined;
    assert.ok(!isMounted(source));
    assert.equal(mountsUnder(node.mountRoot).length, 1, 'the staging is still mounted');

    node.reopenStore();
    node.client.sent.length = 0;
    const vm2 = await node.manager();
    const report = await vm2.reconcile([]);
    assert.deepEqual(node.client.sent.map((c) => c.rpc), ['NodeUnstageVolume']);
    assert.deepEqual(report.unstaged, [{ volumeId: 'data', namespace: 'default' }]);
    assert.deepEqual(mountsUnder(node.mountRoot), []);
    assert.deepEqual(entriesOf(path.join(node.mountRoot, 'staging')), []);
  });

  it('cleans up the mounts of a workload stopped while the agent was down, keeps the others, removes empty leftovers (scenario 13)', async () => {
    const volume = { id: 'shared', externalId: await node.createVolume('shared') };
    const vm1 = await node.manager();
    const gone = await vm1.mountVolume(volume, 'alloc-gone', SHARED);
    const kept = await vm1.mountVolume(volume, 'alloc-kept', SHARED);
    writeFileSync(path.join(kept.source, 'state.txt'), 'still here');
    await vm1.stop();
    // Leftovers of an earlier crash: an empty directory tree, and one with a file in it.
    const emptyLeftover = path.join(node.mountRoot, 'per-alloc', 'old-alloc', 'old-vol', 'rw-file-system-single-node-writer');
    const fullLeftover = path.join(node.mountRoot, 'per-alloc', 'odd-alloc', 'odd-vol', 'u');
    mkdirSync(emptyLeftover, { recursive: true });
    mkdirSync(fullLeftover, { recursive: true });
    writeFileSync(path.join(fullLeftover, 'keep-me'), 'x');

    node.reopenStore();
    node.client.sent.length = 0;
    const vm2 = await node.manager();
    const report = await vm2.reconcile([{ volumeId: 'shared', allocId: 'alloc-kept' }]);
    assert.deepEqual(report.kept, [{ volumeId: 'shared', allocId: 'alloc-kept' }]);
    assert.deepEqual(report.tornDown, [{ volumeId: 'shared', allocId: 'alloc-gone' }]);
    assert.deepEqual(report.failed, []);
    assert.deepEqual(node.client.sent.map((c) => c.rpc), ['NodeUnpublishVolume'], 'the staging still has a user');
    assert.ok(!isMounted(gone.source));
    assert.ok(!existsSync(path.join(node.mountRoot, 'per-alloc', 'alloc-gone')));
    assert.ok(isMounted(kept.source));
    assert.equal(mountsUnder(node.mountRoot).length, 2, 'the staging and the kept target');
    assert.ok(!existsSync(path.join(node.mountRoot, 'per-alloc', 'old-alloc')), 'empty leftovers are removed');
    assert.ok(existsSync(path.join(fullLeftover, 'keep-me')), 'a directory with content is never removed');
    assert.ok(report.removedDirs >= 3);

    await vm2.unmountVolume(volume, 'alloc-kept', SHARED);
    assert.deepEqual(mountsUnder(node.mountRoot), []);
  });
});

describe('volume manager restarts on the fake plugin', () => {
  let node: HostpathNode;
  let fake: FakePlugin;
  let client: CsiClient;
  const managers: VolumeManager[] = [];

  beforeEach(async () => {
    node = new HostpathNode();
    fake = new FakePlugin({ socketPath: path.join(node.dir, 'fake.sock') });
    await fake.start();
    client = new CsiClient({ endpoint: fake.endpoint });
  });

  afterEach(async () => {
    for (const vm of managers.splice(0)) await vm.stop();
    await client.close();
    await fake.stop();
    await node.close();
  });

  async function fakeManager(): Promise<VolumeManager> {
    const vm = await node.manager({ pluginId: 'fake', getClient: () => client, getCapabilities: () => ['STAGE_UNSTAGE_VOLUME'] });
    managers.push(vm);
    return vm;
  }

  for (const wanted of [true, false]) {
    it(`stopped in the middle of a publish: uncertain after restart, then ${wanted ? 're-published' : 'unpublished and unstaged'} (scenario 12)`, async () => {
      const vm1 = await fakeManager();
      fake.hangNext('NodePublishVolume');
      const mounting = vm1.mountVolume({ id: 'vol-m' }, ALLOC, SHARED).catch((err: unknown) => err);
      await fake.waitForCall('NodePublishVolume');
      await vm1.stop();
      assert.equal(((await mounting) as { code?: string }).code, 'CLIENT_VOLUME_MOUNT_UNCERTAIN');

      node.reopenStore();
      fake.clearCalls();
      const vm2 = await fakeManager();
      assert.equal(fake.calls.length, 0, 'start() sends nothing');
      const report = await vm2.reconcile(wanted ? [{ volumeId: 'vol-m', allocId: ALLOC }] : []);
      if (wanted) {
        assert.deepEqual(report.republished, [{ volumeId: 'vol-m', allocId: ALLOC }]);
        assert.deepEqual(fake.calls.map((c) => c.rpc), ['NodeStageVolume', 'NodePublishVolume']);
        assert.equal(recorded(node).publications()[0]?.state, 'done');
        assert.equal(fake.published.get('vol-m')?.size, 1);
      } else {
        assert.deepEqual(report.tornDown, [{ volumeId: 'vol-m', allocId: ALLOC }]);
        assert.deepEqual(fake.calls.map((c) => c.rpc), ['NodeUnpublishVolume', 'NodeUnstageVolume']);
        assert.equal(fake.staged.size, 0);
        assert.equal(recorded(node).publications().length, 0);
        assert.deepEqual(entriesOf(path.join(node.mountRoot, 'per-alloc')), []);
      }
    });
  }

  it('an agent process killed with SIGKILL in the middle of a publish: rebuilt from its records, wanted re-published, the rest torn down (scenario 12)', async () => {
    // The child publishes vol-k to alloc-done, then dies (SIGKILL) while the publish to alloc-x hangs.
    fake.delayNext('NodePublishVolume', 0);
    fake.hangNext('NodePublishVolume');
    const child = spawn(
      process.execPath,
      ['--import', TS_LOADER, path.join(import.meta.dirname, '_mount-child.ts'), node.statePath, node.mountRoot, fake.endpoint, 'vol-k:alloc-done', 'vol-k:alloc-x'],
      { stdio: 'ignore' },
    );
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    try {
      await fake.waitForCall('NodePublishVolume', { count: 2, timeoutMs: 30_000 });
    } finally {
      child.kill('SIGKILL');
    }
    assert.equal(await exited, 'SIGKILL');

    node.reopenStore();
    const states = Object.fromEntries(recorded(node).publications().map((r) => [r.allocId, r.state]));
    assert.deepEqual(states, { 'alloc-done': 'done', 'alloc-x': 'pending' }, 'the crash left the second step pending');

    fake.clearCalls();
    const vm = await fakeManager();
    const after = Object.fromEntries(recorded(node).publications().map((r) => [r.allocId, r.state]));
    // The fake mounts nothing, so even the finished publish cannot be proven from the mount table.
    assert.deepEqual(after, { 'alloc-done': 'uncertain', 'alloc-x': 'uncertain' });
    assert.equal(recorded(node).stagings()[0]?.state, 'uncertain');
    assert.equal(fake.calls.length, 0, 'nothing is sent, let alone unmounted, before the wanted state is known');

    const report = await vm.reconcile([{ volumeId: 'vol-k', allocId: 'alloc-x' }]);
    assert.deepEqual(report.republished, [{ volumeId: 'vol-k', allocId: 'alloc-x' }]);
    assert.deepEqual(report.tornDown, [{ volumeId: 'vol-k', allocId: 'alloc-done' }]);
    assert.deepEqual(fake.calls.map((c) => c.rpc), ['NodeUnpublishVolume', 'NodeStageVolume', 'NodePublishVolume']);
    assert.equal(fake.maxConcurrentPerVolume('vol-k'), 1);
    assert.deepEqual([...(fake.published.get('vol-k') ?? [])].map((t) => t.split('/per-alloc/')[1]?.split('/')[0]), ['alloc-x']);

    // The workload goes away later: teardown sends both negations.
    await vm.unmountVolume({ id: 'vol-k' }, 'alloc-x', SHARED);
    assert.deepEqual(fake.calls.map((c) => c.rpc).slice(-2), ['NodeUnpublishVolume', 'NodeUnstageVolume']);
    assert.equal(fake.published.size, 0);
    assert.equal(fake.staged.size, 0);
  });
});
