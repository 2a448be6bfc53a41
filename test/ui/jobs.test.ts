/// <reference lib="dom" />
// The jobs pages of the web UI in a real headless browser (Debian's chromium
// through playwright-core) against a real dev agent: the jobs list (searched
// and filtered, the filters in the URL; clean dead jobs neutral, failed ones
// red), a job's groups, services, ports, network, volumes, placement rules
// and evaluations (placement failures in words, blocked evaluations
// flagged), its deployment (a canary promoted, a deployment failed, an
// in-place update), its versions with diffs and a revert, Start of a stopped
// job: each checked against the API, each action done through the page and
// its effect seen in the API. A read-only token sees no action and the API
// refuses it; the pages fit a phone. Screenshots go to .tmp/ui-shots/.

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { AllocationListStub, Deployment, Evaluation, Job, JobListStub, JobVersionsResponse } from '../../src/api/index.js';
import { until } from '../support/agent-run.js';
import { launchBrowser, shot } from '../support/browser.js';
import { loginAs, openPage } from '../support/ui-pages.js';
import { batchJob, canaryJob, JobsCluster, rollingJob, unplaceableJob } from '../support/ui-jobs.js';

const cluster = new JobsCluster(mkdtempSync('/tmp/berth-ui-jobs-'));
let browser: Browser;
let page: Page;

const apiGet = <T>(p: string): Promise<T> => cluster.get<T>(p);

const open = (p: Page, urlPath: string, heading: RegExp | string): Promise<void> => openPage(p, cluster.agent.addr, urlPath, heading);

const login = (p: Page, token: string): Promise<void> => loginAs(p, cluster.agent.addr, token);

const mainText = (p: Page = page): Promise<string> => p.locator('main').innerText();
const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Rows of the jobs table: each row's cells' text. */
async function jobRows(p: Page = page): Promise<string[][]> {
  return p.locator('[aria-label="jobs"] tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim())));
}

/** The job's latest deployment once `ok` holds for it. */
async function deploymentWhen(id: string, what: string, ok: (d: Deployment) => boolean): Promise<Deployment> {
  let found: Deployment | null = null;
  await until(`job ${id}'s deployment ${what}`, async () => {
    found = await apiGet<Deployment | null>(`/v1/job/${id}/deployment`);
    return !!found && ok(found);
  }, 180_000);
  return found!;
}

const canariesHealthy = (d: Deployment): boolean =>
  d.Status === 'running' && Object.values(d.TaskGroups ?? {}).every((g) => (g.PlacedCanaries?.length ?? 0) === g.DesiredCanaries && g.HealthyAllocs >= g.DesiredCanaries);

before(async () => {
  await cluster.start();
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await cluster.cli(['namespace', 'apply', 'team-b']);
  await cluster.run('ui-web', canaryJob('ui-web', 1));
  await cluster.run('ui-ok', batchJob('ui-ok', '/bin/true'));
  // Detached: its task fails at once, and `job run` says so (exit 1) when it sees the failure before a running.
  await cluster.run('ui-fails', batchJob('ui-fails', '/bin/false'), { detach: true });
  await cluster.run('ui-stopped', rollingJob('ui-stopped', 1));
  await cluster.cli(['job', 'stop', 'ui-stopped']);
  await cluster.run('ui-other', batchJob('ui-other', '/bin/true'), { namespace: 'team-b' });
  await until('the batch jobs to finish', async () => {
    const jobs = await apiGet<JobListStub[]>('/v1/jobs?namespace=*');
    return ['ui-ok', 'ui-fails', 'ui-other', 'ui-stopped'].every((id) => jobs.find((j) => j.ID === id)?.Status === 'dead');
  }, 120_000);
  await login(page, cluster.agent.token);
});

after(async () => {
  await browser?.close().catch(() => undefined);
  await cluster.stop();
});

describe('the jobs pages of the web UI', { timeout: 900_000 }, () => {
  it('the list shows each job as the API lists it; a clean dead job is neutral, a failed one red', async () => {
    await open(page, '/ui/jobs', /^Jobs$/);
    const jobs = await apiGet<JobListStub[]>('/v1/jobs?namespace=*');
    await page.getByRole('status').filter({ hasText: `${jobs.length} jobs` }).waitFor();
    const rows = await jobRows();
    assert.equal(rows.length, jobs.length);
    const counts = (j: JobListStub): string => {
      const sum = { queued: 0, starting: 0, running: 0, complete: 0, failed: 0, lost: 0, unknown: 0 };
      for (const g of Object.values(j.JobSummary?.Summary ?? {})) {
        sum.queued += g.Queued; sum.starting += g.Starting; sum.running += g.Running; sum.complete += g.Complete;
        sum.failed += g.Failed; sum.lost += g.Lost; sum.unknown += g.Unknown;
      }
      return Object.entries(sum).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`).join(', ') || 'none';
    };
    const want: Record<string, string> = { 'ui-web': 'running', 'ui-ok': 'dead (complete)', 'ui-fails': 'dead (failed)', 'ui-stopped': 'dead (stopped)', 'ui-other': 'dead (complete)' };
    for (const j of jobs) {
      const row = rows.find((r) => r[0] === j.ID);
      assert.ok(row, `a row for ${j.ID}`);
      assert.deepEqual(row.slice(0, 5), [j.ID, j.Namespace, j.Type, want[j.ID], counts(j)], `the row of ${j.ID}`);
      assert.equal(row[6], String(j.Priority));
    }
    assert.equal(jobs.find((j) => j.ID === 'ui-fails')!.Status, 'dead');
    assert.ok(jobs.find((j) => j.ID === 'ui-fails')!.JobSummary!.Summary!['once']!.Failed >= 1, 'the API counts the failed allocation');
    // Tone: the failed job red, the clean dead ones neutral, the running one green.
    const tone = (id: string): Promise<string | null> => page.locator('[aria-label="jobs"] tbody tr').filter({ has: page.getByRole('link', { name: id, exact: true }) }).locator('.badge').getAttribute('class');
    assert.equal(await tone('ui-fails'), 'badge bad');
    assert.equal(await tone('ui-ok'), 'badge neutral');
    assert.equal(await tone('ui-stopped'), 'badge neutral');
    assert.equal(await tone('ui-web'), 'badge good');
    assert.equal(await page.getByRole('link', { name: 'Run a job' }).getAttribute('href'), '/ui/jobs/new');
    await shot(page, 'jobs-list');
  });

  it('search and filters narrow the list and live in the URL', async () => {
    await open(page, '/ui/jobs', /^Jobs$/);
    await page.getByRole('searchbox').fill('UI-O');
    await until('the search in the URL', async () => new URL(page.url()).searchParams.get('q') === 'UI-O');
    assert.deepEqual((await jobRows()).map((r) => r[0]).sort(), ['ui-ok', 'ui-other']);
    await page.getByLabel('Namespace').selectOption('team-b');
    await until('the namespace in the URL', async () => new URL(page.url()).searchParams.get('namespace') === 'team-b');
    assert.deepEqual((await jobRows()).map((r) => r[0]), ['ui-other']);
    assert.match(await page.locator('[data-job-count]').innerText(), /^1 of \d+ jobs$/);

    // A link with the filters opens the list filtered (a reload keeps them).
    await open(page, '/ui/jobs?status=failed', /^Jobs$/);
    assert.deepEqual((await jobRows()).map((r) => r[0]), ['ui-fails']);
    assert.equal(await page.getByLabel('Status').inputValue(), 'failed');
    await page.getByLabel('Status').selectOption('');
    await page.getByLabel('Type').selectOption('service');
    await until('the type in the URL', async () => new URL(page.url()).search === '?type=service');
    const services = (await apiGet<JobListStub[]>('/v1/jobs?namespace=*')).filter((j) => j.Type === 'service').map((j) => j.ID).sort();
    assert.deepEqual((await jobRows()).map((r) => r[0]).sort(), services);
    await page.getByRole('searchbox').fill('no-such-job');
    await page.getByText('No job matches.').waitFor();
  });

  it('the job page shows its groups, tasks, ports, network, services, volumes and placement rules as the API has them', async () => {
    await open(page, '/ui/jobs/default/ui-web', /Job ui-web/);
    const job = await apiGet<Job>('/v1/job/ui-web');
    const g = job.TaskGroups![0]!;
    const t = g.Tasks![0]!;
    const group = page.locator('[data-group="web"]');
    const text = await group.innerText();
    assert.match(text, new RegExp(`Count\\s+${g.Count}`));
    assert.equal(g.Networks![0]!.Mode, 'host');
    assert.match(text, /Network mode\s+host/);
    assert.match(text, new RegExp(`${t.Name}\\s+${t.Driver}\\s+${t.Resources!.CPU} MHz, ${t.Resources!.MemoryMB} MiB\\s+main\\s+cache at /cache \\(read-only\\)`));
    const port = g.Networks![0]!.DynamicPorts![0]!;
    assert.match(text, new RegExp(`${port.Label}\\s+dynamic\\s+-\\s+default`));
    const svc = g.Services![0]!;
    assert.match(text, new RegExp(`${esc(svc.Name)}\\s+${svc.PortLabel}\\s+${svc.Provider}\\s+\\(group\\)\\s+ui-test\\s+none`));
    assert.equal(await group.getByRole('link', { name: svc.Name }).getAttribute('href'), `/ui/services/default/${svc.Name}`);
    const vol = g.Volumes!['cache']!;
    assert.match(text, new RegExp(`cache\\s+${vol.Type}\\s+${vol.Source}\\s+${esc([vol.AccessMode, vol.AttachmentMode].filter(Boolean).join(', ') || '-')}\\s+${vol.ReadOnly ? 'yes' : 'no'}`));
    const c = job.Constraints![0]!;
    const a = job.Affinities![0]!;
    assert.match(text, new RegExp(`job\\s+constraint\\s+${esc(`${c.LTarget} ${c.Operand} ${c.RTarget}`)}`));
    assert.match(text, new RegExp(`job\\s+affinity\\s+${esc(`${a.LTarget} ${a.Operand} ${a.RTarget} (weight ${a.Weight})`)}`));
    const facts = await mainText();
    assert.match(facts, new RegExp(`Version\\s+${job.Version}`));
    // The summary row of each group (as before the split).
    const allocs = await apiGet<AllocationListStub[]>('/v1/job/ui-web/allocations');
    assert.deepEqual(allocs.map((x) => x.ClientStatus), ['running']);
    assert.match(facts, /web\s+1\s+srv \(raw_exec\)\s+cache: scratch\s+1 running/);
    // The job's own `ui` block is absent here; Edit and Versions are links.
    assert.equal(await page.getByRole('link', { name: 'Edit' }).getAttribute('href'), '/ui/jobs/default/ui-web/edit');
    assert.equal(await page.getByRole('link', { name: 'Versions' }).getAttribute('href'), '/ui/jobs/default/ui-web/versions');
    await shot(page, 'job');
  });

  it('evaluations: each one as the API has it, placement failures in words, a blocked one flagged', async () => {
    await cluster.run('ui-nowhere', unplaceableJob('ui-nowhere'), { detach: true });
    let evals: Evaluation[] = [];
    await until('a blocked evaluation', async () => {
      evals = await apiGet<Evaluation[]>('/v1/job/ui-nowhere/evaluations');
      return evals.some((e) => e.Status === 'blocked');
    });
    await open(page, '/ui/jobs/default/ui-nowhere', /Job ui-nowhere/);
    await page.locator('[data-blocked-evals="1"]').waitFor();
    const section = page.locator('[data-section="evaluations"]');
    for (const e of evals) {
      const row = await section.locator('tr').filter({ has: page.locator(`[data-eval="${e.ID}"]`) }).innerText();
      assert.match(row, new RegExp(`${e.ID.slice(0, 8)}\\s+${e.Status}\\s+${e.TriggeredBy}`));
      for (const [groupName, f] of Object.entries(e.FailedTGAllocs ?? {})) {
        assert.ok(row.includes(`${groupName}: ${f.CoalescedFailures + 1} not placed`), `the row names the group: ${row}`);
        for (const [why, n] of Object.entries(f.ConstraintFiltered ?? {})) assert.ok(row.includes(`${n} node${n === 1 ? '' : 's'} filtered by ${why}`), `the row says why: ${row}`);
      }
    }
    const blocked = evals.find((e) => e.Status === 'blocked')!;
    assert.match(await page.locator(`[data-eval-placement="${blocked.ID}"]`).innerText(), /^Blocked: waiting to place 1 of nowhere\. nowhere: 1 not placed: 1 node filtered by \$\{attr\.kernel\.name\} = plan9\.$/);
    assert.equal(await section.locator('tbody tr').count(), evals.length);
    assert.equal(await page.locator('[data-section="evaluations"] .badge.bad').first().innerText(), 'blocked');
    await shot(page, 'job-evaluations');
    await cluster.cli(['job', 'stop', '--purge', 'ui-nowhere']);
  });

  it('a canary deployment: the page shows the canary turn healthy live, and Promote rolls the version out', async () => {
    await open(page, '/ui/jobs/default/ui-web', /Job ui-web/);
    await page.evaluate(() => ((window as unknown as { berthMark: number }).berthMark = 7));
    await cluster.run('ui-web', canaryJob('ui-web', 2), { detach: true });
    const d = await deploymentWhen('ui-web', 'to have a healthy canary', canariesHealthy);
    const section = page.locator('[data-section="deployment"]');
    await section.locator(`[data-deployment="${d.ID}"]`).waitFor({ timeout: 60_000 });
    const canary = d.TaskGroups!['web']!.PlacedCanaries![0]!;
    await section.locator(`[data-canary-health="${canary}"]`).getByText('healthy', { exact: true }).waitFor({ timeout: 60_000 });
    const alloc = (await apiGet<AllocationListStub[]>('/v1/job/ui-web/allocations')).find((x) => x.ID === canary)!;
    assert.equal(alloc.DeploymentStatus?.Healthy, true);
    assert.equal(alloc.DeploymentStatus?.Canary, true);
    const g = d.TaskGroups!['web']!;
    assert.match(await section.innerText(), new RegExp(`web\\s+${g.DesiredTotal}\\s+${g.PlacedAllocs}\\s+${g.HealthyAllocs}\\s+${g.UnhealthyAllocs}\\s+1/1\\s+no\\s+0\\s+no`));
    assert.match(await section.innerText(), /Status\s+running/);
    assert.equal(await page.evaluate(() => (window as unknown as { berthMark?: number }).berthMark), 7, 'the page was not reloaded');
    await shot(page, 'job-deployment');

    const promote = section.getByRole('button', { name: 'Promote' });
    await until('Promote to be enabled', async () => promote.isEnabled());
    page.once('dialog', (dlg) => void dlg.accept());
    await promote.click();
    await section.getByRole('status').filter({ hasText: /^Promoted: deployment successful/ }).waitFor({ timeout: 180_000 });
    const after = await apiGet<Deployment>(`/v1/deployment/${d.ID}`);
    assert.equal(after.Status, 'successful');
    assert.equal(after.TaskGroups!['web']!.Promoted, true);
    await section.locator('[data-deployment-status="successful"]').waitFor();
    await shot(page, 'job-deployment-promoted');
  });

  it('Fail ends a running deployment, as the API then says', async () => {
    await cluster.run('ui-web', canaryJob('ui-web', 3), { detach: true });
    const d = await deploymentWhen('ui-web', 'to run with version 2', (x) => x.JobVersion === 2 && x.Status === 'running');
    await open(page, '/ui/jobs/default/ui-web', /Job ui-web/);
    const section = page.locator('[data-section="deployment"]');
    await section.locator(`[data-deployment="${d.ID}"]`).waitFor();
    page.once('dialog', (dlg) => void dlg.accept());
    await section.getByRole('button', { name: 'Fail' }).click();
    await section.getByRole('status').filter({ hasText: /^Failed by hand: deployment failed/ }).waitFor({ timeout: 120_000 });
    const after = await apiGet<Deployment>(`/v1/deployment/${d.ID}`);
    assert.equal(after.Status, 'failed');
    // The page follows the deployment live: the row turns failed when its update arrives.
    await section.locator('[data-deployment-status="failed"]').waitFor({ timeout: 60_000 });
    assert.match(await section.innerText(), new RegExp(`Description\\s+${esc(after.StatusDescription)}`));
  });

  it('versions: each with its diff as the API has it, and Revert registers an older one again', async () => {
    const before = await apiGet<JobVersionsResponse>('/v1/job/ui-web/versions?diffs=true');
    await open(page, '/ui/jobs/default/ui-web/versions', /Versions of job ui-web/);
    const sections = page.locator('[data-version]');
    assert.equal(await sections.count(), before.Versions!.length);
    // Newest first, as the API lists them; each diff against the version before.
    assert.deepEqual(await sections.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-version')))), before.Versions!.map((v) => v.Version));
    const v1 = page.locator('[data-version="1"]');
    const diff = before.Diffs![before.Versions!.findIndex((v) => v.Version === 1)]!;
    const field = diff.Fields!.find((f) => f.Name === 'Meta[rev]')!;
    assert.deepEqual([field.Type, field.Old, field.New], ['Edited', '1', '2']);
    await v1.getByText(/^\d+ changes?$/).click();
    const line = v1.locator('[data-diff-field="Meta[rev]"]');
    assert.equal((await line.innerText()).replace(/\s+/g, ' ').trim(), '+/- Meta[rev]: "1" => "2"');
    assert.equal(await line.getAttribute('data-diff'), 'edited');
    assert.match(await v1.locator('[data-job-diff]').innerText(), /\+\/-\s+Job: "ui-web"/);
    assert.match(await page.locator('[data-version="0"]').innerText(), /oldest version kept/);
    await shot(page, 'job-versions');

    const current = before.Versions![0]!.Version!;
    page.once('dialog', (dlg) => void dlg.accept());
    await page.locator('[data-version="0"]').getByRole('button', { name: 'Revert to version 0' }).click();
    await page.getByRole('status').filter({ hasText: `Reverted: version 0 registered again as version ${current + 1}.` }).waitFor({ timeout: 120_000 });
    const job = await apiGet<Job>('/v1/job/ui-web');
    assert.equal(job.Version, current + 1);
    assert.equal(job.Meta?.['rev'], '1');
    // The page follows: the new version is listed first.
    await page.locator(`[data-version="${current + 1}"]`).waitFor();
    // A revert the page makes names the version it showed: a stale one is refused.
    const stale = await cluster.send('PUT', '/v1/job/ui-web/revert', { JobID: 'ui-web', JobVersion: 1, EnforcePriorVersion: current });
    assert.equal(stale.status, 409, stale.text);
  });

  it('an in-place update (a count change) is shown as such', async () => {
    await cluster.run('ui-roll', rollingJob('ui-roll', 1));
    const first = (await apiGet<AllocationListStub[]>('/v1/job/ui-roll/allocations'))[0]!;
    await cluster.run('ui-roll', rollingJob('ui-roll', 2));
    const d = await deploymentWhen('ui-roll', 'to finish version 1', (x) => x.JobVersion === 1 && x.Status === 'successful');
    const kept = (await apiGet<AllocationListStub[]>('/v1/job/ui-roll/allocations')).find((a) => a.ID === first.ID)!;
    assert.equal(kept.JobVersion, 1, 'the first allocation took version 1 in place');
    assert.ok(kept.CreateIndex < d.CreateIndex);
    await open(page, '/ui/jobs/default/ui-roll', /Job ui-roll/);
    const section = page.locator('[data-section="deployment"]');
    await section.locator('[data-in-place="1"]').waitFor();
    assert.match(await section.innerText(), new RegExp(`Updated in place: ${first.ID.slice(0, 8)} kept running and took version 1`));
    assert.match(await section.innerText(), /app\s+2\s+2\s+2\s+0\s+0\/0\s+n\/a\s+1\s+no/);
    const row = await page.locator('[data-section="allocations"] tr').filter({ hasText: first.ID.slice(0, 8) }).innerText();
    assert.match(row, /1 \(in place\)\s+run\s+running\s+healthy/);
  });

  it('Start runs a stopped job again, as Nomad\'s UI does', async () => {
    await open(page, '/ui/jobs/default/ui-stopped', /Job ui-stopped/);
    assert.equal(await page.getByRole('button', { name: 'Stop job' }).isDisabled(), true);
    page.once('dialog', (dlg) => void dlg.accept());
    await page.getByRole('button', { name: 'Start job' }).click();
    await page.getByRole('status').filter({ hasText: /^Started: 1 allocation running\.$/ }).waitFor({ timeout: 120_000 });
    const job = await apiGet<Job>('/v1/job/ui-stopped');
    assert.equal(job.Stop, false);
    assert.ok((await apiGet<AllocationListStub[]>('/v1/job/ui-stopped/allocations')).some((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running'));
  });

  it('a read-only token sees no action on the jobs pages, and the API refuses them', async () => {
    // A revert to a stable version rolls without canaries; a new version has one waiting for promotion.
    await cluster.run('ui-web', canaryJob('ui-web', 4), { detach: true });
    const version = (await apiGet<Job>('/v1/job/ui-web')).Version;
    const d = await deploymentWhen('ui-web', `of version ${version} to wait for promotion`, (x) => x.JobVersion === version && canariesHealthy(x));
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await ctx.newPage();
    await login(p, cluster.readOnlyToken);
    await open(p, '/ui/jobs', /^Jobs$/);
    assert.equal(await p.getByRole('link', { name: 'Run a job' }).count(), 0);
    await open(p, '/ui/jobs/default/ui-web', /Job ui-web/);
    await p.locator(`[data-deployment="${d.ID}"]`).waitFor();
    for (const name of ['Stop job', 'Start job', 'Promote', 'Fail']) assert.equal(await p.getByRole('button', { name }).count(), 0, `no ${name} button`);
    assert.equal(await p.getByRole('link', { name: 'Edit' }).count(), 0);
    await open(p, '/ui/jobs/default/ui-web/versions', /Versions of job ui-web/);
    assert.equal(await p.getByRole('button', { name: /^Revert/ }).count(), 0);
    const ro = cluster.readOnlyToken;
    assert.equal((await cluster.send('PUT', `/v1/deployment/promote/${d.ID}`, { DeploymentID: d.ID, All: true }, ro)).status, 403);
    assert.equal((await cluster.send('PUT', `/v1/deployment/fail/${d.ID}`, { DeploymentID: d.ID }, ro)).status, 403);
    assert.equal((await cluster.send('PUT', '/v1/job/ui-web/revert', { JobID: 'ui-web', JobVersion: 0 }, ro)).status, 403);
    assert.equal((await apiGet<Deployment>(`/v1/deployment/${d.ID}`)).Status, 'running', 'the refused writes changed nothing');
    await ctx.close();
  });

  it('the jobs pages fit a phone\'s screen', async () => {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const p = await ctx.newPage();
    await login(p, cluster.agent.token);
    for (const [path, heading, name] of [
      ['/ui/jobs', /^Jobs$/, 'jobs-list-phone'],
      ['/ui/jobs/default/ui-web', /Job ui-web/, 'job-phone'],
      ['/ui/jobs/default/ui-web/versions', /Versions of job ui-web/, 'job-versions-phone'],
    ] as const) {
      await open(p, path, heading);
      const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `${path} is ${overflow}px wider than the phone's screen`);
      await shot(p, name);
    }
    await ctx.close();
  });

  it('a long list: one read of /v1/jobs and no allocation read; the first hundred rows drawn, the search over all', async () => {
    // No page open while the jobs are registered: an open job page would read its job again on each change.
    await page.goto('about:blank');
    // Parameterized jobs place nothing until dispatched: quick to register in bulk.
    const ids = Array.from({ length: 120 }, (_, i) => `bulk-${String(i).padStart(3, '0')}`);
    for (let i = 0; i < ids.length; i += 20) {
      await Promise.all(ids.slice(i, i + 20).map(async (id) => {
        const job = { ID: id, Name: id, Type: 'batch', ParameterizedJob: { Payload: 'optional' }, TaskGroups: [{ Name: 'g', Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: '/bin/true' } }] }] };
        const res = await cluster.send('POST', '/v1/jobs', { Job: job });
        assert.equal(res.status, 200, res.text);
      }));
    }
    const total = (await apiGet<JobListStub[]>('/v1/jobs?namespace=*')).length;
    const reads: string[] = [];
    const onRequest = (r: { url(): string }): void => {
      const u = new URL(r.url());
      if (u.pathname.startsWith('/v1/') && u.pathname !== '/v1/event/stream' && u.pathname !== '/v1/acl/token/self') reads.push(`${u.pathname}${u.search}`);
    };
    page.on('request', onRequest);
    await open(page, '/ui/jobs', /^Jobs$/);
    await page.locator('[data-job-count]').filter({ hasText: `${total} jobs; the first 100 shown` }).waitFor();
    assert.equal((await jobRows()).length, 100);
    // Live updates read the same list again; nothing else is read.
    assert.deepEqual([...new Set(reads)], ['/v1/jobs?namespace=*'], 'the list is one read');
    await page.getByRole('button', { name: `Show ${Math.min(100, total - 100)} more` }).click();
    assert.equal((await jobRows()).length, Math.min(200, total));
    await page.getByRole('searchbox').fill('bulk-11');
    await until('the search to narrow the list', async () => (await jobRows()).length === 10);
    assert.deepEqual((await jobRows()).map((r) => r[0]), ids.filter((id) => id.startsWith('bulk-11')));
    page.off('request', onRequest);
    assert.ok(!reads.some((r) => r.includes('allocation')), `no allocation read: ${reads.join(' ')}`);
  });
});
