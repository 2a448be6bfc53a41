/// <reference lib="dom" />
// The allocation's tools in the web UI, in a real headless browser (Debian's
// chromium through playwright-core) against a real dev agent running a
// raw_exec task that talks on stdout and stderr: its logs follow live
// without a reload, Pause holds new lines back and Resume shows them all,
// stderr is a tab of its own; the file browser lists the allocation
// directory as the API does and shows a file the task wrote (a binary one
// as a download, a large one cut); exec runs a shell in the task through the
// terminal widget and shows its exit code. A read-only token sees no exec,
// and the API refuses it anyway. Every page fits a phone's width.
// Screenshots go to .tmp/ui-shots/alloc-*.png.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { WebSocket } from 'ws';
import type { AllocFileInfo } from '../../src/api/index.js';
import { launchBrowser, shot } from '../support/browser.js';
import { loginAs, openPage } from '../support/ui-pages.js';
import { until } from '../support/agent-run.js';
import { BURST_LINES, NOTE, ToolsCluster } from '../support/ui-tools.js';

const cluster = new ToolsCluster(mkdtempSync('/tmp/berth-ui-tools-'));
let browser: Browser;
let ctx: BrowserContext;
let page: Page;
let allocId = '';

const login = (p: Page, token: string): Promise<void> => loginAs(p, cluster.agent.addr, token);

const open = (p: Page, urlPath: string, heading: RegExp | string): Promise<void> => openPage(p, cluster.agent.addr, urlPath, heading);

/** The numbers N of the `<word> N` lines in `text`, in order. */
function numbers(text: string, word: 'out' | 'err'): number[] {
  return [...text.matchAll(new RegExp(`^${word} (\\d+)$`, 'gm'))].map((m) => Number(m[1]));
}

/** The highest `out N` the task has printed, as the API's log tail says. */
async function printedUpTo(): Promise<number> {
  const res = await cluster.fetch(`/v1/client/fs/logs/${allocId}?task=talk&type=stdout&origin=end&offset=300&plain=true`);
  assert.equal(res.status, 200);
  return Math.max(0, ...numbers(await res.text(), 'out'));
}

/** The page's stdout pane's text. */
const stdoutPane = (p: Page = page) => p.getByLabel('stdout of talk', { exact: true });

/** The page is no wider than its window. */
async function assertNoOverflow(p: Page, where: string): Promise<void> {
  const { scroll, client } = await p.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
  assert.ok(scroll <= client, `${where}: the page is ${scroll}px wide in a ${client}px window`);
}

before(async () => {
  await cluster.start();
  allocId = await cluster.runTalkingJob('talker');
  browser = await launchBrowser();
  ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  page = await ctx.newPage();
  await login(page, cluster.agent.token);
});

after(async () => {
  await browser?.close().catch(() => undefined);
  await cluster.stop();
});

describe("an allocation's tools in the web UI", { timeout: 300_000 }, () => {
  it('follows a task’s stdout live, pauses and resumes without losing a line, and shows stderr in its own tab', async () => {
    await open(page, `/ui/allocations/${allocId}/logs?task=talk`, 'Logs of task talk');
    await until('stdout lines on the page', async () => numbers(await stdoutPane().innerText(), 'out').length >= 3 || undefined);
    const first = Math.max(...numbers(await stdoutPane().innerText(), 'out'));
    // New lines appear without a reload.
    await until('new stdout lines to appear', async () => Math.max(...numbers(await stdoutPane().innerText(), 'out')) >= first + 3 || undefined);
    assert.deepEqual(numbers(await stdoutPane().innerText(), 'err'), [], 'no stderr line in the stdout pane');

    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    const held = numbers(await stdoutPane().innerText(), 'out');
    const lastShown = Math.max(...held);
    // The task goes on printing (the API shows it), the paused page does not.
    await until('the task to print 5 more lines', async () => (await printedUpTo()) >= lastShown + 5 || undefined);
    assert.deepEqual(numbers(await stdoutPane().innerText(), 'out'), held, 'the paused pane did not change');

    await page.getByRole('button', { name: 'Resume' }).click();
    const printed = await printedUpTo();
    await until('the lines printed meanwhile to show', async () => Math.max(...numbers(await stdoutPane().innerText(), 'out')) >= printed || undefined);
    const shown = numbers(await stdoutPane().innerText(), 'out');
    const from = shown.indexOf(held[0]!);
    assert.ok(from >= 0, 'the lines shown before the pause are still there');
    assert.deepEqual(shown.slice(from), Array.from({ length: shown.length - from }, (_, i) => held[0]! + i), 'every line, none lost nor repeated');

    // Scrolled up, the pane stops following and offers to scroll to the bottom (once it holds more than it shows).
    await until('more lines than the pane shows', () => stdoutPane().evaluate((el) => el.scrollHeight > el.clientHeight + 8 || undefined));
    await stdoutPane().evaluate((el) => (el.scrollTop = 0));
    await page.getByRole('button', { name: 'Scroll to bottom' }).click();
    await until('the pane at its bottom again', () =>
      stdoutPane().evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight < 8 || undefined),
    );
    await shot(page, 'alloc-logs');

    await page.getByRole('tab', { name: 'stderr' }).click();
    const stderrPane = page.getByLabel('stderr of talk', { exact: true });
    await until('stderr lines in the stderr tab', async () => numbers(await stderrPane.innerText(), 'err').length >= 2 || undefined);
    const errText = await stderrPane.innerText();
    assert.deepEqual(numbers(errText, 'out'), [], 'no stdout line in the stderr pane');
    assert.ok(numbers(errText, 'err').every((n) => n % 5 === 0), errText);
    assert.equal(await page.getByRole('tab', { name: 'stderr' }).getAttribute('aria-selected'), 'true');
    await shot(page, 'alloc-logs-stderr');

    // The task chooser follows the other task's logs.
    await page.getByRole('tab', { name: 'stdout' }).click();
    await page.getByLabel('Task').selectOption('side');
    await page.getByRole('heading', { level: 1, name: 'Logs of task side' }).waitFor();
    assert.match(page.url(), /[?&]task=side\b/);
    const side = page.getByLabel('stdout of side', { exact: true });
    await until('side lines in its pane', async () => /^side \d+$/m.test(await side.innerText()) || undefined);
    assert.deepEqual(numbers(await side.innerText(), 'out'), [], 'no line of talk in the pane of side');

    // A burst of output: the page keeps its last 256 KiB, from a line's start, every line of it.
    await page.getByLabel('Task').selectOption('burst');
    const burst = page.getByLabel('stdout of burst', { exact: true });
    await page.getByText('(no stdout yet)').waitFor();
    cluster.burstNow(allocId);
    await until('the burst to show', async () => (await burst.innerText()).trimEnd().endsWith(`\n${BURST_LINES}`) || undefined);
    const kept = (await burst.textContent()) ?? '';
    assert.ok(kept.length <= 256 * 1024, `${kept.length} characters kept`);
    const lines = kept.trimEnd().split('\n').map(Number);
    assert.ok(lines.length > 10_000, `${lines.length} lines kept`);
    assert.deepEqual(lines, Array.from({ length: lines.length }, (_, i) => BURST_LINES - lines.length + 1 + i), 'whole lines, in order, none lost');
  });

  it('browses the allocation directory as the API lists it and shows a file the task wrote', async () => {
    await open(page, `/ui/allocations/${allocId}/fs`, 'Files /');
    const root = await cluster.get<AllocFileInfo[]>(`/v1/client/fs/ls/${allocId}?path=/`);
    const onPage = await page.locator('[data-entry]').evaluateAll((els) => els.map((e) => e.getAttribute('data-entry')));
    assert.deepEqual([...onPage].sort(), root.map((e) => e.Name).sort());
    assert.ok(root.some((e) => e.Name === 'talk' && e.IsDir), JSON.stringify(root));
    await shot(page, 'alloc-files');

    await page.getByRole('link', { name: 'talk/' }).click();
    await page.getByRole('heading', { level: 1, name: 'Files /talk' }).waitFor();
    await page.getByRole('link', { name: 'local/' }).click();
    await page.getByRole('heading', { level: 1, name: 'Files /talk/local' }).waitFor();
    const local = await cluster.get<AllocFileInfo[]>(`/v1/client/fs/ls/${allocId}?path=/talk/local`);
    const note = local.find((e) => e.Name === 'note.txt');
    assert.ok(note, JSON.stringify(local));
    const row = page.getByRole('row').filter({ has: page.locator('[data-entry="note.txt"]') });
    assert.match(await row.innerText(), new RegExp(`${note.Size} B[\\s\\S]*${note.FileMode.replace(/[-]/g, '\\-')}`));

    await page.getByRole('link', { name: 'note.txt' }).click();
    await page.getByRole('heading', { level: 1, name: 'Files /talk/local/note.txt' }).waitFor();
    assert.equal((await page.getByLabel('content of note.txt').innerText()).trim(), NOTE);
    await shot(page, 'alloc-files-file');

    // A binary file: no text, a download with its bytes.
    await page.getByRole('link', { name: 'local' }).click();
    await page.getByRole('link', { name: 'blob.bin' }).click();
    await page.getByText('A binary file: download it to read it.').waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download blob.bin' }).click()]);
    assert.equal(download.suggestedFilename(), 'blob.bin');
    assert.deepEqual(readFileSync((await download.path())!), Buffer.alloc(2048));

    // A large file: its first 64 KiB.
    await page.getByRole('link', { name: 'local' }).click();
    await page.getByRole('link', { name: 'big.txt' }).click();
    await page.getByText(/The first 64 KiB of/).waitFor();
    const big = await page.getByLabel('content of big.txt').innerText();
    assert.ok(big.startsWith('1\n2\n3\n'), big.slice(0, 20));
    assert.ok(big.length <= 64 * 1024, `${big.length} characters shown`);

    // The breadcrumbs lead back to the top.
    await page.getByRole('link', { name: 'allocation directory' }).click();
    await page.getByRole('heading', { level: 1, name: 'Files /' }).waitFor();
  });

  it('execs a shell in the task through the terminal and shows its exit code', async () => {
    await open(page, `/ui/allocations/${allocId}/exec?task=talk`, 'Exec into task talk');
    assert.equal(await page.getByLabel('Command').inputValue(), '/bin/sh');
    await page.getByRole('button', { name: 'Connect' }).click();
    await page.locator('[data-exec-phase="open"]').waitFor();
    const rows = page.locator('[data-terminal] .xterm-rows');
    await page.locator('[data-terminal]').click();
    await page.keyboard.type('echo berth-$((6*7))');
    await page.keyboard.press('Enter');
    await until('berth-42 in the terminal', async () => (await rows.innerText()).includes('berth-42') || undefined);
    await shot(page, 'alloc-exec');

    // The shell sees the terminal's size, and its new size when the window narrows.
    let asked = 0;
    const ttySize = async (): Promise<[number, number]> => {
      const tag = `size${++asked}`;
      await page.keyboard.type(`echo ${tag}-$(stty size | tr " " x)`);
      await page.keyboard.press('Enter');
      const m = await until(`${tag} in the terminal`, async () => new RegExp(`${tag}-(\\d+)x(\\d+)`).exec(await rows.innerText()) ?? undefined);
      return [Number(m[1]), Number(m[2])];
    };
    const wide = await ttySize();
    assert.equal(wide[0], await rows.locator(':scope > div').count(), 'the tty has the rows the terminal shows');
    await page.setViewportSize({ width: 700, height: 800 });
    await until('the tty to narrow with the window', async () => ((await ttySize())[1] < wide[1]) || undefined);
    await page.setViewportSize({ width: 1280, height: 800 });

    await page.keyboard.type('exit 3');
    await page.keyboard.press('Enter');
    const status = page.locator('[data-exec-phase="exited"]');
    await status.waitFor();
    assert.equal(await status.getAttribute('data-exit-code'), '3');
    assert.match(await status.innerText(), /exited with code 3/);
  });

  it('fits a phone’s width', async () => {
    const phone = await ctx.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await login(phone, cluster.agent.token); // the token is kept per tab
    await open(phone, `/ui/allocations/${allocId}/logs?task=talk`, 'Logs of task talk');
    await until('stdout lines on the phone', async () => numbers(await stdoutPane(phone).innerText(), 'out').length >= 1 || undefined);
    await assertNoOverflow(phone, 'logs');
    await shot(phone, 'alloc-logs-phone');
    await open(phone, `/ui/allocations/${allocId}/fs/talk/local`, 'Files /talk/local');
    await phone.locator('[data-entry="note.txt"]').waitFor();
    await assertNoOverflow(phone, 'files');
    await shot(phone, 'alloc-files-phone');
    await open(phone, `/ui/allocations/${allocId}/exec?task=talk`, 'Exec into task talk');
    await phone.getByRole('button', { name: 'Connect' }).click();
    await phone.locator('[data-exec-phase="open"]').waitFor();
    await phone.locator('[data-terminal] .xterm-rows').waitFor();
    await assertNoOverflow(phone, 'exec');
    await shot(phone, 'alloc-exec-phone');
    await phone.close();
  });

  it('gives a read-only token no exec, and the API refuses it', async () => {
    const reader = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const p = await reader.newPage();
    await login(p, cluster.readOnlyToken);
    await open(p, `/ui/allocations/${allocId}/exec?task=talk`, 'Exec');
    await p.getByText('Exec needs a management token').waitFor();
    assert.equal(await p.getByRole('button', { name: 'Connect' }).count(), 0);
    assert.equal(await p.getByRole('navigation', { name: 'Allocation tools' }).getByRole('link', { name: 'Exec' }).count(), 0);
    assert.equal(await p.locator('[data-terminal]').count(), 0);
    // Its logs page says what the API answers it.
    const logs = await cluster.fetch(`/v1/client/fs/logs/${allocId}?task=talk&type=stdout&origin=end&offset=300&plain=true`, cluster.readOnlyToken);
    const said = (await logs.text()).trim();
    await open(p, `/ui/allocations/${allocId}/logs?task=talk`, 'Logs of task talk');
    assert.equal(logs.status, 200, `the API lets a read-only token read logs: ${said}`);
    await until('stdout lines for the reader', async () => numbers(await stdoutPane(p).innerText(), 'out').length >= 1 || undefined);
    await shot(p, 'alloc-logs-read-only');
    await reader.close();

    // The API refuses the read-only token's exec, in Nomad's browser handshake as with the header.
    const url = `${cluster.agent.addr.replace(/^http/, 'ws')}/v1/client/allocation/${allocId}/exec?task=talk&command=${encodeURIComponent('["/bin/sh"]')}&tty=true&ws_handshake=true`;
    const closed = await new Promise<{ code: number; reason: string; output: string }>((resolve, reject) => {
      const ws = new WebSocket(url);
      let output = '';
      ws.on('open', () => {
        ws.send(JSON.stringify({ version: 1, auth_token: cluster.readOnlyToken }));
        ws.send(JSON.stringify({ stdin: { data: Buffer.from('echo ran\n').toString('base64') } }));
      });
      ws.on('message', (m: Buffer) => (output += m.toString()));
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString(), output }));
      ws.on('unexpected-response', (_req, res) => resolve({ code: res.statusCode ?? 0, reason: res.statusMessage ?? '', output }));
      ws.on('error', reject);
    });
    assert.equal(closed.code, 1008, JSON.stringify(closed));
    assert.match(closed.reason, /read-only" may not change/);
    assert.equal(closed.output, '', 'nothing ran');
    const header = await cluster.fetch(`/v1/client/allocation/${allocId}/exec?task=talk&command=${encodeURIComponent('["/bin/sh"]')}`, cluster.readOnlyToken);
    assert.equal(header.status, 403);
  });
});
