/// <reference lib="dom" />
// The web UI in a real headless browser (Debian's chromium, driven by
// playwright-core) against a real dev agent running the hostpath plugin and a
// workload with a volume. A user logs in with the agent's token, opens every
// page and sees what the API says; watches a claim appear and be released on
// the open volume page without a reload, with the usage the workload wrote
// (the numbers the API reports, a chart of it over time with axes); sees a volume whose
// directory vanished turn abnormal, with the plugin's message, without a
// reload; stops a job from the UI and sees its progress; a read-only token sees no action button and the API refuses the
// action anyway; no secret is ever shown; pages work on a phone-sized screen
// and from the keyboard. Screenshots of every page go to .tmp/ui-shots/.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { Allocation, CSIPlugin, CSIPluginListStub, CSIVolume, NodeListStub, VolumeUsageHistory } from '../../src/api/index.js';
import { launchBrowser, shot } from '../support/browser.js';
import { mountsUnder, until } from '../support/agent-run.js';
import { UiCluster } from '../support/ui-cluster.js';
import { loginAs, openPage } from '../support/ui-pages.js';

const cluster = new UiCluster(mkdtempSync('/tmp/berth-ui-'));
const VOLUME = cluster.volume;
const MiB = 1024 * 1024;
/** What the first workload writes into the volume. */
const WRITE_MIB = 3;
let browser: Browser;
let page: Page;
const apiBodies: Array<Promise<string>> = [];

const apiGet = <T>(p: string): Promise<T> => cluster.get<T>(p);
const runJob = (id: string): Promise<string> => cluster.runJob(id);

/** Text of the page's <main>. */
async function mainText(p: Page = page): Promise<string> {
  return p.locator('main').innerText();
}

/** Opens a UI path and waits until its page has loaded its data (its heading shows). */
const open = (p: Page, urlPath: string, heading: RegExp): Promise<void> => openPage(p, cluster.agent.addr, urlPath, heading);
const login = (p: Page, token: string): Promise<void> => loginAs(p, cluster.agent.addr, token);

/** No secret in what the page shows or holds in its DOM. */
async function assertNoSecret(p: Page, where: string): Promise<void> {
  const html = await p.content();
  assert.ok(!html.includes(cluster.secret), `${where}: the volume's secret is in the page`);
  assert.ok(!html.includes(cluster.agent.token), `${where}: the management token is in the page`);
  assert.ok(!html.includes(cluster.readOnlyToken), `${where}: the read-only token is in the page`);
}

before(async () => {
  await cluster.start();
  browser = await launchBrowser();
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await ctx.newPage();
  // Every API answer the browser receives (but the followed event stream, which never ends), checked for secrets at the end.
  page.on('response', (res) => {
    const url = res.url();
    if (url.includes('/v1/') && !(url.includes('/v1/event/stream') && !url.includes('until=now'))) apiBodies.push(res.text().catch(() => ''));
  });
});

after(async () => {
  await browser?.close().catch(() => undefined);
  await cluster.stop();
});

describe('the web UI', { timeout: 400_000 }, () => {
  it('asks for a token, keeps it in session storage, and opens the overview with what the API counts', async () => {
    await page.goto(`${cluster.agent.addr}/ui/`);
    await page.getByLabel('API token').fill('not-a-token-of-this-cluster');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('alert').filter({ hasText: 'not known' }).waitFor();
    await shot(page, 'login');
    await login(page, cluster.agent.token);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('berth.token')), cluster.agent.token);
    const nodes = await apiGet<unknown[]>('/v1/nodes');
    const plugins = await apiGet<CSIPluginListStub[]>('/v1/plugins?type=csi');
    const overview = await mainText();
    assert.match(overview, new RegExp(`Nodes \\(${nodes.length}\\)`));
    assert.match(overview, new RegExp(`CSI plugins \\(${plugins.length}\\)`));
    assert.match(overview, /Volumes \(1\)/);
    assert.match(overview, /hostpath\s+healthy/);
    // Recent changes come from the event stream: the volume's creation is among them.
    await page.locator('[data-section="events"]').getByText(`default/${VOLUME}`).first().waitFor();
    await page.locator('[data-stream="live"]').waitFor();
    await shot(page, 'overview');
    await assertNoSecret(page, 'overview');
  });

  it('the volume page shows a claim appear and be released live, with the claim history', async () => {
    await open(page, `/ui/volumes/default/${VOLUME}`, new RegExp(`Volume ${VOLUME}`));
    const v = await apiGet<CSIVolume>(`/v1/volume/csi/${VOLUME}`);
    let text = await mainText();
    assert.match(text, /Capacity\s+10 MiB/);
    assert.equal(v.Capacity, 10 * 1024 * 1024);
    assert.match(text, /Secrets\s+token \(hidden\)/);
    assert.match(text, /single-node-writer/);
    assert.match(text, new RegExp(`topology\\.hostpath\\.csi\\.berth\\.dev/node\\s+${cluster.nodeId}`));
    assert.match(text, /Claims \(0\)/);
    // Usage comes from the nodes that have the volume published: none yet.
    assert.deepEqual((await apiGet<CSIVolume>(`/v1/volume/csi/${VOLUME}`)).BerthUsage, []);
    assert.match(text, /No usage reported/);
    // Mark this document: a reload would drop the mark.
    await page.evaluate(() => ((window as unknown as { berthMark: number }).berthMark = 42));

    const allocId = await cluster.runJob('ui-work', { writeMiB: WRITE_MIB });
    await page.locator(`[data-claim="${allocId}"]`).waitFor({ timeout: 60_000 });
    const claims = (await apiGet<CSIVolume>(`/v1/volume/csi/${VOLUME}`)).BerthClaims;
    assert.deepEqual(claims.map((c) => [c.AllocationID, c.Mode, c.State]), [[allocId, 'write', 'taken']]);
    text = await mainText();
    assert.match(text, /Claims \(1\)/);
    assert.match(text, new RegExp(`${allocId.slice(0, 8)}\\s+${cluster.nodeId.slice(0, 8)}\\s+write\\s+single-node-writer, file-system\\s+taken`));

    // The node reports the usage of the volume's directory every second; the open page shows what the API says.
    const shown = page.locator('[data-usage-bytes]');
    await until('the page to show the written usage', async () => Number((await shown.getAttribute('data-usage-bytes').catch(() => null)) ?? 0) >= WRITE_MIB * MiB);
    const usage = (await apiGet<CSIVolume>(`/v1/volume/csi/${VOLUME}`)).BerthUsage;
    assert.equal(usage.length, 1);
    const { Used: used, Total: total } = usage[0]!.Bytes!;
    assert.equal(usage[0]!.NodeID, cluster.nodeId);
    assert.ok(used >= WRITE_MIB * MiB && used < (WRITE_MIB + 1) * MiB, `the API reports ${used} bytes used`);
    assert.equal(total, 10 * MiB);
    assert.equal(Number(await shown.getAttribute('data-usage-bytes')), used);
    assert.equal(Number(await shown.getAttribute('data-usage-total')), total);
    const usageText = await shown.innerText();
    assert.match(usageText, new RegExp(`^${WRITE_MIB}\\.\\d MiB used of 10 MiB \\(${((used / total) * 100).toFixed(1).replace('.', '\\.')}%\\)(, \\d+ of \\d+ inodes)? on node ${cluster.nodeId.slice(0, 8)}`));
    assert.equal(Number(await page.getByRole('meter', { name: 'bytes used' }).getAttribute('aria-valuenow')), (used / total) * 100);
    assert.match(await page.locator('[data-condition]').innerText(), /^Condition: normal$/);
    // The chart: the usage history the API keeps, drawn once there are two reports, with axes in bytes.
    const chart = page.locator('svg[data-chart="bytes used"]');
    await until('two reports on the chart', async () => Number(await chart.getAttribute('data-points').catch(() => '0')) >= 2, 60_000);
    const points = Number(await chart.getAttribute('data-points'));
    assert.equal((await chart.locator('polyline').first().getAttribute('points'))!.trim().split(/\s+/).length, points);
    assert.match((await chart.getAttribute('data-last'))!, new RegExp(`^${WRITE_MIB}(\\.\\d)? MiB$`));
    assert.ok((await chart.locator('text.tick.y').allTextContents()).some((t) => t.endsWith(' MiB')), 'the y axis is in MiB');
    assert.match(await page.locator('[data-section="usage"] .legend').innerText(), /capacity: 10 MiB/);
    const samples = (await apiGet<VolumeUsageHistory>(`/v1/volume/csi/${VOLUME}/usage`)).Samples;
    assert.ok(samples.length >= points, `the API keeps ${samples.length} samples, the chart drew ${points}`);
    await shot(page, 'volume');

    await cluster.stopJob('ui-work');
    await page.locator('[data-section="claims"]').getByText('No claims').waitFor({ timeout: 60_000 });
    assert.equal(await page.evaluate(() => (window as unknown as { berthMark?: number }).berthMark), 42, 'the page was not reloaded');
    // The history: this claim taken (its first event), then released (the claim deleted).
    const history = page.locator('[data-section="history"]');
    await history.getByText('released').first().waitFor();
    const hist = await history.innerText();
    assert.match(hist, new RegExp(`claimed\\s+${allocId.slice(0, 8)}\\s+${cluster.nodeId.slice(0, 8)}\\s+write\\s+for writing`));
    assert.match(hist, new RegExp(`released\\s+${allocId.slice(0, 8)}\\s+${cluster.nodeId.slice(0, 8)}\\s+write\\s+reason: `));
    await assertNoSecret(page, 'volume page');
  });

  it('every list and detail page shows what the API says', async () => {
    const allocId = await runJob('ui-stop-me');

    await open(page, '/ui/jobs', /^Jobs$/);
    assert.match(await mainText(), /ui-stop-me\s+default\s+service\s+running\s+1 running/);
    await shot(page, 'jobs');

    await open(page, '/ui/jobs/default/ui-stop-me', /Job ui-stop-me/);
    let text = await mainText();
    assert.match(text, /app\s+1\s+work \(raw_exec\)\s+data: ui-data\s+1 running/);
    assert.match(text, /Every allocation this evaluation wanted was placed/);
    // The job's `ui` block: its description, an http(s) link as a link, anything else as text only.
    assert.match(text, /Job ui-stop-me, run by the UI tests/);
    assert.equal(await page.getByRole('link', { name: 'Runbook' }).getAttribute('href'), 'https://runbooks.example.com/ui-stop-me');
    assert.equal(await page.getByRole('link', { name: 'Not a link' }).count(), 0);
    assert.match(text, /Not a link: javascript:alert\(1\)/);
    await shot(page, 'job');

    await open(page, `/ui/allocations/${allocId}`, new RegExp(`Allocation ${allocId.slice(0, 8)}`));
    await page.locator('[data-logs="work/stdout"]').getByText(`ui-log-line from ${allocId}`).waitFor();
    text = await mainText();
    assert.match(text, new RegExp(`${VOLUME}\\s+hostpath\\s+read/write\\s+mounted`));
    assert.match(text, /Volume Mounted\s+CSI volume "ui-data" mounted by plugin "hostpath"/);
    assert.match(text, /Started\s+Task started by driver raw_exec/);
    await shot(page, 'allocation');

    // The list shows what Nomad's node rows carry (the node's CSI plugins are on its own page, below);
    // its drivers, allocations and resources are checked in test/ui/nodes.test.ts.
    await open(page, '/ui/nodes', /^Nodes$/);
    const nodeRow = (await apiGet<NodeListStub[]>('/v1/nodes')).find((n) => n.ID === cluster.nodeId)!;
    assert.match(await mainText(), new RegExp(`${cluster.nodeId.slice(0, 8)}\\s+${nodeRow.Name}\\s+dc1\\s+ready\\s+eligible`));

    const node = await apiGet<{ CSINodePlugins: Record<string, { HealthDescription: string }> }>(`/v1/node/${cluster.nodeId}`);
    await open(page, `/ui/nodes/${cluster.nodeId}`, /^Node /);
    text = await mainText();
    assert.match(text, /raw_exec\s+yes\s+healthy\s+ready/);
    assert.match(text, new RegExp(`hostpath\\s+node\\s+healthy\\s+${node.CSINodePlugins['hostpath']!.HealthDescription}`));
    assert.match(text, new RegExp(`hostpath\\s+controller\\s+healthy`));
    assert.ok(text.includes(allocId.slice(0, 8)), 'the node lists the allocation');

    await open(page, '/ui/plugins', /^CSI plugins$/);
    // Nomad's plugin rows name the provider without its version (the plugin's page shows it, below).
    assert.match(await mainText(), /hostpath\s+hostpath\.csi\.berth\.dev\s+healthy\s+1\/1\s+1\/1\s+1/);
    await shot(page, 'plugins');

    const plugin = await apiGet<CSIPlugin>('/v1/plugin/csi/hostpath');
    const nodeInfo = Object.values(plugin.Nodes ?? {})[0]?.NodeInfo;
    const nodeCapabilities = (
      [
        ['STAGE_UNSTAGE_VOLUME', nodeInfo?.RequiresNodeStageVolume],
        ['GET_VOLUME_STATS', nodeInfo?.SupportsStats],
        ['EXPAND_VOLUME', nodeInfo?.SupportsExpand],
        ['VOLUME_CONDITION', nodeInfo?.SupportsCondition],
      ] as const
    )
      .filter(([, on]) => on)
      .map(([name]) => name);
    await open(page, '/ui/plugins/hostpath', /CSI plugin hostpath/);
    assert.equal(await page.locator('[data-fact="controllers"]').innerText(), `${plugin.ControllersHealthy}/${plugin.ControllersExpected}`);
    assert.equal(await page.locator('[data-fact="nodes"]').innerText(), `${plugin.NodesHealthy}/${plugin.NodesExpected}`);
    text = await mainText();
    assert.equal(`${plugin.Provider} ${plugin.Version}`, 'hostpath.csi.berth.dev 0.1.0');
    assert.match(text, /Provider\s+hostpath\.csi\.berth\.dev 0\.1\.0/);
    for (const cap of nodeCapabilities) assert.ok(text.includes(cap), `capability ${cap} shown`);
    assert.match(text, /probe answered ready/);
    assert.match(text, new RegExp(`${VOLUME}\\s+default\\s+yes\\s+1`));
    await shot(page, 'plugin');

    await open(page, '/ui/volumes', /^Volumes$/);
    assert.match(await mainText(), new RegExp(`${VOLUME}\\s+default\\s+hostpath\\s+yes\\s+1 writer\\s+10 MiB`));
    await shot(page, 'volumes');
    await assertNoSecret(page, 'volumes');
  });

  it('a read-only token sees no action button, and the API refuses the action', async () => {
    const ro = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const p = await ro.newPage();
    await login(p, cluster.readOnlyToken);
    await open(p, '/ui/jobs/default/ui-stop-me', /Job ui-stop-me/);
    assert.equal(await p.getByRole('button', { name: 'Stop job' }).count(), 0);
    await open(p, `/ui/volumes/default/${VOLUME}`, new RegExp(`Volume ${VOLUME}`));
    await p.locator('[data-claim]').first().waitFor();
    assert.equal(await p.getByRole('button', { name: 'Detach' }).count(), 0);
    assert.match(await p.locator('header').innerText(), /read-only-1 \(read-only\)/);
    const status = await p.evaluate(async (token) => {
      const res = await fetch('/v1/job/ui-stop-me', { method: 'DELETE', headers: { Authorization: `Bearer ${token}` } });
      return res.status;
    }, cluster.readOnlyToken);
    assert.equal(status, 403);
    await shot(p, 'volume-read-only');
    await assertNoSecret(p, 'read-only volume page');
    await ro.close();
  });

  it('a management token stops a job from the UI, which shows the progress to the end', async () => {
    await open(page, '/ui/jobs/default/ui-stop-me', /Job ui-stop-me/);
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Stop job' }).click();
    await page.getByRole('status').filter({ hasText: /^Stopped: 1 allocation finished\.$/ }).waitFor({ timeout: 120_000 });
    const allocs = await apiGet<Array<{ ClientStatus: string; DesiredStatus: string }>>('/v1/job/ui-stop-me/allocations');
    assert.deepEqual(allocs.map((a) => a.DesiredStatus), ['stop']);
    assert.notEqual(allocs[0]!.ClientStatus, 'running');
    await shot(page, 'job-stopped');
  });

  it('detach is refused while an allocation uses the volume; force detach stops it and shows the progress to the end', async () => {
    const allocId = await runJob('ui-detach');
    await open(page, `/ui/volumes/default/${VOLUME}`, new RegExp(`Volume ${VOLUME}`));
    await page.locator(`[data-claim="${allocId}"]`).waitFor();
    const panel = page.locator(`[data-detach="${cluster.nodeId}"]`);
    page.once('dialog', (d) => void d.accept());
    await panel.getByRole('button', { name: 'Detach', exact: true }).click();
    await panel.getByRole('alert').filter({ hasText: `is in use on node ${cluster.nodeId} by allocation ${allocId}` }).waitFor();
    assert.equal((await cluster.get<CSIVolume>(`/v1/volume/csi/${VOLUME}`)).BerthClaims.length, 1, 'the refused detach changed nothing');

    page.once('dialog', (d) => void d.accept());
    await panel.getByRole('button', { name: 'Force detach' }).click();
    await panel.getByRole('status').filter({ hasText: new RegExp(`^Detached from node ${cluster.nodeId.slice(0, 8)}\\. Stopped allocation ${allocId.slice(0, 8)}\\.$`) }).waitFor({ timeout: 120_000 });
    // The status comes from the action's own read; the page's table follows on the same change.
    await page.locator(`[data-claim="${allocId}"]`).waitFor({ state: 'detached' });
    const alloc = await cluster.get<Allocation>(`/v1/allocation/${allocId}`);
    assert.equal(alloc.DesiredStatus, 'stop');
    assert.ok(!(await cluster.get<CSIVolume>(`/v1/volume/csi/${VOLUME}`)).BerthClaims.some((c) => c.AllocationID === allocId));
    await shot(page, 'volume-detached');
  });

  it('a volume whose directory vanished turns abnormal on its open page, with the plugin\'s message, without a reload', async () => {
    const sick = 'ui-sick';
    await cluster.createVolume(sick);
    await cluster.runJob('ui-sick-work', { volume: sick, writeMiB: 1 });
    await open(page, `/ui/volumes/default/${sick}`, new RegExp(`Volume ${sick}`));
    await page.locator('[data-condition="normal"]').waitFor({ timeout: 60_000 });
    await page.evaluate(() => ((window as unknown as { berthMark: number }).berthMark = 43));

    // The plugin keeps each volume in a directory of its own; remove this one behind its back.
    const volumesDir = `/var/lib/berth/hostpath/${cluster.nodeId}/volumes`;
    const blob = spawnSync('find', [volumesDir, '-name', 'blob-ui-sick-work', '-type', 'f'], { encoding: 'utf8' }).stdout.trim().split('\n')[0];
    assert.ok(blob, `the written file under ${volumesDir}`);
    rmSync(path.dirname(blob), { recursive: true, force: true });

    const condition = page.locator('[data-condition="abnormal"]');
    await condition.waitFor({ timeout: 60_000 });
    const api = (await apiGet<CSIVolume>(`/v1/volume/csi/${sick}`)).BerthCondition;
    assert.equal(api?.Abnormal, true);
    assert.match(api.Message, new RegExp(`the volume's directory ${path.dirname(blob)} has vanished from the node`));
    assert.equal(await condition.innerText(), `Condition: abnormal: ${api.Message}`);
    assert.match(await page.getByRole('heading', { level: 1 }).innerText(), new RegExp(`^Volume ${sick}\\s+abnormal: the volume`));
    assert.equal(await page.evaluate(() => (window as unknown as { berthMark?: number }).berthMark), 43, 'the page was not reloaded');
    await shot(page, 'volume-abnormal');
    // What an operator does for a volume the plugin no longer recognises (it refuses to unmount a
    // mount of a vanished directory): unmount it by hand, so that the node can finish releasing it.
    // Left mounted, the agent's stop retried the unmount for about 40 s before giving up.
    for (const m of mountsUnder(cluster.dir).filter((p) => p.includes(`/${sick}/`)).reverse()) spawnSync('umount', ['-l', m]);
    await cluster.stopJob('ui-sick-work');
  });

  it('no API answer the browser received carries a secret', async () => {
    const bodies = await Promise.all(apiBodies);
    assert.ok(bodies.length > 50, `the browser read the API (${bodies.length} answers)`);
    assert.ok(bodies.some((b) => b.includes('"BerthSecretNames"')), 'volume reads were among them');
    for (const b of bodies) assert.ok(!b.includes(cluster.secret), 'an API answer carried the volume secret');
  });

  it('works on a phone-sized screen, follows deep links, and is reachable from the keyboard', async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const p = await phone.newPage();
    await login(p, cluster.agent.token);
    // A deep link straight to a volume (the agent answers index.html; the page routes it).
    await open(p, `/ui/volumes/default/${VOLUME}`, new RegExp(`Volume ${VOLUME}`));
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page is ${overflow}px wider than the phone's screen`);
    await shot(p, 'volume-phone');
    await open(p, '/ui/plugins/hostpath', /CSI plugin hostpath/);
    assert.ok((await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)) <= 0, 'the plugin page fits the phone');
    await shot(p, 'plugin-phone');
    await phone.close();

    // Keyboard: Tab from the top reaches the skip link, then the sections; Enter follows.
    await open(page, '/ui/', /Cluster overview/);
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');
    let reached = false;
    for (let i = 0; i < 10 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = (await page.evaluate(() => document.activeElement?.textContent)) === 'Volumes';
    }
    assert.ok(reached, 'Tab reaches the Volumes link');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Volumes' }).waitFor();
  });
});
