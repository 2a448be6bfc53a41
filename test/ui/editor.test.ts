/// <reference lib="dom" />
// The job editor and the header's search in a real headless browser against
// a real dev agent (the hostpath plugin and a volume, test/support/ui-cluster.ts).
// A user writes a job in HCL with a variable, plans it and sees the diff and
// the placements the API's plan answers, runs it and sees it running on the
// job page (and in the API); a broken file shows its line; an existing job is
// edited (its count raised), planned as an update and run; the search box
// finds a job, a node and a volume and opens each by keyboard; a read-only
// token gets no editor and the API refuses it anyway; a phone-sized screen
// holds the editor, its plan and the search. Screenshots in .tmp/ui-shots/.

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { AllocationListStub, Job, JobPlanResponse, NodeListStub } from '../../src/api/index.js';
import { until } from '../support/agent-run.js';
import { launchBrowser, shot } from '../support/browser.js';
import { UiCluster } from '../support/ui-cluster.js';
import { loginAs } from '../support/ui-pages.js';

const cluster = new UiCluster(mkdtempSync('/tmp/berth-uiedit-'), { volume: 'editor-vol' });
let browser: Browser;
let page: Page;

const JOB = 'edit-web';

/** A raw_exec job of `count` (an HCL variable) sleeping tasks. */
const JOB_HCL = `variable "count" {
  type    = number
  default = 1
}

job "${JOB}" {
  type = "service"

  group "web" {
    count = var.count

    task "serve" {
      driver = "raw_exec"

      config {
        command = "/bin/sleep"
        args    = ["600"]
      }

      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
`;

/** PUT/POST to the API with the management token (or `token`): status and JSON body. */
async function send<T>(method: string, p: string, body: unknown, token = cluster.agent.token): Promise<{ status: number; body: T; text: string }> {
  const res = await fetch(`${cluster.agent.addr}${p}`, { method, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed as T, text };
}

const login = (p: Page, token: string): Promise<void> => loginAs(p, cluster.agent.addr, token);

/** The allocations of a job the API reports running. */
async function running(id: string): Promise<AllocationListStub[]> {
  const allocs = await cluster.get<AllocationListStub[]>(`/v1/job/${id}/allocations`);
  return allocs.filter((a) => a.ClientStatus === 'running' && a.DesiredStatus === 'run');
}

/** The group lines of the page's plan: `name -> "1 create, 2 in-place update"`. */
async function shownUpdates(p: Page): Promise<Record<string, string>> {
  const groups = p.locator('[data-group]');
  const out: Record<string, string> = {};
  for (let i = 0; i < (await groups.count()); i++) {
    const g = groups.nth(i);
    out[(await g.getAttribute('data-group')) ?? ''] = (await g.getAttribute('data-updates')) ?? '';
  }
  return out;
}

/** A group's Updates as the API's plan diff has them, in the page's words. */
function apiUpdates(plan: JobPlanResponse): Record<string, string> {
  const out: Record<string, string> = {};
  for (const g of plan.Diff?.TaskGroups ?? []) {
    out[g.Name] = Object.entries(g.Updates ?? {})
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, n]) => `${n} ${k}`)
      .join(', ');
  }
  return out;
}

before(async () => {
  await cluster.start();
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await login(page, cluster.agent.token);
});

after(async () => {
  await browser?.close().catch(() => undefined);
  await cluster.agent?.cli(['job', 'stop', '-purge', JOB]).catch(() => undefined);
  await cluster.stop();
});

describe('the job editor', { timeout: 400_000 }, () => {
  it('plans a job written in HCL with a variable (the diff and placements the API plans), runs it, and opens its page running', async () => {
    await page.goto(`${cluster.agent.addr}/ui/jobs/new`);
    await page.getByRole('heading', { level: 1, name: 'Run a job' }).waitFor();
    const source = page.getByLabel(/^Job file/);
    await source.fill(JOB_HCL);
    await page.getByLabel(/^Variables/).fill('count = 2\n');
    // Tab indents within the text; Escape then Tab leaves it.
    await source.focus();
    await page.keyboard.press('End');
    await page.keyboard.press('Tab');
    assert.ok((await source.inputValue()).endsWith('}\n  '), 'Tab inserted two spaces');
    await page.keyboard.press('Shift+Tab');
    assert.equal(await source.inputValue(), JOB_HCL, 'Shift+Tab took them out');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'job-variables', 'Escape, Tab: focus left the job file');
    assert.equal(await source.inputValue(), JOB_HCL);
    await shot(page, 'job-editor');

    assert.ok(await page.getByRole('button', { name: 'Run' }).isDisabled(), 'Run waits for a plan');
    await page.getByRole('button', { name: 'Plan' }).click();
    await page.locator('[data-plan-index]').waitFor();

    // The same file planned through the API: parse (with the variable), then plan.
    const parsed = await send<Job>('PUT', '/v1/jobs/parse', { JobHCL: JOB_HCL, Variables: 'count = 2\n', Canonicalize: true });
    assert.equal(parsed.status, 200, parsed.text);
    const apiPlan = await send<JobPlanResponse>('PUT', `/v1/job/${JOB}/plan`, { Job: parsed.body, Diff: true });
    assert.equal(apiPlan.status, 200, apiPlan.text);
    assert.equal(apiPlan.body.Diff?.Type, 'Added');
    assert.deepEqual(await shownUpdates(page), apiUpdates(apiPlan.body));
    assert.deepEqual(await shownUpdates(page), { web: '2 create' });
    assert.equal(await page.locator('[data-job-diff]').getAttribute('data-job-diff'), 'Added');
    const planText = await page.locator('[data-section="plan"]').innerText();
    assert.match(planText, /\+ Job: "edit-web"/);
    assert.match(planText, /\+ Task Group: "web" \(2 create\)/);
    assert.match(planText, /\+ Task: "serve"/);
    assert.match(planText, /All tasks successfully allocated\./);
    const placements = await page.locator('[data-placement]').evaluateAll((els) => els.map((e) => e.getAttribute('data-placement')));
    assert.deepEqual(placements, (apiPlan.body.BerthPlacements ?? []).map((p) => p.Name));
    assert.deepEqual(placements, ['edit-web.web[0]', 'edit-web.web[1]']);
    assert.equal(Number(await page.locator('[data-job-modify-index]').innerText()), apiPlan.body.JobModifyIndex);
    assert.equal(apiPlan.body.JobModifyIndex, 0, 'a new job');
    // Every field, as `job plan -verbose`.
    await page.getByLabel(/Show every field/).check();
    assert.match(await page.locator('[data-section="plan"]').innerText(), /\+ Count: "2" \(forces create\)/);
    await shot(page, 'job-editor-plan');

    await page.getByRole('button', { name: 'Run' }).click();
    await page.getByRole('heading', { level: 1, name: new RegExp(`Job ${JOB}`) }).waitFor();
    assert.equal(new URL(page.url()).pathname, `/ui/jobs/default/${JOB}`);
    await until('the job to run its two allocations', async () => (await running(JOB)).length === 2, 120_000);
    const job = await cluster.get<Job>(`/v1/job/${JOB}`);
    assert.equal(job.TaskGroups?.[0]?.Count, 2, 'the variable reached the job');
    // The job page follows it to running.
    await until('the job page to show it running', async () => /running/.test(await page.locator('h1').innerText()), 60_000);
  });

  it('shows an HCL error with its line, and changes nothing', async () => {
    await page.goto(`${cluster.agent.addr}/ui/jobs/new`);
    const broken = 'job "broken-job" {\n  group "g" {\n    count =\n  }\n}\n';
    await page.getByLabel(/^Job file/).fill(broken);
    await page.getByRole('button', { name: 'Plan' }).click();
    const problem = page.locator('[data-problem-line]').first();
    await problem.waitFor();
    assert.equal(await problem.getAttribute('data-problem-line'), '3');
    assert.match(await problem.innerText(), /^Line 3, column \d+: .+/);
    // The line's button selects the line in the text.
    await problem.getByRole('button').click();
    const selected = await page.evaluate(() => {
      const a = document.getElementById('job-source') as HTMLTextAreaElement;
      return a.value.slice(a.selectionStart, a.selectionEnd);
    });
    assert.equal(selected, '    count =');
    assert.ok(await page.getByRole('button', { name: 'Run' }).isDisabled());
    const res = await fetch(`${cluster.agent.addr}/v1/job/broken-job`, { headers: { Authorization: `Bearer ${cluster.agent.token}` } });
    assert.equal(res.status, 404, 'nothing was registered');
  });

  it('edits a running job: its JSON loads, a count change plans as an update, and Run applies it', async () => {
    const before = await cluster.get<Job>(`/v1/job/${JOB}`);
    await page.goto(`${cluster.agent.addr}/ui/jobs/default/${JOB}/edit`);
    await page.getByRole('heading', { level: 1, name: `Edit job ${JOB}` }).waitFor();
    const source = page.getByLabel(/^Job file/);
    await until('the job to load', async () => (await source.inputValue()).includes(`"ID": "${JOB}"`));
    const loaded = JSON.parse(await source.inputValue()) as Job;
    assert.equal(loaded.TaskGroups?.[0]?.Count, 2);
    assert.equal(loaded.JobModifyIndex, undefined, "the server's fields are left out");
    loaded.TaskGroups![0]!.Count = 3;
    await source.fill(JSON.stringify(loaded, null, 2));
    await page.getByRole('button', { name: 'Plan' }).click();
    await page.locator('[data-plan-index]').waitFor();

    const apiPlan = await send<JobPlanResponse>('PUT', `/v1/job/${JOB}/plan`, { Job: loaded, Diff: true });
    assert.equal(apiPlan.body.Diff?.Type, 'Edited');
    assert.deepEqual(await shownUpdates(page), apiUpdates(apiPlan.body));
    assert.match((await shownUpdates(page))['web'] ?? '', /1 create/);
    assert.match(await page.locator('[data-section="plan"]').innerText(), /~ Count: "2" => "3"/);
    assert.equal(Number(await page.locator('[data-job-modify-index]').innerText()), before.JobModifyIndex);

    await page.getByRole('button', { name: 'Run' }).click();
    await page.getByRole('heading', { level: 1, name: new RegExp(`Job ${JOB}`) }).waitFor();
    await until('the job to run three allocations', async () => (await running(JOB)).length === 3, 120_000);
    const after = await cluster.get<Job>(`/v1/job/${JOB}`);
    assert.equal(after.TaskGroups?.[0]?.Count, 3);
    assert.ok((after.JobModifyIndex ?? 0) > (before.JobModifyIndex ?? 0));
  });

  it("refuses to run a plan that someone else's change made stale (EnforceIndex), in words", async () => {
    await page.goto(`${cluster.agent.addr}/ui/jobs/default/${JOB}/edit`);
    const source = page.getByLabel(/^Job file/);
    await until('the job to load', async () => (await source.inputValue()).includes(`"ID": "${JOB}"`));
    await page.getByRole('button', { name: 'Plan' }).click();
    await page.locator('[data-plan-index]').waitFor();
    // Another writer changes the job meanwhile.
    const other = await cluster.get<Job>(`/v1/job/${JOB}`);
    other.Meta = { changed: 'by-someone-else' };
    assert.equal((await send('PUT', '/v1/jobs', { Job: other })).status, 200);
    await page.getByRole('button', { name: 'Run' }).click();
    const alert = page.locator('.problems');
    await alert.waitFor();
    assert.match(await alert.innerText(), /plan again/);
    assert.deepEqual((await cluster.get<Job>(`/v1/job/${JOB}`)).Meta, { changed: 'by-someone-else' }, 'the stale plan changed nothing');
  });
});

describe('the search box', { timeout: 200_000 }, () => {
  /** Types `text` into the search, moves to the first hit of `kind` with the arrow keys, and presses Enter. */
  async function searchAndOpen(p: Page, text: string, kind: string): Promise<void> {
    const box = p.getByRole('combobox', { name: /Search/ });
    await box.focus();
    await box.fill(text);
    const hits = p.locator('#search-results [data-hit]');
    await hits.first().waitFor();
    const kinds = await hits.evaluateAll((els) => els.map((e) => e.getAttribute('data-hit')));
    const at = kinds.indexOf(kind);
    assert.ok(at >= 0, `a ${kind} among the hits for "${text}": ${kinds.join(', ')}`);
    // The first hit is active; each ArrowDown moves one on.
    for (let i = 0; i < at; i++) await p.keyboard.press('ArrowDown');
    assert.equal(await p.locator('#search-results [aria-selected="true"]').getAttribute('data-hit'), kind);
    await p.keyboard.press('Enter');
  }

  it('finds a job, a node and a volume and opens each by keyboard; Escape closes the list', async () => {
    await page.goto(`${cluster.agent.addr}/ui/`);
    await page.getByRole('heading', { level: 1, name: 'Cluster overview' }).waitFor();

    await searchAndOpen(page, 'edit-w', 'Job');
    await page.getByRole('heading', { level: 1, name: new RegExp(`Job ${JOB}`) }).waitFor();
    assert.equal(new URL(page.url()).pathname, `/ui/jobs/default/${JOB}`);

    const node = (await cluster.get<NodeListStub[]>('/v1/nodes'))[0]!;
    await searchAndOpen(page, node.Name, 'Node');
    await until('the node page', async () => new URL(page.url()).pathname === `/ui/nodes/${node.ID}`);
    await page.getByRole('heading', { level: 1 }).waitFor();

    const box = page.getByRole('combobox', { name: /Search/ });
    await box.fill('editor-v');
    await page.locator('#search-results [data-hit="Volume"]').waitFor();
    assert.equal(await box.getAttribute('aria-expanded'), 'true');
    await shot(page, 'search');
    await page.keyboard.press('Escape');
    assert.equal(await box.getAttribute('aria-expanded'), 'false', 'Escape closes the list');
    await page.keyboard.press('ArrowDown');
    assert.equal(await box.getAttribute('aria-expanded'), 'true', 'ArrowDown opens it again');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: /Volume editor-vol/ }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/ui/volumes/default/editor-vol');

    // What the page lists is what the API answers.
    const api = await send<{ Matches: Record<string, Array<{ ID: string }>> }>('PUT', '/v1/search/fuzzy?namespace=*', { Text: 'editor-v', Context: 'all' });
    assert.deepEqual(api.body.Matches['volumes']?.map((m) => m.ID), ['editor-vol']);
  });
});

describe('who may edit, and a phone', { timeout: 200_000 }, () => {
  it('a read-only token sees no editor, and the API refuses its plan and run', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const p = await ctx.newPage();
    await login(p, cluster.readOnlyToken);
    for (const path of ['/ui/jobs/new', `/ui/jobs/default/${JOB}/edit`]) {
      await p.goto(`${cluster.agent.addr}${path}`);
      await p.locator('[data-no-editor]').waitFor();
      assert.equal(await p.locator('textarea').count(), 0, `${path}: no text area`);
      assert.equal(await p.getByRole('button', { name: /^(Plan|Run)$/ }).count(), 0, `${path}: no Plan or Run`);
    }
    // The search box is for every reader.
    await p.getByRole('combobox', { name: /Search/ }).fill('edit-w');
    await p.locator('#search-results [data-hit="Job"]').waitFor();
    const job = await cluster.get<Job>(`/v1/job/${JOB}`);
    assert.equal((await send('PUT', `/v1/job/${JOB}/plan`, { Job: job, Diff: true }, cluster.readOnlyToken)).status, 403);
    assert.equal((await send('PUT', '/v1/jobs', { Job: job }, cluster.readOnlyToken)).status, 403);
    await ctx.close();
  });

  it('the editor with its plan, and the search, fit a phone (390x844) without sideways scrolling', async () => {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const p = await ctx.newPage();
    await login(p, cluster.agent.token);
    await p.goto(`${cluster.agent.addr}/ui/jobs/default/${JOB}/edit`);
    const source = p.getByLabel(/^Job file/);
    await until('the job to load', async () => (await source.inputValue()).includes(`"ID": "${JOB}"`));
    await p.getByRole('button', { name: 'Plan' }).click();
    await p.locator('[data-plan-index]').waitFor();
    const overflow = async (): Promise<number> => p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok((await overflow()) <= 0, `the editor is ${await overflow()}px wider than the phone's screen`);
    await p.getByRole('combobox', { name: /Search/ }).fill('edit');
    await p.locator('#search-results [data-hit]').first().waitFor();
    assert.ok((await overflow()) <= 0, `the search is ${await overflow()}px wider than the phone's screen`);
    await shot(p, 'job-editor-phone');
    await ctx.close();
  });
});
