// The mount helper as the agent relies on it, with real mounts (the tests
// run as root): it mounts and unmounts for the agent, a repeated mount is not
// stacked, and a helper that dies is replaced: a request it held is asked
// again when that is safe, and fails clearly when it is not.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { MountHelper, MountHelperError, mountPointsUnder } from './index.js';

const root = mkdtempSync(path.join(tmpdir(), 'berth-mounthelper-'));
const helper = new MountHelper();
after(async () => {
  await helper.request({ op: 'unmount', root });
  helper.stop();
  rmSync(root, { recursive: true, force: true });
});

const tmpfs = (dir: string): { op: 'mount'; args: string[]; unlessOwnFs: string } => ({ op: 'mount', args: ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], unlessOwnFs: dir });
const mountsAt = (dir: string): number => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.split(' ')[4] === dir).length;

describe('the mount helper', () => {
  it('mounts a tmpfs once however often it is asked, and unmounts everything under a root but what is kept', async () => {
    const a = path.join(root, 'a');
    const keep = path.join(root, 'keep');
    mkdirSync(a);
    mkdirSync(keep);
    assert.deepEqual(await helper.request(tmpfs(a)), { mounted: true });
    assert.deepEqual(await helper.request(tmpfs(a)), { mounted: false });
    await helper.request(tmpfs(keep));
    assert.equal(mountsAt(a), 1);
    const r = await helper.request<{ unmounted: number; left: string[] }>({ op: 'unmount', root, keep: [keep] });
    assert.deepEqual(r, { unmounted: 1, left: [] });
    assert.deepEqual(mountPointsUnder(root), [keep]);
  });

  it('says what mount(8) said when a mount fails', async () => {
    await assert.rejects(helper.request({ op: 'mount', args: ['--bind', path.join(root, 'missing'), path.join(root, 'a')] }), (err: unknown) => {
      assert.ok(err instanceof MountHelperError);
      assert.equal(err.code, 'ALLOC_MOUNT_FAILED');
      assert.match(err.message, /missing/);
      return true;
    });
  });

  it('answers each of many mounts asked at once (tmpfs ones by mount(2), the others queued to one shell): each directory mounted once, a failure told to its own asker', async () => {
    const dirs = Array.from({ length: 24 }, (_, i) => path.join(root, `many-${i}`));
    for (const d of dirs) mkdirSync(d);
    const asked = [
      ...dirs.map((d) => helper.request<{ mounted: boolean }>(tmpfs(d))),
      // Repeats of directories asked above, in the same burst: never stacked.
      helper.request<{ mounted: boolean }>(tmpfs(dirs[20]!)),
      helper.request<{ mounted: boolean }>(tmpfs(dirs[21]!)),
      helper.request({ op: 'mount', args: ['--bind', path.join(root, 'missing-too'), dirs[22]!] }),
    ];
    const settled = await Promise.allSettled(asked);
    for (const [i, d] of dirs.entries()) {
      assert.deepEqual(settled[i], { status: 'fulfilled', value: { mounted: true } }, `${d} mounted`);
      assert.equal(mountsAt(d), 1, `${d} mounted once`);
    }
    assert.deepEqual(settled[24], { status: 'fulfilled', value: { mounted: false } });
    assert.deepEqual(settled[25], { status: 'fulfilled', value: { mounted: false } });
    const failed = settled[26];
    assert.equal(failed?.status, 'rejected');
    assert.ok(failed.status === 'rejected' && failed.reason instanceof MountHelperError && failed.reason.code === 'ALLOC_MOUNT_FAILED' && /missing-too/.test(failed.reason.message), String(failed.status === 'rejected' ? failed.reason : ''));
    const r = await helper.request<{ unmounted: number; left: string[] }>({ op: 'unmount', root: path.join(root, 'many-0') });
    assert.deepEqual(r, { unmounted: 1, left: [] });
  });

  it('detaches a mount that is busy (a process works in it): nothing is left mounted', async () => {
    const busy = path.join(root, 'busy');
    mkdirSync(busy);
    await helper.request(tmpfs(busy));
    const holder = spawn('sleep', ['30'], { cwd: busy, stdio: 'ignore' });
    await once(holder, 'spawn');
    try {
      assert.deepEqual(await helper.request({ op: 'unmount', root: busy }), { unmounted: 1, left: [] });
      assert.equal(mountsAt(busy), 0);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('mounts a tmpfs by mount(2) with no process started for it, and by mount(8) once that way is lost: each directory mounted once, with its options', async () => {
    const c = path.join(root, 'c');
    const d = path.join(root, 'd');
    mkdirSync(c);
    mkdirSync(d);
    const secrets = (dir: string): { op: 'mount'; args: string[]; unlessOwnFs: string } => ({ op: 'mount', args: ['-t', 'tmpfs', '-o', 'size=1m,mode=0777,noexec,nosuid,nodev', 'tmpfs', dir], unlessOwnFs: dir });
    assert.deepEqual(await helper.request(secrets(c)), { mounted: true });
    // The one process serving mount(2) for the helper: stopped, it holds the next request; killed, it is lost.
    const kids = readFileSync(`/proc/${helper.pid}/task/${helper.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    const mounter = kids.find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('perl'));
    assert.ok(mounter, `a mount(2) process under the helper (children: ${kids.join(', ')})`);
    process.kill(mounter, 'SIGSTOP');
    const held = helper.request(secrets(d));
    process.kill(mounter, 'SIGKILL');
    assert.deepEqual(await held, { mounted: true });
    for (const dir of [c, d]) {
      assert.equal(mountsAt(dir), 1, `${dir} mounted once`);
      const line = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').find((l) => l.split(' ')[4] === dir) ?? '';
      for (const flag of ['noexec', 'nosuid', 'nodev']) assert.match(line.split(' ')[5] ?? '', new RegExp(flag), `${dir} is ${flag}`);
      assert.match(line.split(' - ')[1] ?? '', /^tmpfs tmpfs rw,size=1024k,mode=777/, `${dir}: ${line}`);
    }
  });

  it('is replaced when it dies: a safe request is asked again, an unsafe one fails clearly', async () => {
    const b = path.join(root, 'b');
    mkdirSync(b);
    await helper.request({ op: 'sh', script: 'true' });
    const first = helper.pid!;
    // Stopped, it reads nothing: both requests are pending when it is killed.
    process.kill(first, 'SIGSTOP');
    const safe = helper.request(tmpfs(b));
    const unsafe = helper.request({ op: 'sh', script: `mount -t tmpfs tmpfs ${b}` });
    process.kill(first, 'SIGKILL');
    await assert.rejects(unsafe, (err: unknown) => err instanceof MountHelperError && err.code === 'ALLOC_MOUNT_HELPER_DIED' && /may or may not/.test(err.message));
    assert.deepEqual(await safe, { mounted: true });
    assert.notEqual(helper.pid, first);
    assert.equal(mountsAt(b), 1, 'mounted exactly once');
  });

  it('warmed, runs before any request and answers the first with that process; a process that only warmed it exits on its own', async () => {
    const warmed = new MountHelper();
    warmed.warm();
    const pid = warmed.pid;
    assert.ok(pid && existsSync(`/proc/${pid}`), 'a helper process runs');
    warmed.warm();
    assert.equal(warmed.pid, pid, 'a second warm starts no other');
    const d = path.join(root, 'warm', 'x');
    await warmed.request({ op: 'build', dirs: [[d, 0o750]], mounts: [] });
    assert.equal(statSync(d).mode & 0o777, 0o750);
    assert.equal(warmed.pid, pid, 'the first request went to the warmed process');
    warmed.stop();
    warmed.warm();
    assert.equal(warmed.pid, pid, 'no warm after stop');

    // An agent that warmed the helper and then had nothing more to do still exits (the helper holds nothing open).
    const code = `import { mountHelper } from ${JSON.stringify(new URL('./index.ts', import.meta.url).href)};\nmountHelper().warm();\nconsole.log(mountHelper().pid);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    const [exitCode] = (await once(child, 'exit')) as [number | null];
    assert.equal(exitCode, 0);
    assert.match(out.trim(), /^\d+$/, 'it had started a helper');
  });
});
