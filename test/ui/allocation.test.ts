/// <reference lib="dom" />
// The allocation page in a real headless browser (Debian's chromium through
// playwright-core) against a real dev agent running the hostpath plugin: a
// job with a prestart task, a leader and a poststart sidecar, a static and a
// dynamic port, and a service with an HTTP check. The page shows what the
// API says (tasks, lifecycle, events, ports, the check's last result, CPU and
// memory charts whose last values are what the stats route answered); a
// writer restarts a task, signals it, restarts them all and stops the
// allocation through the page, and the API shows each; a read-only token
// sees no action and the API refuses them; a volume whose directory vanished
// shows abnormal with the plugin's message, not mounted; the page fits a
// phone. Screenshots go to .tmp/ui-shots/.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
import type { AllocCheckStatuses, Allocation, AllocationListStub, AllocResourceUsage, CSIVolume } from '../../src/api/index.js';
import { freePort, mountsUnder, ok, until } from '../support/agent-run.js';
import { launchBrowser, shot } from '../support/browser.js';
import { HOLD_MIB, lifecycleJob } from '../support/ui-alloc.js';
import { UiCluster } from '../support/ui-cluster.js';
import { loginAs } from '../support/ui-pages.js';

const cluster = new UiCluster(mkdtempSync('/tmp/berth-ui-alloc-'), { volume: 'ua-data' });
const JOB = 'ua-web';
const MiB = 1024 * 1024;
let browser: Browser;
let page: Page;
let allocId = '';
let staticPort = 0;
/** The stats the page itself read, newest last. */
const pageStats: AllocResourceUsage[] = [];

const apiGet = <T>(p: string): Promise<T> => cluster.get<T>(p);

const login = (p: Page, token: string): Promise<void> => loginAs(p, cluster.agent.addr, token);

async function openAlloc(p: Page, id: string): Promise<void> {
  await p.goto(`${cluster.agent.addr}/ui/allocations/${id}`);
  await p.getByRole('heading', { level: 1, name: new RegExp(`Allocation ${id.slice(0, 8)}`) }).waitFor();
}

/** A value as the charts print it ("250 MHz", "1.2 GHz", "30.5 MiB") in MHz or bytes. */
function parseShown(text: string): number {
  const m = /^(-?[\d.]+) (MHz|GHz|B|KiB|MiB|GiB)$/.exec(text);
  assert.ok(m, `a chart value: "${text}"`);
  const scale: Record<string, number> = { MHz: 1, GHz: 1000, B: 1, KiB: 1024, MiB: MiB, GiB: 1024 * MiB };
  return Number(m[1]) * scale[m[2]!]!;
}

/** The memory the page charts for a task's usage: the cgroup's usage where measured, else the resident set. */
function memoryOf(u: AllocResourceUsage, task: string): number {
  const mem = u.Tasks?.[task]?.ResourceUsage?.MemoryStats;
  assert.ok(mem, `stats of task ${task}`);
  return mem.Measured?.includes('Usage') ? mem.Usage : mem.RSS;
}

/** Events of `type` the API holds for the task. */
async function events(task: string, type: string): Promise<number> {
  const a = await apiGet<Allocation>(`/v1/allocation/${allocId}`);
  return (a.TaskStates?.[task]?.Events ?? []).filter((e) => e.Type === type).length;
}

/** How many times the main task has said it is listening (its signal handlers are set by then), as the API's log says. */
async function mainStarts(): Promise<number> {
  const res = await fetch(`${cluster.agent.addr}/v1/client/fs/logs/${allocId}?task=main&type=stdout&plain=true`, { headers: { Authorization: `Bearer ${cluster.agent.token}` } });
  assert.equal(res.status, 200);
  return (await res.text()).split('\n').filter((l) => l.startsWith('listening on ')).length;
}

/** Clicks `button`, which must ask to confirm in words that match `says`; accepts. */
async function clickAndConfirm(p: Page, button: Locator, says: RegExp): Promise<void> {
  const dialog = p.waitForEvent('dialog');
  const clicked = button.click();
  const d = await dialog;
  const message = d.message();
  await d.accept();
  await clicked;
  assert.match(message, says);
}

before(async () => {
  await cluster.start();
  staticPort = await freePort();
  const file = path.join(cluster.dir, `${JOB}.hcl`);
  writeFileSync(file, lifecycleJob(cluster.dir, JOB, staticPort));
  ok(await cluster.agent.cli(['job', 'run', file], { timeoutMs: 120_000 }), `berth job run ${JOB}`);
  // The CLI returns once the allocation is placed; its prestart task runs first.
  allocId = await until(`a running allocation of ${JOB}`, async () => {
    const allocs = await apiGet<AllocationListStub[]>(`/v1/job/${JOB}/allocations`);
    return allocs.find((a) => a.ClientStatus === 'running')?.ID;
  }, 120_000);
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.on('response', (res) => {
    if (!res.url().includes(`/v1/client/allocation/${allocId}/stats`) || !res.ok()) return;
    res.json().then((b: AllocResourceUsage) => pageStats.push(b), () => undefined);
  });
  await login(page, cluster.agent.token);
});

after(async () => {
  await browser?.close().catch(() => undefined);
  await cluster.agent?.cli(['job', 'stop', JOB]).catch(() => undefined);
  await cluster.stop();
});

describe('the allocation page', { timeout: 400_000 }, () => {
  it('shows the tasks with their lifecycle, events and tools, the ports, the check result and live CPU and memory charts, as the API says', async () => {
    await openAlloc(page, allocId);
    const alloc = await apiGet<Allocation>(`/v1/allocation/${allocId}`);

    // Tasks: lifecycle in Nomad's words, state, events; a link to each tool (Exec for a writer).
    for (const [task, lifecycle] of [['init', 'prestart'], ['main', 'main, leader'], ['helper', 'poststart sidecar']] as const) {
      assert.equal(await page.locator(`[data-lifecycle="${task}"]`).innerText(), lifecycle, `task ${task}`);
      const section = page.locator(`[data-section="task-${task}"]`);
      const st = alloc.TaskStates![task]!;
      assert.match(await section.innerText(), new RegExp(`State\\s+${st.State}`));
      assert.equal(await page.locator(`[data-restarts="${task}"]`).innerText(), String(st.Restarts));
      assert.match(await section.getByRole('region', { name: `events of task ${task}` }).innerText(), /Started\s+Task started by driver raw_exec/);
      const base = `/ui/allocations/${allocId}`;
      assert.equal(await section.getByRole('link', { name: 'Logs' }).getAttribute('href'), `${base}/logs?task=${task}`);
      assert.equal(await section.getByRole('link', { name: 'Files' }).getAttribute('href'), `${base}/fs/`);
      assert.equal(await section.getByRole('link', { name: 'Exec' }).getAttribute('href'), `${base}/exec?task=${task}`);
    }
    assert.equal(alloc.TaskStates!['init']!.State, 'dead', 'the prestart task finished');
    await page.locator('[data-logs="main/stdout"]').getByText(`listening on ${staticPort}`).waitFor();
    // The sections come in Nomad's order: prestart, main, poststart.
    const order = await page.locator('[data-section^="task-"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-section')));
    assert.deepEqual(order, ['task-init', 'task-main', 'task-helper']);

    // Ports: each as the API allocated it, the static one on the asked port.
    const ports = alloc.AllocatedResources!.Shared.Ports!;
    assert.deepEqual(ports.map((p) => p.Label).sort(), ['dyn', 'web']);
    assert.equal(ports.find((p) => p.Label === 'web')!.Value, staticPort);
    const portsText = await page.getByRole('region', { name: 'ports of the allocation' }).innerText();
    for (const p of ports) {
      assert.match(portsText, new RegExp(`${p.Label}\\s+${p.HostIP.replace(/\./g, '\\.')}:${p.Value}\\s+-\\s+${p.Label === 'web' ? 'static' : 'dynamic'}`));
    }
    assert.equal(await page.locator('[data-network-mode]').innerText(), 'host');

    // The check's last result, as the node's checks route answers it.
    await page.locator('[data-check="web-alive"][data-check-status="success"]').waitFor({ timeout: 60_000 });
    const checks = Object.values(await apiGet<AllocCheckStatuses>(`/v1/client/allocation/${allocId}/checks`));
    assert.deepEqual(checks.map((c) => [c.Service, c.Check, c.Status]), [[`${JOB}-web`, 'web-alive', 'success']]);
    const checkText = await page.getByRole('region', { name: 'check results of the allocation' }).innerText();
    assert.match(checkText, new RegExp(`${JOB}-web\\s+web-alive\\s+success\\s+${checks[0]!.Output.trim().split('\n')[0]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    assert.match(await page.getByRole('region', { name: 'services of the allocation' }).innerText(), new RegExp(`${JOB}-web\\s+nomad\\s+web\\s+\\(group\\)\\s+1`));

    // CPU and memory charts of each running task, read every second: a few points, axes with units and times.
    const cpu = page.locator('[data-chart="CPU of task main"]');
    const mem = page.locator('[data-chart="Memory of task main"]');
    await until('the charts to have 3 points', async () => Number(await mem.getAttribute('data-points')) >= 3 && Number(await cpu.getAttribute('data-points')) >= 3, 60_000);
    for (const [chart, unit] of [[cpu, /^[\d.]+ (MHz|GHz)$/], [mem, /^[\d.]+ (B|KiB|MiB|GiB)$/]] as const) {
      const yTicks = await chart.locator('text.tick.y').allTextContents();
      assert.ok(yTicks.length >= 2 && yTicks.every((t) => unit.test(t)), `y-axis ticks with units: ${yTicks.join(', ')}`);
      const xTicks = await chart.locator('text.tick.x').allTextContents();
      assert.ok(xTicks.length >= 1 && xTicks.every((t) => /^\d\d:\d\d(:\d\d)?$/.test(t)), `x-axis ticks are times: ${xTicks.join(', ')}`);
    }
    assert.equal(await page.locator('[data-stats-task]').evaluateAll((els) => els.map((e) => e.getAttribute('data-stats-task')).join(',')), 'helper,main', 'the running tasks');
    // The last values drawn are what the stats route answered the page, and near what it answers now.
    const shownMem = parseShown((await mem.getAttribute('data-last'))!);
    const shownCpu = parseShown((await cpu.getAttribute('data-last'))!);
    const recent = pageStats.slice(-3);
    assert.ok(recent.length >= 1, 'the page read the stats route');
    assert.ok(recent.some((s) => Math.abs(memoryOf(s, 'main') - shownMem) <= Math.max(0.05 * shownMem, 0.05 * MiB)), `memory shown ${shownMem} is one the page read: ${recent.map((s) => memoryOf(s, 'main')).join(', ')}`);
    assert.ok(
      recent.some((s) => Math.abs((s.Tasks!['main']!.ResourceUsage!.CpuStats!.TotalTicks) - shownCpu) <= Math.max(0.01 * shownCpu, 1)),
      `CPU shown ${shownCpu} MHz is one the page read: ${recent.map((s) => s.Tasks!['main']!.ResourceUsage!.CpuStats!.TotalTicks).join(', ')}`,
    );
    const now = await apiGet<AllocResourceUsage>(`/v1/client/allocation/${allocId}/stats`);
    assert.ok(memoryOf(now, 'main') >= HOLD_MIB * MiB, `the task holds ${HOLD_MIB} MiB: ${memoryOf(now, 'main')}`);
    assert.ok(Math.abs(memoryOf(now, 'main') - shownMem) <= 0.25 * memoryOf(now, 'main'), `memory shown ${shownMem}, the API says ${memoryOf(now, 'main')}`);
    assert.ok(shownCpu > 0, 'the busy task uses some CPU');
    await shot(page, 'allocation');
  });

  it('restarts a task, signals it and restarts every task from the page; the API shows each', async () => {
    await openAlloc(page, allocId);
    const main = page.locator('[data-section="task-main"]');
    const restartsBefore = (await apiGet<Allocation>(`/v1/allocation/${allocId}`)).TaskStates!['main']!.Restarts;
    const signaledBefore = await events('main', 'Restart Signaled');
    const startsBefore = await mainStarts();
    await clickAndConfirm(page, main.getByRole('button', { name: 'Restart task' }), /Restart task main/);
    await main.getByRole('status').filter({ hasText: /^Restarted main\.$/ }).waitFor({ timeout: 60_000 });
    assert.equal(await events('main', 'Restart Signaled'), signaledBefore + 1);
    const after = await until('main to run again', async () => {
      const a = await apiGet<Allocation>(`/v1/allocation/${allocId}`);
      return a.TaskStates!['main']!.State === 'running' && a.TaskStates!['main']!.Restarts > restartsBefore ? a : undefined;
    }, 60_000);
    await page.locator(`[data-restarts="main"]`).filter({ hasText: String(after.TaskStates!['main']!.Restarts) }).waitFor();
    await main.getByRole('region', { name: 'events of task main' }).getByText('Restart Signaled').first().waitFor();
    // Running is not ready: the new process handles signals once it says it listens (before that, Node's own SIGUSR1 opens its inspector).
    await until('main to listen again', async () => (await mainStarts()) > startsBefore, 60_000);

    // A signal chosen from the list: the task's event, and the task saw it.
    const signalingBefore = await events('main', 'Signaling');
    await main.getByLabel('Signal').selectOption('SIGUSR1');
    await clickAndConfirm(page, main.getByRole('button', { name: 'Send signal' }), /Send SIGUSR1 to task main/);
    await main.getByRole('status').filter({ hasText: /^Sent SIGUSR1 to main\.$/ }).waitFor({ timeout: 60_000 });
    assert.equal(await events('main', 'Signaling'), signalingBefore + 1);
    const sig = (await apiGet<Allocation>(`/v1/allocation/${allocId}`)).TaskStates!['main']!.Events!.filter((e) => e.Type === 'Signaling').at(-1)!;
    assert.match(sig.DisplayMessage || sig.Message, /SIGUSR1/);
    await main.locator('[data-logs="main/stdout"]').getByText('got SIGUSR1').waitFor({ timeout: 30_000 });

    // Every running task at once: main and the sidecar.
    const before = { main: await events('main', 'Restart Signaled'), helper: await events('helper', 'Restart Signaled') };
    await clickAndConfirm(page, page.locator('[data-actions="allocation"]').getByRole('button', { name: 'Restart all tasks' }), /Restart every running task of allocation .* \(main, helper\)|\(helper, main\)/);
    await page.locator('[data-actions="allocation"]').getByRole('status').filter({ hasText: /^Restarted / }).waitFor({ timeout: 60_000 });
    assert.equal(await events('main', 'Restart Signaled'), before.main + 1);
    assert.equal(await events('helper', 'Restart Signaled'), before.helper + 1);
    assert.equal(await events('init', 'Restart Signaled'), 0, 'the finished prestart task is not restarted');
    await shot(page, 'allocation-restarted');
  });

  it('a read-only token sees no action on the page, and the API refuses each', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await ctx.newPage();
    await login(p, cluster.readOnlyToken);
    await openAlloc(p, allocId);
    await p.locator('[data-lifecycle="main"]').waitFor();
    for (const name of ['Stop allocation', 'Restart all tasks', 'Signal all tasks', 'Restart task', 'Send signal']) {
      assert.equal(await p.getByRole('button', { name }).count(), 0, `no ${name} button`);
    }
    assert.equal(await p.locator('main').getByRole('combobox').count(), 0, 'no signal chooser');
    assert.equal(await p.getByRole('link', { name: 'Exec' }).count(), 0, 'no Exec link');
    assert.equal(await p.getByRole('link', { name: 'Logs' }).count(), 3, 'a Logs link per task');
    const refused = await p.evaluate(
      ({ token, id }) =>
        Promise.all(
          ([
            [`/v1/client/allocation/${id}/restart`, { TaskName: 'main' }],
            [`/v1/client/allocation/${id}/signal`, { Task: 'main', Signal: 'SIGUSR1' }],
            [`/v1/allocation/${id}/stop`, {}],
          ] as const).map(([url, body]) =>
            fetch(url, { method: 'PUT', headers: { 'X-Nomad-Token': token, 'Content-Type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.status),
          ),
        ),
      { token: cluster.readOnlyToken, id: allocId },
    );
    assert.deepEqual(refused, [403, 403, 403]);
    assert.equal((await apiGet<Allocation>(`/v1/allocation/${allocId}`)).DesiredStatus, 'run', 'the refused stop changed nothing');
    await shot(p, 'allocation-read-only');
    await ctx.close();
  });

  it('fits a phone-sized screen', async () => {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const p = await ctx.newPage();
    await login(p, cluster.agent.token);
    await openAlloc(p, allocId);
    await p.locator('[data-chart="Memory of task main"]').waitFor();
    await p.locator('[data-check="web-alive"]').waitFor({ timeout: 60_000 });
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page is ${overflow}px wider than the phone's screen`);
    await shot(p, 'allocation-phone');
    await ctx.close();
  });

  it('a volume whose directory vanished shows abnormal with the plugin\'s message, not mounted', async () => {
    const sick = 'ua-sick';
    await cluster.createVolume(sick);
    const sickAlloc = await cluster.runJob('ua-sick-work', { volume: sick, writeMiB: 1 });
    await openAlloc(page, sickAlloc);
    const state = page.locator(`[data-mount="${sick}"]`);
    await page.locator(`[data-mount="${sick}"][data-mount-state="mounted"]`).waitFor({ timeout: 60_000 });

    // The plugin keeps each volume in a directory of its own; remove this one behind its back (as test/ui/ui.test.ts does).
    const volumesDir = `/var/lib/berth/hostpath/${cluster.nodeId}/volumes`;
    const blob = spawnSync('find', [volumesDir, '-name', 'blob-ua-sick-work', '-type', 'f'], { encoding: 'utf8' }).stdout.trim().split('\n')[0];
    assert.ok(blob, `the written file under ${volumesDir}`);
    rmSync(path.dirname(blob), { recursive: true, force: true });

    await page.locator(`[data-mount="${sick}"][data-mount-state="abnormal"]`).waitFor({ timeout: 60_000 });
    const condition = (await apiGet<CSIVolume>(`/v1/volume/csi/${sick}`)).BerthCondition;
    assert.equal(condition?.Abnormal, true);
    assert.equal(await state.innerText(), 'abnormal');
    const row = await page.getByRole('region', { name: 'volumes of the allocation' }).innerText();
    assert.ok(row.includes(`abnormal\tthe plugin reports: ${condition.Message}`), `the row says abnormal with the plugin's message: ${row}`);
    assert.doesNotMatch(row, /\bmounted\b/);
    await shot(page, 'allocation-volume-abnormal');
    // As in ui.test.ts: unmount the vanished directory's mounts by hand so that the node can release the volume.
    for (const m of mountsUnder(cluster.dir).filter((x) => x.includes(`/${sick}/`)).reverse()) spawnSync('umount', ['-l', m]);
    await cluster.stopJob('ua-sick-work');
  });

  it('stops the allocation from the page after a confirmation; the API shows it stopped', async () => {
    await openAlloc(page, allocId);
    await clickAndConfirm(page, page.getByRole('button', { name: 'Stop allocation' }), new RegExp(`Stop allocation ${allocId.slice(0, 8)} of job ${JOB}\\?`));
    await page.getByRole('status').filter({ hasText: /^Stopped: the allocation is (complete|failed)/ }).waitFor({ timeout: 120_000 });
    const a = await apiGet<Allocation>(`/v1/allocation/${allocId}`);
    assert.equal(a.DesiredStatus, 'stop');
    assert.notEqual(a.ClientStatus, 'running');
    await shot(page, 'allocation-stopped');
  });
});
