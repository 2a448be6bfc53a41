// The task directory as Nomad's client builds it, on a real file system with
// real mounts (the tests run as root): layout and permissions, the secrets
// tmpfs, the chroot of a chroot driver (from the node's cache the second
// time), and nothing left mounted once the allocation is destroyed.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { AllocDir, ChrootCache, DEFAULT_CHROOT_ENV, mountPointsUnder, unmountAllUnder } from './index.js';

const root = mkdtempSync(path.join(tmpdir(), 'berth-allocdir-'));
after(async () => {
  await unmountAllUnder(root);
  rmSync(root, { recursive: true, force: true });
});

const mode = (p: string): string => (statSync(p).mode & 0o7777).toString(8);
const mountLine = (p: string): string => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').find((l) => l.split(' ')[4] === p) ?? '';

describe('the task directory as Nomad builds it', () => {
  it('has alloc/, local/, secrets/ (tmpfs, noexec), tmp/, alloc/data, alloc/logs, alloc/tmp with Nomad’s permissions', async () => {
    const a = new AllocDir({ root, allocId: 'a1' });
    await a.build(['web']);
    const t = a.task('web');
    assert.equal(mode(a.dir), '755');
    assert.equal(mode(a.sharedDir), '755');
    for (const sub of ['data', 'logs', 'tmp']) assert.equal(mode(path.join(a.sharedDir, sub)), '777', `alloc/${sub}`);
    assert.equal(mode(t.dir), '777');
    assert.equal(mode(t.localDir), '777');
    assert.equal(mode(t.tmpDir), '1777');
    const secrets = mountLine(t.secretsDir);
    assert.match(secrets, / - tmpfs /, 'secrets/ is a tmpfs');
    assert.match(secrets.split(' ')[5] ?? '', /noexec/, 'secrets/ is noexec');
    assert.equal(await a.buildTask('web', 'none'), 0, 'no chroot for FSIsolation none');
    assert.equal(existsSync(t.sharedTaskDir), false, 'a driver without isolation uses the host path of alloc/');
    await a.destroy();
    assert.equal(existsSync(a.dir), false);
  });

  it('a rebuild (after an agent restart) gives each directory its exact mode again and keeps one secrets tmpfs; a root that did not exist is made', async () => {
    const deep = path.join(root, 'not', 'yet');
    const a = new AllocDir({ root: deep, allocId: 'a3' });
    await a.build(['web']);
    const t = a.task('web');
    assert.equal(mode(a.dir), '755');
    assert.equal(mode(t.tmpDir), '1777');
    chmodSync(t.tmpDir, 0o700);
    chmodSync(a.sharedDir, 0o700);
    await a.build(['web']);
    assert.equal(mode(t.tmpDir), '1777', 'tmp/ back to 1777');
    assert.equal(mode(a.sharedDir), '755', 'alloc/ back to 755');
    assert.deepEqual(mountPointsUnder(a.dir), [t.secretsDir], 'one tmpfs, not stacked');
    await a.destroy();
    assert.equal(existsSync(a.dir), false);
  });

  it('embeds the chroot for a chroot driver, read-only, with alloc/ bound in; the second task reuses the node’s cache; destroy leaves nothing mounted', async () => {
    const hostFile = path.join(root, 'motd');
    writeFileSync(hostFile, 'hello from the host\n');
    const cache = new ChrootCache({ cacheDir: path.join(root, 'cache'), env: { ...DEFAULT_CHROOT_ENV, [hostFile]: '/srv/motd', '/no/such/dir': '/nothing' } });
    const a = new AllocDir({ root, allocId: 'a2', chroot: cache });
    await a.build(['one', 'two']);
    await a.buildTask('one', 'chroot');
    assert.ok(cache.warm, 'the plan is cached after the first task');
    assert.ok(existsSync(path.join(cache.dir, 'plan.json')), 'and written down for the next agent');
    await a.buildTask('two', 'chroot');
    for (const name of ['one', 'two']) {
      const t = a.task(name);
      assert.equal(lstatSync(path.join(t.dir, 'bin')).isSymbolicLink(), lstatSync('/bin').isSymbolicLink(), '/bin as on the host');
      if (lstatSync('/bin').isSymbolicLink()) assert.equal(readlinkSync(path.join(t.dir, 'bin')), readlinkSync('/bin'));
      assert.match(mountLine(path.join(t.dir, 'usr')).split(' ')[5] ?? '', /^ro/, 'usr is bound read-only');
      assert.ok(existsSync(path.join(t.dir, 'usr/bin/env')));
      assert.equal(statSync(path.join(t.dir, 'srv/motd')).ino, statSync(hostFile).ino, 'a file is hard-linked');
      assert.equal(existsSync(path.join(t.dir, 'nothing')), false, 'an absent host path is skipped');
      // The shared alloc/ is the same directory seen from the task; its logs/ read-only.
      writeFileSync(path.join(t.sharedTaskDir, 'data', `from-${name}`), name);
      assert.equal(readFileSync(path.join(a.sharedDir, 'data', `from-${name}`), 'utf8'), name);
      assert.match(mountLine(path.join(t.sharedTaskDir, 'logs')).split(' ')[5] ?? '', /^ro/);
      // A real chroot into the task directory finds the system and its dirs.
      const ls = execFileSync('chroot', [t.dir, '/bin/sh', '-c', 'ls /'], { encoding: 'utf8' }).split('\n');
      for (const d of ['alloc', 'bin', 'etc', 'local', 'secrets', 'tmp', 'usr']) assert.ok(ls.includes(d), `/${d} in the chroot: ${ls.join(' ')}`);
    }
    const before = mountPointsUnder(a.dir).length;
    await a.buildTask('one', 'chroot');
    assert.equal(mountPointsUnder(a.dir).length, before, 'a repeat mounts nothing twice');
    // A task dead for good gives its chroot binds back at once; its secrets stay until the allocation goes.
    const one = a.task('one');
    await a.releaseTask('one');
    assert.deepEqual(mountPointsUnder(one.dir), [one.secretsDir]);
    assert.equal(readFileSync(path.join(one.localDir, '..', 'srv', 'motd'), 'utf8'), 'hello from the host\n', 'its files stay');
    await a.releaseTask('one');
    await a.destroy();
    assert.deepEqual(mountPointsUnder(a.dir), []);
    assert.equal(existsSync(a.dir), false);
    assert.ok(existsSync('/usr/bin/env') && existsSync(hostFile), 'the host’s files are untouched');
  });

  it('a new cache over the same dir reads the plan an earlier agent wrote', async () => {
    const env = { '/usr': '/usr' };
    const first = new ChrootCache({ cacheDir: path.join(root, 'cache2'), env });
    await first.plan();
    writeFileSync(path.join(first.dir, 'plan.json'), JSON.stringify({ env, entries: [{ kind: 'dir', source: '/usr', dest: 'from-plan' }] }));
    const second = new ChrootCache({ cacheDir: path.join(root, 'cache2'), env });
    assert.deepEqual((await second.plan()).map((e) => e.dest), ['from-plan']);
  });
});
