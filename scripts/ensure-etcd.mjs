// Makes sure the `etcd` binary the tests start (test/support/etcd.ts) is
// installed: when it is missing and we run as root on a Debian-like system,
// installs Debian's `etcd-server` package with apt-get, non-interactively,
// the way CI sets up a fresh machine. Never starts or enables etcd as a
// service: the tests run their own members on free loopback ports.
// Exits non-zero with a clear message when etcd is missing and cannot be
// installed. Safe to run repeatedly (a no-op once etcd is there).
//
// Usage: node scripts/ensure-etcd.mjs   (run by scripts/run-tests.mjs)
import { spawnSync } from 'node:child_process';

const bin = process.env.BERTH_TEST_ETCD ?? 'etcd';

function installed() {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.split('\n')[0] : undefined;
}

function run(cmd, args) {
  // policy-rc.d-free way to keep the package's service from starting: invoke-rc.d honours RUNLEVEL=1.
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive', RUNLEVEL: '1' };
  const r = spawnSync(cmd, args, { stdio: 'inherit', env });
  if (r.error) throw r.error;
  return r.status === 0;
}

export function ensureEtcd() {
  const have = installed();
  if (have) return have;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const hasApt = spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0;
  if (!isRoot || !hasApt || process.env.BERTH_TEST_ETCD) {
    throw new Error(
      `${bin} is not installed; the state store tests need a real etcd (v3.4+). ` +
        `Install it (Debian/Ubuntu: apt-get install etcd-server) or set BERTH_TEST_ETCD to its path.`,
    );
  }
  console.error('ensure-etcd: etcd is missing; installing Debian package etcd-server');
  if (!run('apt-get', ['install', '-y', '--no-install-recommends', 'etcd-server'])) {
    // A fresh machine has no package lists yet.
    if (!run('apt-get', ['update']) || !run('apt-get', ['install', '-y', '--no-install-recommends', 'etcd-server'])) {
      throw new Error('apt-get could not install etcd-server; install it by hand (apt-get install etcd-server)');
    }
  }
  // The package may have started a system etcd on 2379 where systemd runs; the tests never use it.
  spawnSync('systemctl', ['disable', '--now', 'etcd'], { stdio: 'ignore' });
  const now = installed();
  if (!now) throw new Error('etcd-server was installed but `etcd --version` still fails');
  console.error(`ensure-etcd: installed ${now}`);
  return now;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    console.log(ensureEtcd());
  } catch (err) {
    console.error(`ensure-etcd: ${err.message}`);
    process.exit(1);
  }
}
