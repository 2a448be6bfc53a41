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
import { ensureDebianTool, runAsScript } from './_debian-tool.mjs';

const bin = process.env.BERTH_TEST_ETCD ?? 'etcd';

export function ensureEtcd() {
  return ensureDebianTool({
    bin,
    pkg: 'etcd-server',
    overrideVar: 'BERTH_TEST_ETCD',
    why: 'the state store tests need a real etcd (v3.4+)',
    // policy-rc.d-free way to keep the package's service from starting: invoke-rc.d honours RUNLEVEL=1.
    aptEnv: { RUNLEVEL: '1' },
    // The package may have started a system etcd on 2379 where systemd runs; the tests never use it.
    afterInstall: () => spawnSync('systemctl', ['disable', '--now', 'etcd'], { stdio: 'ignore' }),
  });
}

runAsScript(import.meta.url, 'ensure-etcd', ensureEtcd);
