/// <reference lib="dom" />
// The allocation's tools in the web UI of a server that does not run the
// allocation (a server agent and a client agent, real processes): the server
// forwards the allocation's logs, files and exec to the agent of the node
// that runs it, so each page works through the server; when that node's
// agent is gone, each page names the node, why, and the command that
// reaches it from a shell, and that command is the one the CLI runs.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, shot } from '../support/browser.js';
import { ok, until } from '../support/agent-run.js';
import { Cluster } from '../support/process-cluster.js';
import { NOTE, startTalkerCluster } from '../support/ui-tools.js';

const cluster = new Cluster();
let browser: Browser;
let page: Page;
let allocId = '';
const server = () => cluster.servers[0]!;

before(async () => {
  allocId = await startTalkerCluster(cluster);
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
  it('work through the server: logs follow, files list and read, exec echoes', async () => {
    await page.goto(`${server().url}/ui/allocations/${allocId}/logs?task=talk`);
    await page.getByRole('heading', { level: 1, name: 'Logs of task talk' }).waitFor();
    const pane = page.getByLabel('stdout of talk', { exact: true });
    const first = await until('a line in the logs', async () => Number(/^out (\d+)$/m.exec(await pane.innerText())?.[1]) || undefined);
    await until('a later line, followed', async () => (await pane.innerText()).includes(`out ${first + 3}\n`) || undefined);
    assert.equal(await page.getByRole('alert').count(), 0);
    await shot(page, 'alloc-logs-via-server');
    // The CLI command the pages offer when the node cannot be reached works while it can.
    assert.match(ok(await server().run.cli(['alloc', 'logs', allocId, 'talk']), 'berth alloc logs'), /^out \d+$/m);

    await page.goto(`${server().url}/ui/allocations/${allocId}/fs/talk/local`);
    await page.getByRole('heading', { level: 1, name: 'Files /talk/local' }).waitFor();
    await page.locator('[data-entry="note.txt"]').waitFor();
    await page.getByRole('link', { name: 'note.txt' }).click();
    await page.getByRole('heading', { level: 1, name: 'Files /talk/local/note.txt' }).waitFor();
    assert.equal((await page.getByLabel('content of note.txt').innerText()).trim(), NOTE);
    assert.match(ok(await server().run.cli(['alloc', 'fs', allocId, '/talk']), 'berth alloc fs'), /local\//);

    await page.goto(`${server().url}/ui/allocations/${allocId}/exec?task=talk`);
    await page.getByRole('heading', { level: 1, name: 'Exec into task talk' }).waitFor();
    await page.getByRole('button', { name: 'Connect' }).click();
    await page.locator('[data-exec-phase="open"]').waitFor();
    const rows = page.locator('[data-terminal] .xterm-rows');
    await page.locator('[data-terminal]').click();
    await page.keyboard.type('echo via-$((6*7))');
    await page.keyboard.press('Enter');
    await until('via-42 in the terminal', async () => (await rows.innerText()).includes('via-42') || undefined);
    await shot(page, 'alloc-exec-via-server');
    await page.keyboard.type('exit 4');
    await page.keyboard.press('Enter');
    const exited = page.locator('[data-exec-phase="exited"]');
    await exited.waitFor();
    assert.equal(await exited.getAttribute('data-exit-code'), '4');
  });

  it("name the node, why, and a command that reaches it when the node's agent is gone", async () => {
    const node = cluster.clientNames[0]!;
    await cluster.clients[0]!.stop('SIGINT');
    const gone = new RegExp(`node ${node} \\([0-9a-f]{8}\\) runs this allocation, but (its agent at \\S+ cannot be reached|the node is down)`);

    await page.goto(`${server().url}/ui/allocations/${allocId}/logs?task=talk`);
    await page.getByRole('heading', { level: 1, name: 'Logs of task talk' }).waitFor();
    const alert = page.getByRole('alert').filter({ hasText: 'Logs unavailable' });
    await alert.waitFor();
    const said = await alert.innerText();
    assert.match(said, gone);
    assert.deepEqual(/From a shell that reaches the node: berth (.+)$/.exec(said)?.[1]?.split(' '), ['alloc', 'logs', '-f', allocId, 'talk']);
    await shot(page, 'alloc-logs-node-gone');

    await page.goto(`${server().url}/ui/allocations/${allocId}/fs/talk`);
    await page.getByRole('heading', { level: 1, name: 'Files /talk' }).waitFor();
    const files = page.getByRole('alert').filter({ hasText: 'Files unavailable' });
    await files.waitFor();
    assert.match(await files.innerText(), gone);
    assert.match(await files.innerText(), new RegExp(`berth alloc fs ${allocId} /talk$`));

    await page.goto(`${server().url}/ui/allocations/${allocId}/exec?task=talk`);
    await page.getByRole('heading', { level: 1, name: 'Exec into task talk' }).waitFor();
    await page.getByRole('button', { name: 'Connect' }).click();
    const status = page.locator('[data-exec-phase="closed"]');
    await until('the exec session to end', async () => (await status.count()) > 0 || undefined);
    assert.match(await status.innerText(), gone);
    assert.match(await status.innerText(), new RegExp(`berth alloc exec -task talk ${allocId} /bin/sh`));
  });
});
