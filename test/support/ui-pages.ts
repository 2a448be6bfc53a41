// Steps the web UI's tests take on a page: log in through the form, open a
// path and wait until its page has loaded its data (its <h1> shows).

import type { Page } from 'playwright-core';

/** How long a page may take to show its heading (a loaded 2-core machine runs agents and Chromium side by side). */
const PAGE_WAIT_MS = 60_000;

/** Logs in at `addr`'s /ui/ with `token` through the login form; resolves once the overview shows. */
export async function loginAs(p: Page, addr: string, token: string): Promise<void> {
  await p.goto(`${addr}/ui/`);
  await p.getByLabel('API token').fill(token);
  await p.getByRole('button', { name: 'Log in' }).click();
  await p.getByRole('heading', { level: 1, name: 'Cluster overview' }).waitFor({ timeout: PAGE_WAIT_MS });
}

/** Opens a UI path at `addr` and waits until its page has loaded its data (its heading shows). */
export async function openPage(p: Page, addr: string, urlPath: string, heading: RegExp | string): Promise<void> {
  await p.goto(`${addr}${urlPath}`);
  await p.getByRole('heading', { level: 1, name: heading }).waitFor({ timeout: PAGE_WAIT_MS });
}
