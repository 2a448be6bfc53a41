/// <reference lib="dom" />
// Storage in the web UI, where Berth must be better than anyone: in a real
// headless browser against a real dev agent running the hostpath plugin (its
// drift check every 2 s). The volumes list shows usage, condition and claims
// from the one list read; the overview says "all clear", then flags an
// abnormal volume and a drift, linking to them, without flooding its recent
// changes with drift checks; the volume page draws its usage on a chart with
// axes in bytes and words its claim history; the doctor page finds a mount
// made behind Berth's back and repairs it through the page (the API and the
// kernel agree after); a read-only token sees the findings but no repair,
// and the API refuses it; every page fits a phone's screen.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { CSIVolume, CSIVolumeListStub, DriftReport } from '../../src/api/index.js';
import { mountsUnder, until } from '../support/agent-run.js';
import { launchBrowser, shot } from '../support/browser.js';
import { UiCluster } from '../support/ui-cluster.js';
import { loginAs, openPage } from '../support/ui-pages.js';

const cluster = new UiCluster(mkdtempSync('/tmp/berth-ui-storage-'), { volume: 'st-data', csiConfig: 'drift_interval = "2s"' });
const VOLUME = cluster.volume;
const SICK = 'st-sick';
const MiB = 1024 * 1024;
let browser: Browser;
let page: Page;
let workAlloc = '';
const planted: string[] = [];

const open = (p: Page, urlPath: string, heading: RegExp): Promise<void> => openPage(p, cluster.agent.addr, urlPath, heading);
const login = (p: Page, token: string): Promise<void> => loginAs(p, cluster.agent.addr, token);

const listRow = async (id: string): Promise<CSIVolumeListStub | undefined> =>
  (await cluster.get<CSIVolumeListStub[]>('/v1/volumes?type=csi&namespace=*')).find((v) => v.ID === id);

/** How many pixels the page is wider than its screen (0 or less: it fits). */
const overflow = (p: Page): Promise<number> => p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

before(async () => {
  await cluster.start();
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await login(page, cluster.agent.token);
});

after(async () => {
  await browser?.close().catch(() => undefined);
  for (const m of planted) spawnSync('umount', ['-l', m]);
  await cluster.stop();
});

describe('storage in the web UI', { timeout: 600_000 }, () => {
  it('the overview says all clear when nothing is wrong, and its recent changes are in words, without the drift checks', async () => {
    await open(page, '/ui/', /Cluster overview/);
    await page.locator('[data-section="wrong"] [data-all-clear]').waitFor();
    // The drift loop checks every 2 s: its reports are on the stream, and left out of the list (counted).
    await until('a drift check on the stream', async () => (await page.locator('[data-hidden-changes]').innerText()).includes('drift checks'), 30_000);
    const changes = page.locator('[data-section="events"] ol.changes');
    await changes.getByText(`volume ${VOLUME} registered`).first().waitFor();
    const text = await changes.innerText();
    assert.ok(!/drift|DriftUpserted/i.test(text), `no drift check among the changes: ${text}`);
    assert.match(text, /plugin hostpath healthy: controllers 1\/1, nodes 1\/1/);
  });

  it('the volumes list shows usage, condition and claims as the list API has them, from one read of the list', async () => {
    workAlloc = await cluster.runJob('st-work', { writeMiB: 2 });
    const row = await until('the list API to carry the written usage and a condition', async () => {
      const r = await listRow(VOLUME);
      return r && (r.BerthUsage[0]?.Bytes?.Used ?? 0) >= 2 * MiB && r.BerthCondition ? r : undefined;
    }, 60_000);
    assert.deepEqual([row.CurrentWriters, row.CurrentReaders, row.BerthCondition?.Abnormal, row.BerthCapacity], [1, 0, false, 10 * MiB]);

    const fullReads: string[] = [];
    const onRequest = (r: { url(): string }): void => {
      if (/\/v1\/volume\/csi\/[^/?]+\?/.test(r.url())) fullReads.push(r.url());
    };
    page.on('request', onRequest);
    await open(page, '/ui/volumes', /^Volumes$/);
    const usage = page.locator('tr', { has: page.getByRole('link', { name: VOLUME, exact: true }) }).locator('[data-usage-bytes]');
    const latest = await until('the page and the list API to agree on the usage', async () => {
      const [shown, api] = [Number(await usage.getAttribute('data-usage-bytes')), (await listRow(VOLUME))?.BerthUsage[0]?.Bytes?.Used];
      return shown === api ? api : undefined;
    }, 30_000);
    assert.ok(latest >= 2 * MiB && latest < 3 * MiB, `${latest} bytes used`);
    page.off('request', onRequest);
    assert.deepEqual(fullReads, [], 'the list page reads no volume in full');
    const text = await page.locator('main').innerText();
    assert.match(text, new RegExp(`${VOLUME}\\s+default\\s+hostpath\\s+yes\\s+1 writer\\s+10 MiB\\s+2(\\.\\d)? MiB of 10 MiB \\(2\\d%\\)\\s+normal\\s+none`));
    assert.match(text, /None abnormal or drifting/);
    await shot(page, 'volumes');
  });

  it('the volume page charts the usage with axes in bytes and time, its last value what the API keeps', async () => {
    await open(page, `/ui/volumes/default/${VOLUME}`, new RegExp(`Volume ${VOLUME}`));
    const chart = page.locator('svg[data-chart="bytes used"]');
    await until('two usage reports on the chart', async () => Number(await chart.getAttribute('data-points').catch(() => '0')) >= 2, 60_000);
    assert.equal(await chart.getAttribute('role'), 'img');
    assert.equal(await chart.getAttribute('aria-label'), 'bytes used');
    const yTicks = await chart.locator('text.tick.y').allTextContents();
    assert.ok(yTicks.length >= 3 && yTicks.every((t) => /^\d+(\.\d)? (B|KiB|MiB|GiB)$/.test(t)), `y ticks: ${yTicks.join(' | ')}`);
    assert.ok(yTicks.some((t) => t.endsWith('MiB')), `a tick in MiB: ${yTicks.join(' | ')}`);
    const xTicks = await chart.locator('text.tick.x').allTextContents();
    assert.ok(xTicks.length >= 2 && xTicks.every((t) => /^\d\d:\d\d(:\d\d)?$/.test(t)), `x ticks: ${xTicks.join(' | ')}`);
    // Used and capacity: a legend names both.
    assert.match(await page.locator('[data-section="usage"] .legend').innerText(), /used: 2(\.\d)? MiB\s+capacity: 10 MiB/);
    const samples = (await cluster.get<{ Samples: Array<{ BytesUsed: number | null }> }>(`/v1/volume/csi/${VOLUME}/usage`)).Samples;
    const last = samples.at(-1)!.BytesUsed!;
    assert.equal(await chart.getAttribute('data-last'), `${(last / MiB).toFixed(1).replace(/\.0$/, '')} MiB`);
    await shot(page, 'volume');
  });

  it('the claim history says what happened to each claim in words: claimed, then released with the reason, never "published" once released', async () => {
    await cluster.stopJob('st-work');
    await open(page, `/ui/volumes/default/${VOLUME}`, new RegExp(`Volume ${VOLUME}`));
    const history = page.locator('[data-section="history"]');
    await history.locator('[data-change="released"]').first().waitFor({ timeout: 60_000 });
    const rows = (await history.locator('tbody tr').allInnerTexts()).map((r) => r.replace(/\s+/g, ' '));
    const mine = rows.filter((r) => r.includes(workAlloc.slice(0, 8)));
    assert.match(mine.at(-1)!, new RegExp(`^\\d+ claimed ${workAlloc.slice(0, 8)} ${cluster.nodeId.slice(0, 8)} write for writing \\(single-node-writer, file-system\\)`));
    assert.match(mine[0]!, new RegExp(`^\\d+ released ${workAlloc.slice(0, 8)} ${cluster.nodeId.slice(0, 8)} write reason: \\S`));
    const released = mine.findIndex((r) => / released /.test(r));
    assert.ok(!/published/.test(mine[released]!), `the released row: ${mine[released]}`);
    assert.deepEqual((await cluster.get<CSIVolume>(`/v1/volume/csi/${VOLUME}`)).BerthClaims, []);
  });

  it('an abnormal volume is flagged on the volumes list and first on the overview, linking to it', async () => {
    await cluster.createVolume(SICK);
    await cluster.runJob('st-sick-work', { volume: SICK, writeMiB: 1 });
    await until('the sick volume normal first', async () => (await listRow(SICK))?.BerthCondition?.Abnormal === false, 60_000);
    const volumesDir = `/var/lib/berth/hostpath/${cluster.nodeId}/volumes`;
    const blob = spawnSync('find', [volumesDir, '-name', 'blob-st-sick-work', '-type', 'f'], { encoding: 'utf8' }).stdout.trim().split('\n')[0];
    assert.ok(blob, `the written file under ${volumesDir}`);
    rmSync(path.dirname(blob), { recursive: true, force: true });
    const message = await until('the list API to say abnormal', async () => {
      const c = (await listRow(SICK))?.BerthCondition;
      return c?.Abnormal ? c.Message : undefined;
    }, 60_000);

    await open(page, '/ui/volumes', /^Volumes$/);
    const flagged = page.locator(`[data-flagged="${SICK}"]`);
    await flagged.waitFor();
    assert.equal(await flagged.innerText(), `${SICK}: abnormal: ${message}`);
    const row = page.locator('tr.flag', { has: page.getByRole('link', { name: SICK, exact: true }) });
    assert.match(await row.locator('[data-condition]').innerText(), new RegExp(`^abnormal: ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    assert.match(await page.locator('[data-summary]').innerText(), /1 volume need a look/);

    await open(page, '/ui/', /Cluster overview/);
    const wrong = page.locator('[data-section="wrong"]');
    const link = wrong.locator('[data-trouble="abnormal-volumes"]').getByRole('link', { name: `volume ${SICK}: ${message}` });
    await link.waitFor();
    // What is wrong comes before the counts.
    assert.ok(await page.evaluate(() => {
      const w = document.querySelector('[data-section="wrong"]')!;
      const n = document.querySelector('[data-section="nodes"]')!;
      return (w.compareDocumentPosition(n) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0;
    }));
    assert.match(await page.locator('[data-section="events"]').innerText(), new RegExp(`volume ${SICK} abnormal: `));
    await shot(page, 'overview');
    await link.click();
    await page.getByRole('heading', { level: 1, name: new RegExp(`Volume ${SICK}`) }).waitFor();

    // The plugin refuses to unmount a vanished directory's mount: unmount it by hand, as an operator would, and stop the job.
    for (const m of mountsUnder(cluster.dir).filter((p) => p.includes(`/${SICK}/`)).reverse()) spawnSync('umount', ['-l', m]);
    await cluster.stopJob('st-sick-work');
    // Its claim released and the drift loop's books clean again before the doctor's test.
    await until('the sick volume released, with no drift', async () => {
      const r = await listRow(SICK);
      return r && r.CurrentWriters + r.CurrentReaders + r.BerthClaimsReleasing === 0 && r.BerthDriftFindings === 0;
    }, 120_000);
  });

  it('the doctor page finds a mount made behind Berth\'s back, the overview flags it, and the page repairs it (the API and the kernel agree after)', async () => {
    await cluster.runJob('st-doctor', {});
    const publication = mountsUnder(cluster.dir).find((m) => m.includes('/per-alloc/'));
    assert.ok(publication, `a publication under ${cluster.dir}: ${mountsUnder(cluster.dir).join(', ')}`);
    const root = publication.slice(0, publication.indexOf('/per-alloc/'));
    const stray = path.join(root, 'per-alloc', 'no-such-alloc', 'ghost', 'rw-file-system-single-node-writer');
    const source = path.join(cluster.dir, 'ghost-source');
    mkdirSync(stray, { recursive: true });
    mkdirSync(source, { recursive: true });
    assert.equal(spawnSync('mount', ['--bind', source, stray]).status, 0);
    planted.push(stray);

    // The drift loop sees it: the overview says so, and links to the doctor.
    await open(page, '/ui/', /Cluster overview/);
    const drift = page.locator('[data-trouble="drift"]');
    await drift.getByRole('link', { name: new RegExp(`has a mount at ${stray}`) }).waitFor({ timeout: 30_000 });
    await drift.getByRole('link', { name: 'Open the volume doctor' }).click();
    await page.getByRole('heading', { level: 1, name: 'Volume doctor' }).waitFor();

    const found = await cluster.get<DriftReport>('/v1/volumes/doctor');
    assert.deepEqual(found.Findings.map((f) => [f.Kind, f.Path, f.Fixable]), [['mount-without-record', stray, true]]);
    const findings = page.locator('[data-section="findings"]');
    await findings.locator('[data-kind="mount-without-record"]').waitFor();
    const text = await findings.innerText();
    assert.match(text, /Differences \(1\)/);
    assert.match(text, /Mounted on a node without a record in Berth/);
    assert.ok(text.includes(found.Findings[0]!.Message), text);
    assert.match(text, /safe: the doctor repairs it\./);
    await shot(page, 'doctor');

    page.once('dialog', (d) => {
      assert.match(d.message(), new RegExp(`has a mount at ${stray}`));
      void d.accept();
    });
    await findings.getByRole('button', { name: 'Repair 1 safe difference' }).click();
    // The button's last word: what was repaired, or the API's refusal.
    const outcome = await until('the repair to end', async () => {
      const t = await page.locator('[data-repair]').innerText();
      return /Repaired \d|\(\w+\)$/.test(t) || (await page.locator('[data-repair] [role="alert"]').count()) > 0 ? t : undefined;
    }, 60_000);
    assert.match(outcome, /Repaired 1 difference\.$/);
    assert.match(await page.locator('[data-section="repaired"]').innerText(), new RegExp(`has a mount at ${stray}`));
    await page.locator('[data-section="findings"] [data-all-clear]').waitFor();
    assert.deepEqual((await cluster.get<DriftReport>('/v1/volumes/doctor')).Findings, []);
    assert.ok(!mountsUnder(cluster.dir).includes(stray), 'the stray mount is gone from the kernel');
    assert.ok(mountsUnder(cluster.dir).includes(publication), 'the live publication is untouched');
    await shot(page, 'doctor-repaired');
  });

  it('a read-only token sees the doctor\'s findings but no repair button, and the API refuses the repair', async () => {
    const stray = path.join(cluster.dir, 'ro-ghost');
    const publication = mountsUnder(cluster.dir).find((m) => m.includes('/per-alloc/'))!;
    const target = path.join(publication.slice(0, publication.indexOf('/per-alloc/')), 'per-alloc', 'no-such-alloc', 'ro-ghost', 'rw-file-system-single-node-writer');
    mkdirSync(stray, { recursive: true });
    mkdirSync(target, { recursive: true });
    assert.equal(spawnSync('mount', ['--bind', stray, target]).status, 0);
    planted.push(target);
    const ro = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await ro.newPage();
    await login(p, cluster.readOnlyToken);
    await open(p, '/ui/volumes/doctor', /Volume doctor/);
    await p.locator('[data-kind="mount-without-record"]').first().waitFor();
    assert.equal(await p.getByRole('button', { name: /Repair/ }).count(), 0);
    const status = await p.evaluate(async (token) => (await fetch('/v1/volumes/doctor', { method: 'POST', headers: { 'X-Nomad-Token': token } })).status, cluster.readOnlyToken);
    assert.equal(status, 403);
    assert.ok(mountsUnder(cluster.dir).includes(target), 'the refused repair changed nothing');
    await shot(p, 'doctor-read-only');
    await ro.close();
  });

  it('every storage page and the overview fit a phone (390x844): nothing scrolls sideways, tables become cards', async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const p = await phone.newPage();
    await login(p, cluster.agent.token);
    const pages: Array<[string, RegExp, string]> = [
      ['/ui/', /Cluster overview/, 'overview-phone'],
      ['/ui/volumes', /^Volumes$/, 'volumes-phone'],
      [`/ui/volumes/default/${VOLUME}`, new RegExp(`Volume ${VOLUME}`), 'volume-phone'],
      ['/ui/volumes/doctor', /Volume doctor/, 'doctor-phone'],
    ];
    for (const [url, heading, name] of pages) {
      await open(p, url, heading);
      assert.ok((await overflow(p)) <= 0, `${url} is ${await overflow(p)}px wider than the phone's screen`);
      await shot(p, name);
    }
    // The volumes list as cards: each cell says its column.
    await open(p, '/ui/volumes', /^Volumes$/);
    const cell = p.locator('.table-wrap.cards td[data-label="Condition"]').first();
    assert.equal(await cell.evaluate((el) => getComputedStyle(el, '::before').content), '"Condition"');
    // The header's sections stay in one row that scrolls within itself.
    assert.ok(await p.locator('header nav').evaluate((el) => el.scrollWidth >= el.clientWidth && el.getBoundingClientRect().right <= window.innerWidth));
    await phone.close();
  });
});
