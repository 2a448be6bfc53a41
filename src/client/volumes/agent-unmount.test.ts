// A release always ends, on Berth's side: the fake plugin (a real gRPC server)
// refuses NodeUnpublish/NodeUnstage every time; real bind mounts at the paths.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { FakeHarness, QUICK_BACKOFF, RW } from '../../../test/support/client-volumes.js';
import { ClientVolumeError } from './client-volume-error.js';

const vol = { id: 'vol-1' };

function mountsAt(p: string): number {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.split(' ')[4] === p).length;
}

describe('the agent unmounts what a refusing plugin will not', () => {
  let h: FakeHarness;
  let scratch: string;

  beforeEach(async () => {
    h = new FakeHarness();
    await h.fake.start();
    scratch = mkdtempSync(path.join(os.tmpdir(), 'bv-au-'));
  });

  afterEach(async () => {
    await h.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  /**
   * Stages and publishes through the fake, then makes the staging and the
   * target real bind mounts of a directory of ours (as a hostpath plugin would).
   * The fake, refusing to unpublish, keeps the publication and so refuses to unstage too.
   */
  const publishedOver = async (): Promise<{ target: string; staging: string; source: string; vm: Awaited<ReturnType<FakeHarness['manager']>> }> => {
    const vm = await h.manager({ backoff: QUICK_BACKOFF });
    const { source: target } = await vm.mountVolume(vol, 'a1', RW);
    const staging = h.fake.callsTo('NodeStageVolume')[0]!.request['stagingTargetPath'] as string;
    const source = path.join(scratch, 'volume-dir');
    mkdirSync(source, { recursive: true });
    mkdirSync(target, { recursive: true });
    assert.equal(spawnSync('mount', ['--bind', source, staging]).status, 0);
    assert.equal(spawnSync('mount', ['--bind', staging, target]).status, 0);
    return { target, staging, source, vm };
  };

  it("a target whose source vanished: the plugin's refusal does not stand, the agent unmounts it and the step is done", async () => {
    const { target, staging, source, vm } = await publishedOver();
    rmSync(source, { recursive: true });
    h.fake.failNext('NodeUnpublishVolume', 'FAILED_PRECONDITION', 'not touching it', 100);
    const report = await vm.unmountVolume(vol, 'a1', RW);
    assert.deepEqual(
      report.unmountedByAgent.map((u) => [u.op, u.path, u.reason, u.layers]),
      [
        ['unpublish', target, 'source-vanished', 1],
        ['unstage', staging, 'source-vanished', 1],
      ],
    );
    assert.match(report.unmountedByAgent[0]!.pluginError, /not touching it/);
    assert.equal(mountsAt(target) + mountsAt(staging), 0);
    // Done: a second unmount has nothing left to send.
    const before = h.fake.callsTo('NodeUnpublishVolume').length;
    await vm.unmountVolume(vol, 'a1', RW);
    assert.equal(h.fake.callsTo('NodeUnpublishVolume').length, before);
  });

  it('a refusal over a live source stands; with force (an operator\'s detach) the agent unmounts every layer', async () => {
    const { target, staging, vm } = await publishedOver();
    assert.equal(spawnSync('mount', ['-t', 'tmpfs', 'over', target]).status, 0);
    h.fake.failNext('NodeUnpublishVolume', 'FAILED_PRECONDITION', 'something else is mounted', 100);
    await assert.rejects(vm.unmountVolume(vol, 'a1', RW), (err) => err instanceof ClientVolumeError && err.code === 'CLIENT_VOLUME_UNMOUNT_FAILED');
    assert.equal(mountsAt(target), 2, 'untouched without force');
    const report = await vm.unmountVolume(vol, 'a1', RW, { force: true });
    assert.deepEqual(
      report.unmountedByAgent.map((u) => [u.op, u.reason, u.layers]),
      [
        ['unpublish', 'forced', 2],
        ['unstage', 'forced', 1],
      ],
    );
    assert.equal(mountsAt(target) + mountsAt(staging), 0);
  });
});
