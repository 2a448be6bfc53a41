/// <reference lib="dom" />
// The web UI's nodes, topology and services pages in a real headless
// browser against a real dev agent (one node with meta, a host volume, a
// host network and a CNI network; the hostpath plugin; a web job whose
// native service's http check passes beside a service whose tcp check fails;
// a worker slow to stop). Each page shows what the API says; eligibility is
// toggled and the node drained (with a deadline, system jobs left running)
// through the page, the drain's progress shown until it completes, and the
// effect seen in the API; a read-only token sees no control and the API
// refuses it; the pages fit a phone's width. Screenshots go to .tmp/ui-shots/.

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { AllocationListStub, AllocCheckStatuses, Evaluation, Node, NodeListStub, ServiceRegistration } from '../../src/api/index.js';
import { launchBrowser, shot } from '../support/browser.js';
import { loginAs, openPage } from '../support/ui-pages.js';
import { until } from '../support/agent-run.js';
import { NODE_FIXTURE, NodesCluster, workerJob } from '../support/ui-nodes.js';

const cluster = new NodesCluster(mkdtempSync('/tmp/berth-ui-nodes-'));
const WEB = 'ui-web';
const WORKER = 'ui-worker';
let browser: Browser;
let page: Page;
let webAlloc = '';
let workerAlloc = '';

const apiGet = <T>(p: string): Promise<T> => cluster.get<T>(p);

async function mainText(p: Page = page): Promise<string> {
  return p.locator('main').innerText();
}

const open = (p: Page, urlPath: string, heading: RegExp | string): Promise<void> => openPage(p, cluster.agent.addr, urlPath, heading);

const login = (p: Page, token: string): Promise<void> => loginAs(p, cluster.agent.addr, token);

/** What the node can give allocations, as the API says: its resources less what it keeps back. */
function capacityOf(n: NodeListStub): { cpu: number; mem: number } {
  return {
    cpu: n.NodeResources!.Cpu.CpuShares - (n.ReservedResources?.Cpu.CpuShares ?? 0),
    mem: n.NodeResources!.Memory.MemoryMB - (n.ReservedResources?.Memory.MemoryMB ?? 0),
  };
}

function reserved(a: AllocationListStub): { cpu: number; mem: number } {
  const tasks = Object.values(a.AllocatedResources?.Tasks ?? {});
  return { cpu: tasks.reduce((s, t) => s + t.Cpu.CpuShares, 0), mem: tasks.reduce((s, t) => s + t.Memory.MemoryMB, 0) };
}

/** The allocations that hold the node's resources (placed to run, pending or running), with their resources. */
async function heldAllocs(): Promise<AllocationListStub[]> {
  const all = await apiGet<AllocationListStub[]>('/v1/allocations?resources=true');
  return all.filter((a) => a.NodeID === cluster.nodeId && a.DesiredStatus === 'run' && ['pending', 'running'].includes(a.ClientStatus));
}

async function put(path: string, body: unknown, token: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${cluster.agent.addr}${path}`, { method: 'PUT', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
}

before(async () => {
  await cluster.start();
  webAlloc = await cluster.runWeb(WEB);
  workerAlloc = await cluster.runHcl(WORKER, workerJob(WORKER));
  browser = await launchBrowser();
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await ctx.newPage();
  await login(page, cluster.agent.token);
});

after(async () => {
  await browser?.close().catch(() => undefined);
  await cluster.stop();
});

describe('the web UI: nodes, topology and services', { timeout: 400_000 }, () => {
  it('lists each node with its status, eligibility, drivers, allocations and CPU and memory reserved against its capacity, as the API says', async () => {
    await open(page, '/ui/nodes', /^Nodes$/);
    const [node] = await apiGet<NodeListStub[]>('/v1/nodes?resources=true');
    assert.ok(node);
    const held = await heldAllocs();
    assert.ok(held.some((a) => a.ID === webAlloc) && held.some((a) => a.ID === workerAlloc));
    const row = page.locator('tr', { has: page.locator(`[data-node="${node.ID}"]`) });
    await row.locator(`[data-allocs="${held.length}"]`).waitFor();
    const text = await row.innerText();
    assert.match(text, new RegExp(`${node.Name}\\s+${node.Datacenter}\\s+${node.Status}\\s+${node.SchedulingEligibility}`));
    // Drivers: the healthy ones by name (raw_exec, which the tests' jobs use, among them), and how many are not.
    const detected = Object.entries(node.Drivers ?? {}).filter(([, d]) => d.Detected);
    const healthyDrivers = detected.filter(([, d]) => d.Healthy).map(([name]) => name).sort();
    assert.ok(healthyDrivers.includes('raw_exec'), `the API reports raw_exec healthy on the node: ${healthyDrivers.join(', ')}`);
    const drivers = row.locator('[data-drivers]');
    assert.equal(await drivers.getAttribute('data-drivers'), `${healthyDrivers.length}/${detected.length}`);
    assert.match(await drivers.innerText(), new RegExp(`^${healthyDrivers.join(', ')}`));
    const running = held.filter((a) => a.ClientStatus === 'running').length;
    assert.equal(running, held.length, 'every allocation on the node runs');
    const cap = capacityOf(node);
    const used = held.reduce((s, a) => ({ cpu: s.cpu + reserved(a).cpu, mem: s.mem + reserved(a).mem }), { cpu: 0, mem: 0 });
    // The web job reserves 500 MHz and 2 GiB, the worker 250 MHz and 1 GiB, the plugin its own.
    assert.ok(used.cpu >= 750 && used.mem >= 3072, JSON.stringify(used));
    assert.equal(await row.locator('[data-meter="CPU"]').getAttribute('data-used'), String(used.cpu));
    assert.equal(await row.locator('[data-meter="CPU"]').getAttribute('data-total'), String(cap.cpu));
    assert.equal(await row.locator('[data-meter="Memory"]').getAttribute('data-used'), String(used.mem));
    assert.equal(await row.locator('[data-meter="Memory"]').getAttribute('data-total'), String(cap.mem));
    assert.match(text, new RegExp(`${used.cpu} of ${cap.cpu} MHz`));
    await shot(page, 'nodes');
  });

  it('the node page shows meta, drivers with health, CSI plugins with health, host volumes, host networks and CNI networks as the API says', async () => {
    await open(page, `/ui/nodes/${cluster.nodeId}`, /^Node /);
    const node = await apiGet<Node>(`/v1/node/${cluster.nodeId}`);
    await page.locator('[data-fact="allocations"]', { hasText: `${(await heldAllocs()).length} running or pending` }).waitFor();
    const text = await mainText();
    assert.match(text, new RegExp(`Node ${node.Name}`));
    for (const [k, v] of Object.entries(NODE_FIXTURE.meta)) {
      assert.equal(node.Meta?.[k], v);
      assert.match(text, new RegExp(`${k}\\s+${v}`));
    }
    for (const [name, d] of Object.entries(node.Drivers ?? {})) {
      const row = page.locator('tr', { has: page.locator(`[data-driver="${name}"]`) });
      assert.match(await row.innerText(), new RegExp(`${name}\\s+${d.Detected ? 'yes' : 'no'}\\s+${d.Healthy ? 'healthy' : 'unhealthy'}`));
    }
    assert.ok(node.CSINodePlugins?.['hostpath']?.Healthy);
    assert.match(text, /hostpath\s+node\s+healthy/);
    assert.match(text, /hostpath\s+controller\s+healthy/);
    assert.equal(node.HostVolumes?.[NODE_FIXTURE.hostVolume]?.Path, `${cluster.dir}/host-volume`);
    assert.match(text, new RegExp(`${NODE_FIXTURE.hostVolume}\\s+${cluster.dir}/host-volume\\s+no\\s+static`));
    assert.equal(node.HostNetworks?.[NODE_FIXTURE.hostNetwork]?.Interface, 'lo');
    assert.match(text, new RegExp(`${NODE_FIXTURE.hostNetwork}\\s+lo\\s+-\\s+${node.HostNetworks?.[NODE_FIXTURE.hostNetwork]?.BerthAddress}`));
    const modes = (node.NodeResources?.Networks ?? []).map((n) => n.Mode);
    assert.ok(modes.includes(`cni/${NODE_FIXTURE.cniNetwork}`), JSON.stringify(modes));
    for (const m of modes) await page.locator(`[data-network-mode="${m}"]`).waitFor();
    assert.match(text, new RegExp(`cni/${NODE_FIXTURE.cniNetwork}\\s+CNI network`));
    for (const id of [webAlloc, workerAlloc]) await page.locator(`[data-section="allocations"] [data-alloc="${id}"]`).waitFor();
    assert.match(text, /Eligibility\s+eligible/);
    assert.match(text, /Drain\s+not draining/);
    await shot(page, 'node');
    // A node's plugin links to the plugin's page, which keeps its health.
    await page.locator('[data-section="plugins"] a[data-plugin="hostpath"]').first().click();
    await page.getByRole('heading', { level: 1, name: /CSI plugin hostpath/ }).waitFor();
    assert.match(await mainText(), /Nodes healthy\s+1\/1/);
  });

  it('the topology view shows every allocation of the API as segments sized by its memory and CPU against the node, named on hover and focus, opening the allocation', async () => {
    await open(page, '/ui/topology', /^Topology$/);
    const [node] = await apiGet<NodeListStub[]>('/v1/nodes?resources=true');
    const cap = capacityOf(node!);
    const held = await heldAllocs();
    const box = page.locator(`[data-topo-node="${node!.ID}"]`);
    await box.waitFor();
    assert.equal(await page.locator('[data-datacenter] h2').innerText(), `Datacenter ${node!.Datacenter}`);
    for (const kind of ['mem', 'cpu'] as const) {
      const bar = box.locator(`[data-bar="${kind}"]`);
      assert.equal(await bar.locator('[data-alloc]').count(), held.length, `${kind}: one segment per allocation`);
      const barWidth = (await bar.boundingBox())!.width;
      for (const a of held) {
        const seg = bar.locator(`[data-alloc="${a.ID}"]`);
        const share = (reserved(a)[kind] / cap[kind]) * 100;
        assert.ok(Math.abs(Number(await seg.getAttribute('data-share')) - share) < 0.001, `${kind} share of ${a.Name}`);
        const width = (await seg.boundingBox())!.width;
        const expected = (share / 100) * barWidth;
        // Segments keep 3px to stay visible and pointable.
        if (expected > 4) assert.ok(Math.abs(width - expected) <= 1.5, `${kind} width of ${a.Name}: ${width} px, expected ${expected}`);
        else assert.ok(width <= 4, `${kind} width of ${a.Name}: ${width} px`);
        assert.equal(await seg.getAttribute('href'), `/ui/allocations/${a.ID}`);
      }
    }
    const web = held.find((a) => a.ID === webAlloc)!;
    await box.locator(`[data-bar="mem"] [data-alloc="${webAlloc}"]`).hover();
    await box.locator(`[data-hovered="${webAlloc}"]`, { hasText: web.Name }).waitFor();
    assert.match(await box.locator('[data-hovered]').innerText(), /2 GiB memory, 500 MHz CPU/);
    await shot(page, 'topology');
    // From the keyboard: tab to a segment, it is named, Enter opens the allocation.
    await page.locator('h1').click();
    let focused = '';
    for (let i = 0; i < 40 && !focused; i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset['alloc'] ?? '');
    }
    assert.ok(focused, 'a segment is reachable with Tab');
    await box.locator(`[data-hovered="${focused}"]`).waitFor();
    await page.keyboard.press('Enter');
    await page.waitForURL(`**/ui/allocations/${focused}`);
  });

  it('the services catalog and a service page show healthy and unhealthy instances and their checks as the API says', async () => {
    await open(page, '/ui/services', /^Services$/);
    const healthy = async (name: string, all: boolean): Promise<ServiceRegistration[]> => apiGet(`/v1/service/${name}${all ? '?include_unhealthy=true' : ''}`);
    for (const name of [WEB, `${WEB}-admin`]) {
      const [ok, all] = [await healthy(name, false), await healthy(name, true)];
      const row = page.locator('tr', { has: page.locator(`[data-service="${name}"]`) });
      await row.locator(`[data-healthy="${ok.length}"]`).waitFor();
      await row.locator(`[data-unhealthy="${all.length - ok.length}"]`).waitFor();
    }
    // The web server answers its http check; nothing listens on the admin port.
    assert.equal((await healthy(WEB, false)).length, 1);
    assert.equal((await healthy(`${WEB}-admin`, false)).length, 0);
    assert.equal((await healthy(`${WEB}-admin`, true)).length, 1);
    await shot(page, 'services');

    const checks = await apiGet<AllocCheckStatuses>(`/v1/allocation/${webAlloc}/checks`);
    const byName = Object.fromEntries(Object.values(checks).map((c) => [c.Check, c]));
    assert.equal(byName['root']?.Status, 'success');
    assert.equal(byName['admin-port']?.Status, 'failure');

    await page.locator(`[data-service="${WEB}-admin"]`).click();
    await page.getByRole('heading', { level: 1, name: `Service ${WEB}-admin` }).waitFor();
    const [admin] = await healthy(`${WEB}-admin`, true);
    await page.locator(`[data-instance="${admin!.ID}"][data-instance-health="unhealthy"]`).waitFor();
    await page.locator('[data-check="admin-port"][data-check-status="failure"]').waitFor();
    let text = await mainText();
    assert.match(text, /Healthy instances\s+0/);
    assert.match(text, /Unhealthy instances\s+1/);
    assert.match(text, new RegExp(`127\\.0\\.0\\.1:${cluster.deadPort}`));
    assert.ok(text.includes(byName['admin-port']!.Output.slice(0, 40)), 'the failing check says why');
    assert.equal(await page.locator(`a[href="/ui/allocations/${webAlloc}"]`).count(), 1);
    await shot(page, 'service');

    await open(page, `/ui/services/default/${WEB}`, new RegExp(`Service ${WEB}$`));
    const [web] = await healthy(WEB, false);
    await page.locator(`[data-instance="${web!.ID}"][data-instance-health="healthy"]`).waitFor();
    await page.locator('[data-check="root"][data-check-status="success"]').waitFor();
    text = await mainText();
    assert.match(text, new RegExp(`${web!.Address}:${web!.Port}\\s+http, v1`));
    assert.match(text, /Healthy instances\s+1/);
  });

  it('a read-only token sees no drain or eligibility control, and the API refuses it both', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const ro = await ctx.newPage();
    try {
      await login(ro, cluster.readOnlyToken);
      await open(ro, `/ui/nodes/${cluster.nodeId}`, /^Node /);
      await ro.locator('[data-section="drivers"]').waitFor();
      assert.equal(await ro.locator('[data-section="controls"]').count(), 0);
      assert.equal(await ro.getByRole('button').filter({ hasText: /drain|eligible/i }).count(), 0);
      await open(ro, '/ui/services', /^Services$/);
      await ro.locator(`[data-service="${WEB}"]`).waitFor();
    } finally {
      await ctx.close();
    }
    const drain = await put(`/v1/node/${cluster.nodeId}/drain`, { DrainSpec: { Deadline: 60e9, IgnoreSystemJobs: false } }, cluster.readOnlyToken);
    assert.equal(drain.status, 403, drain.text);
    const elig = await put(`/v1/node/${cluster.nodeId}/eligibility`, { Eligibility: 'ineligible' }, cluster.readOnlyToken);
    assert.equal(elig.status, 403, elig.text);
    const node = await apiGet<Node>(`/v1/node/${cluster.nodeId}`);
    assert.equal(node.SchedulingEligibility, 'eligible');
    assert.equal(node.Drain, false);
  });

  it('toggles the node\'s eligibility through the page, as the API then says', async () => {
    await open(page, `/ui/nodes/${cluster.nodeId}`, /^Node /);
    await page.getByRole('button', { name: 'Make ineligible' }).click();
    await page.locator('[data-fact="eligibility"]', { hasText: 'ineligible' }).waitFor();
    assert.equal((await apiGet<Node>(`/v1/node/${cluster.nodeId}`)).SchedulingEligibility, 'ineligible');
    await page.getByRole('button', { name: 'Make eligible' }).click();
    await page.locator('[data-fact="eligibility"]', { hasText: /^eligible$/ }).waitFor();
    assert.equal((await apiGet<Node>(`/v1/node/${cluster.nodeId}`)).SchedulingEligibility, 'eligible');
  });

  it('fits a phone\'s width: no page runs off the screen', async () => {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const phone = await ctx.newPage();
    try {
      await login(phone, cluster.agent.token);
      for (const [p, h] of [
        ['/ui/nodes', /^Nodes$/],
        [`/ui/nodes/${cluster.nodeId}`, /^Node /],
        ['/ui/topology', /^Topology$/],
        ['/ui/services', /^Services$/],
        [`/ui/services/default/${WEB}-admin`, /^Service /],
      ] as const) {
        await open(phone, p, h);
        await phone.locator('main table, main .topo-node').first().waitFor();
        const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        assert.ok(overflow <= 0, `${p} overflows the phone's width by ${overflow}px`);
        if (p === '/ui/topology') await shot(phone, 'topology-phone');
        if (p.startsWith('/ui/nodes/')) await shot(phone, 'node-phone');
      }
    } finally {
      await ctx.close();
    }
  });

  it('drains the node through the page with a deadline: the progress shows what is left to move, then the drain completes, as the API says', async () => {
    await open(page, `/ui/nodes/${cluster.nodeId}`, /^Node /);
    const form = page.getByRole('form', { name: 'drain the node' });
    await form.getByLabel('Deadline').fill('ten minutes');
    await form.getByRole('button', { name: 'Drain node' }).click();
    await page.getByRole('alert').filter({ hasText: 'deadline "ten minutes" is not a duration' }).waitFor();
    assert.equal((await apiGet<Node>(`/v1/node/${cluster.nodeId}`)).Drain, false, 'a bad deadline starts no drain');

    await form.getByLabel('Deadline').fill('10m');
    await form.getByLabel('Ignore system jobs').check();
    await form.getByLabel('Message').fill('kernel upgrade');
    await form.getByRole('button', { name: 'Drain node' }).click();
    // The worker takes its kill_timeout to stop: meanwhile the page shows it left to move, and the deadline.
    await page.locator('[data-section="drain"] [data-drain-status="draining"]').waitFor();
    await page.locator('[data-section="drain"] tr', { hasText: WORKER }).waitFor();
    const draining = await apiGet<Node>(`/v1/node/${cluster.nodeId}`);
    assert.equal(draining.Drain, true);
    assert.equal(draining.SchedulingEligibility, 'ineligible');
    assert.equal(draining.DrainStrategy?.Deadline, 600e9);
    assert.equal(draining.DrainStrategy?.IgnoreSystemJobs, true);
    assert.equal(draining.LastDrain?.Meta?.['message'], 'kernel upgrade');
    const left = Number(await page.locator('[data-drain-left]').getAttribute('data-drain-left'));
    assert.ok(left >= 1, `allocations left: ${left}`);
    const force = Date.parse(draining.DrainStrategy!.ForceDeadline);
    assert.equal(await page.locator('[data-drain-deadline]').getAttribute('data-drain-deadline'), String(force));
    assert.match(await page.locator('[data-section="drain"]').innerText(), /System jobs are left running/);
    await shot(page, 'node-draining');

    await page.locator('[data-section="drain"] [data-drain-status="complete"]').waitFor({ timeout: 90_000 });
    const done = await apiGet<Node>(`/v1/node/${cluster.nodeId}`);
    assert.equal(done.Drain, false);
    assert.equal(done.DrainStrategy, null);
    assert.equal(done.LastDrain?.Status, 'complete');
    assert.equal(done.SchedulingEligibility, 'ineligible', 'a drained node stays ineligible');
    assert.match(await page.locator('[data-fact="eligibility"]').innerText(), /^ineligible$/);
    // The one node is ineligible: the service jobs' allocations stopped and their replacements wait, blocked.
    for (const job of [WEB, WORKER]) {
      const allocs = await apiGet<AllocationListStub[]>(`/v1/job/${job}/allocations`);
      assert.ok(allocs.every((a) => a.DesiredStatus !== 'run' || a.ClientStatus !== 'running'), `${job}: ${JSON.stringify(allocs.map((a) => [a.DesiredStatus, a.ClientStatus]))}`);
      const original = allocs.find((a) => a.ID === (job === WEB ? webAlloc : workerAlloc));
      assert.equal(original?.DesiredStatus, 'stop');
      const evals = await until(`a blocked evaluation of ${job}`, async () => {
        const list = await apiGet<Evaluation[]>(`/v1/job/${job}/evaluations`);
        return list.some((e) => e.Status === 'blocked') ? list : undefined;
      }, 30_000);
      assert.ok(evals.length > 0);
    }
    // System jobs were left running: the plugin's allocation still runs on the node.
    const plugin = (await heldAllocs()).filter((a) => a.JobID === 'hostpath-plugin');
    assert.equal(plugin.length, 1);
    await shot(page, 'node-drained');
  });
});
