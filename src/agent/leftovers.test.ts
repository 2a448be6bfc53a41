// What an agent leaves of its data dir: a process running there (by its
// command line or its working directory) and a mount below it are named; the
// data dir's own mount and processes elsewhere are not.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { eventually } from '../../test/support/eventually.js';
import { describeLeftBehind, leftBehind } from './leftovers.js';

describe('leftBehind', () => {
  it('names the processes and mounts of a data dir, and nothing else', async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bleft-'));
    const staging = path.join(dir, 'client', 'csi', 'staging', 'v1');
    mkdirSync(staging, { recursive: true });
    assert.equal(spawnSync('mount', ['-t', 'tmpfs', 'berth-left', dir]).status, 0);
    mkdirSync(staging, { recursive: true });
    assert.equal(spawnSync('mount', ['-t', 'tmpfs', 'berth-left-staging', staging]).status, 0);
    const byCwd = spawn('sleep', ['600'], { cwd: staging, stdio: 'ignore' });
    const byArg = spawn('sh', ['-c', 'sleep 601; :', path.join(dir, 'client', 'd', 'logmon.sock')], { stdio: 'ignore' });
    const elsewhere = spawn('sleep', ['602'], { cwd: tmpdir(), stdio: 'ignore' });
    t.after(() => {
      for (const c of [byCwd, byArg, elsewhere]) c.kill('SIGKILL');
      spawnSync('umount', ['-l', staging]);
      spawnSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    });
    // Until each child has exec'ed its program (before that its command line is node's).
    await eventually('the children to run their programs', () =>
      [byCwd, byArg, elsewhere].every((c) => /^(sleep|sh)\0/.test(readFileSync(`/proc/${c.pid}/cmdline`, 'utf8'))),
    );
    const left = leftBehind(dir);
    assert.deepEqual(left.processes.map((p) => p.pid).sort(), [byCwd.pid, byArg.pid].sort());
    assert.deepEqual(left.mounts, [staging], 'the staging mount, not the data dir own mount');
    assert.deepEqual(left.namespaces, []);
    // A network record whose namespace still exists is named.
    mkdirSync(path.join(dir, 'client', 'network'), { recursive: true });
    const ns = `bleft${process.pid}`;
    assert.equal(spawnSync('ip', ['netns', 'add', ns]).status, 0);
    t.after(() => spawnSync('ip', ['netns', 'delete', ns]));
    writeFileSync(path.join(dir, 'client', 'network', `${ns}.json`), JSON.stringify({ allocId: 'a1', path: `/var/run/netns/${ns}`, ownNetns: true, mode: 'bridge' }));
    writeFileSync(path.join(dir, 'client', 'network', 'gone.json'), JSON.stringify({ allocId: 'a2', path: '/var/run/netns/bleft-gone', ownNetns: true, mode: 'bridge' }));
    assert.deepEqual(leftBehind(dir).namespaces, [`/var/run/netns/${ns}`]);
    const lines = describeLeftBehind(leftBehind(dir));
    assert.ok(lines.includes(`network namespace /var/run/netns/${ns}`), lines.join('\n'));
    assert.ok(lines.includes(`process ${byArg.pid}: sh -c sleep 601; : ${path.join(dir, 'client', 'd', 'logmon.sock')}`), lines.join('\n'));
    assert.ok(lines.includes(`mount ${staging}`));
  });
});
