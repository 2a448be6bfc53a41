// Makes sure the headless browser the web UI tests drive (test/ui, through
// playwright-core) is installed: when Debian's `chromium` is missing and we
// run as root on a Debian-like system, installs it with apt-get,
// non-interactively, as scripts/ensure-etcd.mjs does for etcd. Playwright's
// own browser download is never used (no network but the package registries).
// Exits non-zero with a clear message when chromium is missing and cannot be
// installed. Safe to run repeatedly (a no-op once chromium is there).
//
// Usage: node scripts/ensure-chromium.mjs   (run by scripts/run-tests.mjs)
import { spawnSync } from 'node:child_process';

/** The browser the UI tests start: BERTH_TEST_CHROMIUM, else Debian's. */
export const CHROMIUM = process.env.BERTH_TEST_CHROMIUM ?? '/usr/bin/chromium';

function installed() {
  const r = spawnSync(CHROMIUM, ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

function apt(args) {
  const r = spawnSync('apt-get', args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (r.error) throw r.error;
  return r.status === 0;
}

export function ensureChromium() {
  const have = installed();
  if (have) return have;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const hasApt = spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0;
  if (!isRoot || !hasApt || process.env.BERTH_TEST_CHROMIUM) {
    throw new Error(
      `${CHROMIUM} is not installed; the web UI tests need a real headless browser. ` +
        `Install it (Debian/Ubuntu: apt-get install chromium) or set BERTH_TEST_CHROMIUM to its path.`,
    );
  }
  console.error('ensure-chromium: chromium is missing; installing Debian package chromium');
  const args = ['install', '-y', '--no-install-recommends', 'chromium'];
  // A fresh machine has no package lists yet.
  if (!apt(args) && !(apt(['update']) && apt(args))) throw new Error('apt-get could not install chromium; install it by hand (apt-get install chromium)');
  const now = installed();
  if (!now) throw new Error('chromium was installed but `chromium --version` still fails');
  console.error(`ensure-chromium: installed ${now}`);
  return now;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    console.log(ensureChromium());
  } catch (err) {
    console.error(`ensure-chromium: ${err.message}`);
    process.exit(1);
  }
}
