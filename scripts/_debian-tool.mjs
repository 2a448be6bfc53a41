// What scripts/ensure-etcd.mjs and scripts/ensure-chromium.mjs share: make
// sure a program the tests start is installed, installing its Debian package
// with apt-get, non-interactively, when it is missing and we run as root on a
// Debian-like system (the way CI sets up a fresh machine). Safe to repeat (a
// no-op once the program answers).
import { spawnSync } from 'node:child_process';

/**
 * Resolves with the first line of `bin --version`, installing Debian package
 * `pkg` first when that fails. Throws an Error with what to do when the
 * program is missing and cannot be installed (not root, no apt-get, or
 * `overrideVar` set in the environment: the user chose the path).
 * `aptEnv` is added to apt-get's environment; `afterInstall` runs once after
 * a successful install. `versionArgs` replaces `--version` for programs
 * without it (busybox answers `--help`).
 */
export function ensureDebianTool({ bin, pkg, overrideVar, why, aptEnv = {}, afterInstall = () => {}, versionArgs = ['--version'] }) {
  const installed = () => {
    const r = spawnSync(bin, versionArgs, { encoding: 'utf8' });
    // Some programs (the CNI plugins) print their version on stderr.
    return r.status === 0 ? (r.stdout.trim() || r.stderr.trim() || bin).split('\n')[0] : undefined;
  };
  const have = installed();
  if (have) return have;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const hasApt = spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0;
  if (!isRoot || !hasApt || process.env[overrideVar]) {
    throw new Error(`${bin} is not installed; ${why}. Install it (Debian/Ubuntu: apt-get install ${pkg}) or set ${overrideVar} to its path.`);
  }
  console.error(`${bin} is missing; installing Debian package ${pkg}`);
  const apt = (args) => {
    const r = spawnSync('apt-get', args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive', ...aptEnv } });
    if (r.error) throw r.error;
    return r.status === 0;
  };
  const install = ['install', '-y', '--no-install-recommends', pkg];
  // A fresh machine has no package lists yet.
  if (!apt(install) && !(apt(['update']) && apt(install))) throw new Error(`apt-get could not install ${pkg}; install it by hand (apt-get install ${pkg})`);
  afterInstall();
  const now = installed();
  if (!now) throw new Error(`${pkg} was installed but \`${bin} ${versionArgs.join(" ")}\` still fails`);
  console.error(`installed ${now}`);
  return now;
}

/** Runs `ensure` when `moduleUrl` is the script node was started with: prints its answer, or the error and exits 1. */
export function runAsScript(moduleUrl, name, ensure) {
  if (moduleUrl !== `file://${process.argv[1]}`) return;
  try {
    console.log(ensure());
  } catch (err) {
    console.error(`${name}: ${err.message}`);
    process.exit(1);
  }
}
