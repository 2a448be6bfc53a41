import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  bindMount,
  mountsAt,
  mountStateOf,
  parseMountInfo,
  readMountInfo,
  remountReadOnly,
  unescapeMountField,
  unmount,
  unmountAllUnder,
} from './_mount.js';

describe('mountinfo parsing', () => {
  it('decodes the octal escapes the kernel writes for space, tab, newline and backslash', () => {
    assert.equal(unescapeMountField('/mnt/a\\040b\\011c\\012d\\134e'), '/mnt/a b\tc\nd\\e');
  });

  it('reads mount points, roots and options, with or without optional fields, and skips broken lines', () => {
    const text = [
      '36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue',
      '40 36 254:0 /data/vol\\040one /pods/a\\040b ro,relatime - ext4 /dev/vda rw',
      'garbage line',
      '',
    ].join('\n');
    const [a, b, ...rest] = parseMountInfo(text);
    assert.equal(rest.length, 0);
    assert.deepEqual(
      { id: a?.id, root: a?.root, mountPoint: a?.mountPoint, options: a?.options, fsType: a?.fsType, source: a?.source },
      { id: 36, root: '/mnt1', mountPoint: '/mnt2', options: ['rw', 'noatime'], fsType: 'ext3', source: '/dev/root' },
    );
    assert.equal(b?.root, '/data/vol one');
    assert.equal(b?.mountPoint, '/pods/a b');
    assert.ok(b?.options.includes('ro'));
  });

  it('reads this process\'s real mount table', async () => {
    const all = await readMountInfo();
    assert.ok(all.some((m) => m.mountPoint === '/'));
  });
});

describe('bind mounts (real)', () => {
  let root: string;
  let volume: string;
  let other: string;
  let target: string;

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'bh-m-'));
    // A space in the path makes the kernel escape it in mountinfo.
    volume = path.join(root, 'the volume');
    other = path.join(root, 'other');
    target = path.join(root, 'mount point');
    await Promise.all([mkdir(volume), mkdir(other), mkdir(target)]);
    await writeFile(path.join(volume, 'f.txt'), 'inside');
  });

  after(async () => {
    await unmountAllUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  it('tells an unmounted path, a mount of the volume and a mount of something else apart', async () => {
    assert.deepEqual(await mountStateOf(target, volume), { kind: 'none' });
    assert.deepEqual(await mountStateOf(path.join(root, 'missing'), volume), { kind: 'none' });
    await bindMount(volume, target);
    assert.deepEqual(await mountStateOf(target, volume), { kind: 'ours', readonly: false, depth: 1 });
    assert.deepEqual(await mountStateOf(target, other), { kind: 'other' });
    assert.equal((await mountsAt(target)).length, 1, 'the escaped mount point matches the real path');
    await remountReadOnly(target);
    assert.deepEqual(await mountStateOf(target, volume), { kind: 'ours', readonly: true, depth: 1 });
    await unmount(target);
    assert.deepEqual(await mountStateOf(target, volume), { kind: 'none' });
  });

  it('reports a failed mount as a BerthError naming the command', async () => {
    await assert.rejects(bindMount(path.join(root, 'missing'), target), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'HOSTPATH_MOUNT_FAILED');
      assert.match(err.message, /^mount --bind/);
      return true;
    });
  });

  it('unmountAllUnder removes stacked and nested mounts, deepest first', async () => {
    await bindMount(volume, target);
    await bindMount(other, target);
    const nested = path.join(target, 'nested');
    await mkdir(nested);
    await bindMount(volume, nested);
    assert.equal(await unmountAllUnder(root), 3);
    assert.equal((await readMountInfo()).filter((m) => m.mountPoint.startsWith(root)).length, 0);
  });
});
