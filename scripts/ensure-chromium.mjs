// Makes sure the headless browser the web UI tests drive (test/ui, through
// playwright-core) is installed: when Debian's `chromium` is missing and we
// run as root on a Debian-like system, installs it with apt-get, as
// scripts/ensure-etcd.mjs does for etcd. Playwright's own browser download is
// never used (no network but the package registries). Exits non-zero with a
// clear message when chromium is missing and cannot be installed. Safe to run
// repeatedly (a no-op once chromium is there).
//
// Usage: node scripts/ensure-chromium.mjs   (run by scripts/run-tests.mjs)
import { ensureDebianTool, runAsScript } from './_debian-tool.mjs';

/** The browser the UI tests start: BERTH_TEST_CHROMIUM, else Debian's. */
export const CHROMIUM = process.env.BERTH_TEST_CHROMIUM ?? '/usr/bin/chromium';

export function ensureChromium() {
  return ensureDebianTool({ bin: CHROMIUM, pkg: 'chromium', overrideVar: 'BERTH_TEST_CHROMIUM', why: 'the web UI tests need a real headless browser' });
}

runAsScript(import.meta.url, 'ensure-chromium', ensureChromium);
