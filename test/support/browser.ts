// A real headless browser for the web UI's tests and benchmark: Debian's
// chromium (scripts/ensure-chromium.mjs installs it when missing) driven by
// playwright-core through its executable path; playwright's own browser
// downloads are never used.

import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REPO } from './agent-run.js';

/** Where the UI tests save their screenshots (gitignored). */
export const SHOTS_DIR = `${REPO}/.tmp/ui-shots`;

/** The chromium binary: BERTH_TEST_CHROMIUM, else Debian's /usr/bin/chromium, installed first when missing. */
export function chromiumPath(): string {
  const r = spawnSync(process.execPath, [`${REPO}/scripts/ensure-chromium.mjs`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error('chromium is missing and could not be installed (see scripts/ensure-chromium.mjs)');
  return process.env['BERTH_TEST_CHROMIUM'] ?? '/usr/bin/chromium';
}

/** Starts headless chromium. Close it with browser.close(). */
export async function launchBrowser(): Promise<Browser> {
  // Tests run as root, where chromium's sandbox cannot start.
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** Saves a full-page screenshot as .tmp/ui-shots/<name>.png; resolves with its path. */
export async function shot(page: Page, name: string): Promise<string> {
  mkdirSync(SHOTS_DIR, { recursive: true });
  const file = `${SHOTS_DIR}/${name}.png`;
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
