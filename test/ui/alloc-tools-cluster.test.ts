/// <reference lib="dom" />
// The allocation's tools in the web UI of a server that does not run the
// allocation (a server agent and a client agent, real processes): an
// allocation's logs, files and exec are served by the agent of the node
// that runs it, so each page says which node runs it and the command that
// reaches it from a shell, and that command works.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, shot } from '../support/browser.js';
import { ok, until } from '../support/agent-run.js';
import { Cluster } from '../support/process-cluster.js';
import { talkingJob } from '../support/ui-tools.js';

const cluster = new Cluster();
let browser: Browser;
let page: Page;
let allocId = '';
const server = () => cluster.servers[0]!;

before(async () => {
  await cluster.start({ etcdMembers: 0, clients: 1 });
  const file = path.join(cluster.dir, 'talker.hcl');
  writeFileSync(file, talkingJob('talker'));
  ok(await server().run.cli(['job', 'run', file], { timeoutMs: 120_000 }), 'job run talker');
  const allocs = await cluster.read<Array<{ ID: string; ClientStatus: string }>>('/v1/job/talker/allocations');
  allocId = allocs.find((a) => a.ClientStatus === 'running')?.ID ?? '';
  assert.ok(allocId, JSON.stringify(allocs));
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  await page.goto(`${server().url}/ui/`);
  await page.getByLabel('API token').fill(cluster.mgmt);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Cluster overview' }).waitFor();
});

after(async () => {
  await browser?.close().catch(() => undefined);
  await server()?.run.cli(['job', 'stop', '--purge', 'talker']).catch(() => undefined);
  await cluster.close();
});

describe("an allocation's tools on a server that does not run it", { timeout: 240_000 }, () => {
  it('name the node that runs the allocation and a command that reaches it', async () => {
    const node = cluster.clientNames[0]!;
    await page.goto(`${server().url}/ui/allocations/${allocId}/logs?task=talk`);
    await page.getByRole('heading', { level: 1, name: 'Logs of task talk' }).waitFor();
    const alert = page.getByRole('alert').filter({ hasText: 'Logs unavailable' });
    await alert.waitFor();
    const said = await alert.innerText();
    assert.match(said, new RegExp(`this agent does not run the allocation \\(node ${node} does`));
    const command = /From a shell: berth (.+)$/.exec(said)?.[1]?.split(' ');
    assert.deepEqual(command, ['alloc', 'logs', '-f', allocId, 'talk']);
    await shot(page, 'alloc-logs-elsewhere');
    // The command the page gives reaches the node (without -f, to end).
    const out = ok(await server().run.cli(command!.filter((w) => w !== '-f')), 'berth alloc logs');
    assert.match(out, /^out \d+$/m);

    await page.goto(`${server().url}/ui/allocations/${allocId}/fs/talk`);
    await page.getByRole('heading', { level: 1, name: 'Files /talk' }).waitFor();
    const files = page.getByRole('alert').filter({ hasText: 'Files unavailable' });
    await files.waitFor();
    assert.match(await files.innerText(), new RegExp(`node ${node} does.*berth alloc fs ${allocId} /talk$`));
    const ls = ok(await server().run.cli(['alloc', 'fs', allocId, '/talk']), 'berth alloc fs');
    assert.match(ls, /local\//);

    await page.goto(`${server().url}/ui/allocations/${allocId}/exec?task=talk`);
    await page.getByRole('heading', { level: 1, name: 'Exec into task talk' }).waitFor();
    await page.getByRole('button', { name: 'Connect' }).click();
    const status = page.locator('[data-exec-phase="closed"]');
    await until('the exec session to end', async () => (await status.count()) > 0 || undefined);
    assert.match(await status.innerText(), new RegExp(`runs on node ${node}.*berth alloc exec -task talk ${allocId} /bin/sh`));
  });
});
