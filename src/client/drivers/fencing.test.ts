// Fencing on the node (client stop_after_server_disconnect): a task started
// with a lease keeps running while the agent renews it, and is stopped by
// its executor (SIGTERM, its grace, then SIGKILL) once the lease runs out,
// even when no agent runs any more; its exit says it was fenced.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { DriverHarness, eventually } from '../../../test/support/client-drivers.js';
import { RawExecDriver } from './raw-exec-driver.js';

/** A writer that traps SIGTERM and keeps going a little before it exits, as databases do. */
const WRITER = 'trap \'echo term >> local/out; sleep 0.2; echo bye >> local/out; exit 0\' TERM; while :; do echo tick >> local/out; sleep 0.05; done';

const ticks = (file: string): number => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l === 'tick').length : 0);

describe('raw_exec: a fenced task', () => {
  let h: DriverHarness;
  let driver: RawExecDriver;

  beforeEach(() => {
    h = new DriverHarness();
    driver = new RawExecDriver({ stateDir: h.stateDir });
    h.drivers.push(driver);
  });
  afterEach(() => h.cleanup());

  it('runs past its window while the lease is renewed, and is stopped gracefully once it is not', async () => {
    const cfg = h.config('writer', WRITER, { fence: { afterMs: 300 }, killTimeoutMs: 5_000 });
    await h.start(driver, cfg);
    const out = path.join(cfg.taskDir, 'out');
    const renewing = setInterval(() => driver.renewLeases(), 50);
    try {
      // 40 ticks of 50 ms are well past the 300 ms window.
      await eventually('the task to write 40 ticks', () => ticks(out) >= 40);
      assert.equal(driver.inspectTask(cfg.id).state, 'running', 'a renewed lease keeps the task running');
    } finally {
      clearInterval(renewing);
    }
    const exit = await driver.waitTask(cfg.id);
    assert.equal(exit.fenced, true);
    assert.equal(exit.exitCode, 0, 'it exited on its own after SIGTERM, within its kill timeout');
    assert.match(exit.message, /stop_after_server_disconnect/);
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    assert.deepEqual(lines.slice(-2), ['term', 'bye'], 'it got SIGTERM and its grace to finish writing');
  });

  it('is stopped by its executor with no agent running, and a later agent reads the fenced exit', async () => {
    const cfg = h.config('alone', WRITER, { fence: { afterMs: 200 }, killTimeoutMs: 5_000 });
    const handle = await h.start(driver, cfg);
    await driver.shutdown();
    const out = path.join(cfg.taskDir, 'out');
    await eventually('the executor to stop the task', () => existsSync(out) && readFileSync(out, 'utf8').endsWith('bye\n'));
    const next = new RawExecDriver({ stateDir: h.stateDir });
    h.drivers.push(next);
    await next.recoverTask(handle);
    const exit = await next.waitTask(cfg.id);
    assert.equal(exit.fenced, true);
    assert.match(exit.message, /no server reached/);
  });

  it('a task started without a fence is never stopped for want of renewals', async () => {
    const cfg = h.config('free', 'while :; do echo tick >> local/out; sleep 0.05; done');
    await h.start(driver, cfg);
    await eventually('the task to write 20 ticks', () => ticks(path.join(cfg.taskDir, 'out')) >= 20);
    assert.equal(driver.inspectTask(cfg.id).state, 'running');
    await driver.stopTask(cfg.id, { timeoutMs: 100 });
    assert.equal((await driver.waitTask(cfg.id)).fenced, undefined);
  });
});
