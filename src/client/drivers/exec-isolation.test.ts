// What an exec task sees: its chroot and pid namespace, volume mounts with
// each propagation mode observed from inside, read-only volumes, and the
// group's network namespace. Real namespaces and mounts (tests run as root).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { NetworkManager } from '../network/index.js';
import { DriverHarness, eventually, execIn } from '../../../test/support/client-drivers.js';
import type { DriverError } from './driver-error.js';
import { ExecDriver } from './exec-driver.js';
import { RawExecDriver } from './raw-exec-driver.js';

function isMountpoint(p: string): boolean {
  try {
    execFileSync('mountpoint', ['-q', p]);
    return true;
  } catch {
    return false;
  }
}

describe('exec isolation', () => {
  let h: DriverHarness;
  let driver: ExecDriver;

  beforeEach(() => {
    h = new DriverHarness();
    driver = new ExecDriver({ stateDir: h.stateDir });
    h.drivers.push(driver);
  });
  afterEach(() => h.cleanup());

  it('runs the task under an init (pid 1 of its own pid namespace), chrooted, with system dirs read-only and nothing of the host leaking', async () => {
    const cfg = h.config('box', 'echo $PPID > /local/pid; ls / > /local/.listing && mv /local/.listing /local/root-listing; touch /usr/berth-probe 2>/dev/null && echo wrote > /local/usr; exec sleep 1000');
    const handle = await h.start(driver, cfg);
    await eventually('task wrote its listing', () => existsSync(path.join(cfg.taskDir, 'root-listing')));
    // The task's parent is pid 1, Berth's init, which forwards signals and reaps orphans.
    assert.equal(readFileSync(path.join(cfg.taskDir, 'pid'), 'utf8').trim(), '1');
    const init = await execIn(driver, cfg.id, ['/bin/sh', '-c', 'tr "\\0" " " < /proc/1/cmdline']);
    assert.match(init.out, /berth-init/);
    const listing = readFileSync(path.join(cfg.taskDir, 'root-listing'), 'utf8').split('\n');
    for (const d of ['alloc', 'bin', 'dev', 'etc', 'local', 'proc', 'secrets', 'tmp', 'usr']) assert.ok(listing.includes(d), `${d} in /`);
    assert.ok(!listing.includes('work') && !listing.includes('root'), 'host dirs stay outside');
    assert.equal(existsSync(path.join(cfg.taskDir, 'usr')), false, '/usr is read-only');
    assert.equal(existsSync('/usr/berth-probe'), false);
    // Only the task's own processes are visible inside.
    const ps = await execIn(driver, cfg.id, ['/bin/sh', '-c', 'ls /proc | grep -E "^[0-9]+$" | sort -n | head -1']);
    assert.equal(ps.out.trim(), '1');
    // The private root and its mounts never appear on the host.
    assert.equal(isMountpoint(path.join(handle.stateDir, 'root')), false);
    const hostMounts = readFileSync('/proc/self/mountinfo', 'utf8');
    assert.ok(!hostMounts.includes(handle.stateDir), 'no mount under the executor state dir on the host');
  });

  it('binds volumes with their propagation: host-to-task sees host mounts, private does not, bidirectional mounts reach the host', async () => {
    const vols = path.join(h.dir, 'vols');
    const [h2t, priv, bidi] = ['h2t', 'priv', 'bidi'].map((n) => {
      const p = path.join(vols, n);
      mkdirSync(path.join(p, 'sub'), { recursive: true });
      return p;
    }) as [string, string, string];
    writeFileSync(path.join(priv, 'plain-file'), 'data');
    const cfg = h.config('vols', 'exec sleep 1000', {
      mounts: [
        { source: h2t, destination: '/vol/h2t', readOnly: true, propagation: 'host-to-task' },
        { source: priv, destination: '/vol/priv', readOnly: false, propagation: 'private' },
        { source: bidi, destination: '/vol/bidi', readOnly: false, propagation: 'bidirectional' },
      ],
    });
    await h.start(driver, cfg);
    // Mounts made on the host after the task started.
    for (const src of [h2t, priv]) {
      execFileSync('mount', ['-t', 'tmpfs', 'berth-test', path.join(src, 'sub')]);
      writeFileSync(path.join(src, 'sub', 'marker'), 'from-host');
    }
    const seen = await execIn(driver, cfg.id, ['/bin/sh', '-c', 'cat /vol/h2t/sub/marker; echo; cat /vol/priv/plain-file; echo; ls /vol/priv/sub']);
    assert.equal(seen.out, 'from-host\ndata\n', 'host-to-task shows the host mount; private shows the files but not the later mount');
    // Read-only volume: writes fail inside.
    const ro = await execIn(driver, cfg.id, ['/bin/sh', '-c', 'touch /vol/h2t/x']);
    assert.notEqual(ro.exitCode, 0);
    // A mount made inside a bidirectional volume appears on the host; one inside a private volume does not.
    const inner = await execIn(driver, cfg.id, [
      '/bin/sh',
      '-c',
      'mount -t tmpfs berth-inner /vol/bidi/sub && echo from-task > /vol/bidi/sub/m && mkdir -p /vol/priv/in && mount -t tmpfs berth-inner /vol/priv/in && echo x > /vol/priv/in/m',
    ]);
    assert.equal(inner.exitCode, 0, inner.err);
    assert.equal(readFileSync(path.join(bidi, 'sub', 'm'), 'utf8'), 'from-task\n');
    assert.equal(existsSync(path.join(priv, 'in', 'm')), false);
  });

  it('refuses bidirectional propagation on a read-only volume', async () => {
    const src = path.join(h.dir, 'ro-vol');
    mkdirSync(src);
    const cfg = h.config('bad', 'exec sleep 1000', {
      mounts: [{ source: src, destination: '/data', readOnly: true, propagation: 'bidirectional' }],
    });
    await assert.rejects(driver.startTask(cfg), (e: DriverError) => e.code === 'DRIVER_INVALID_MOUNT' && /read-only/.test(e.message));
    assert.equal(isMountpoint(src), false, 'nothing was mounted');
  });

  it('a failed namespace setup is a start failure, with the reason in the stderr log', async () => {
    const src = path.join(h.dir, 'vol');
    mkdirSync(src);
    const cfg = h.config('badsetup', 'exec sleep 1000', {
      mounts: [{ source: src, destination: '/proc/berth', readOnly: false, propagation: 'private' }],
    });
    await assert.rejects(driver.startTask(cfg), (e: DriverError) => e.code === 'DRIVER_START_FAILED' && /setting up/.test(e.message));
    assert.match(readFileSync(path.join(h.logDir, 'badsetup.stderr.0'), 'utf8'), /proc\/berth/);
  });

  it('raw_exec takes no volume mounts', async () => {
    const raw = new RawExecDriver({ stateDir: path.join(h.dir, 'raw') });
    h.drivers.push(raw);
    const cfg = h.config('raw', 'true', { mounts: [{ source: h.dir, destination: '/data', readOnly: false, propagation: 'private' }] });
    await assert.rejects(raw.startTask(cfg), (e: DriverError) => e.code === 'DRIVER_MOUNTS_UNSUPPORTED');
  });

  describe('network mode none', () => {
    const network = new NetworkManager({ prefix: 'r1test-' });
    const allocId = `alloc-${process.pid}`;
    afterEach(() => network.destroy(allocId));

    for (const kind of ['exec', 'raw_exec'] as const) {
      it(`${kind}: the task joins the group's namespace: loopback only, no route anywhere else`, async () => {
        const d = kind === 'exec' ? driver : new RawExecDriver({ stateDir: path.join(h.dir, 'raw') });
        if (d !== driver) h.drivers.push(d);
        const { path: nsPath } = await network.create(allocId);
        const cfg = h.config(`net-${kind}`, 'exec sleep 1000', { networkNamespacePath: nsPath });
        await h.start(d, cfg);
        const links = await execIn(d, cfg.id, ['/bin/sh', '-c', 'cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "']);
        assert.equal(links.out, 'lo\n');
        const routes = await execIn(d, cfg.id, ['/bin/sh', '-c', 'cat /proc/net/route | tail -n +2 | wc -l']);
        assert.equal(routes.out.trim(), '0', 'no IPv4 route leaves the namespace');
        // Loopback works: a listener and a client on 127.0.0.1 inside the namespace.
        const loop = await execIn(d, cfg.id, [
          process.execPath,
          '-e',
          `const net=require('net');const s=net.createServer(c=>c.end('pong')).listen(0,'127.0.0.1',()=>{net.connect(s.address().port,'127.0.0.1').on('data',d=>{process.stdout.write(d);process.exit(0)})})`,
        ]);
        assert.equal(loop.out, 'pong');
      });
    }
  });
});
