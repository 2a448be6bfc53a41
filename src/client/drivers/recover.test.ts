// Tasks survive their agent: an agent process starts a task and is killed
// with SIGKILL; a new driver recovers the saved handle and finds the same
// process (same pid), with wait, stats, stop and logs working.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readTaskLogs } from '../logs/index.js';
import { DriverHarness, eventually, running } from '../../../test/support/client-drivers.js';
import { TS_LOADER } from '../../../test/support/ts-loader.js';
import type { DriverError } from './driver-error.js';
import { ExecDriver } from './exec-driver.js';
import { RawExecDriver } from './raw-exec-driver.js';
import type { TaskConfig, TaskDriver, TaskHandle } from './task-driver.js';

const FIXTURE = fileURLToPath(new URL('../../../test/support/driver-agent-fixture.ts', import.meta.url));

/** Starts the task from a separate agent process, then SIGKILLs that agent. */
async function startFromDoomedAgent(h: DriverHarness, kind: string, cfg: TaskConfig): Promise<TaskHandle> {
  const agent = spawn(process.execPath, ['--import', TS_LOADER, FIXTURE, kind, h.stateDir, JSON.stringify(cfg)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  h.pids.push(agent.pid as number);
  const lines = createInterface({ input: agent.stdout });
  const [line] = (await once(lines, 'line')) as [string];
  const handle = JSON.parse(line) as TaskHandle;
  h.handles.push(handle);
  agent.kill('SIGKILL');
  await once(agent, 'exit');
  return handle;
}

const KINDS = [
  ['raw_exec', (stateDir: string) => new RawExecDriver({ stateDir })],
  ['exec', (stateDir: string) => new ExecDriver({ stateDir })],
] as const;

for (const [kind, make] of KINDS) {
  describe(`${kind}: recovery after the agent is killed`, () => {
    let h: DriverHarness;
    let driver: TaskDriver;

    beforeEach(() => {
      h = new DriverHarness();
      driver = make(h.stateDir);
      h.drivers.push(driver);
    });
    afterEach(() => h.cleanup());

    it('reattaches to the running task: same pid, logs keep flowing, stats, stop and wait work', async () => {
      const cfg = h.config('survivor', 'echo $$ > local/mypid; i=0; while :; do echo line-$i; i=$((i+1)); sleep 0.02; done');
      const handle = await startFromDoomedAgent(h, kind, cfg);
      const logs = { dir: h.logDir, taskName: 'survivor', stream: 'stdout' as const };
      const before = (await readTaskLogs(logs)).length;
      await eventually('logs grow with no agent running', async () => (await readTaskLogs(logs)).length > before + 100);

      await driver.recoverTask(handle);
      await driver.recoverTask(handle); // safe to repeat
      assert.equal(driver.inspectTask(cfg.id).state, 'running');
      assert.equal(driver.inspectTask(cfg.id).pid, handle.taskPid);
      process.kill(handle.taskPid, 0);
      if (kind === 'raw_exec') assert.equal(readFileSync(path.join(cfg.taskDir, 'mypid'), 'utf8').trim(), String(handle.taskPid));
      const stats = await driver.taskStats(cfg.id);
      assert.ok(stats.pids.includes(handle.taskPid));

      const waiting = driver.waitTask(cfg.id);
      await driver.stopTask(cfg.id, { timeoutMs: 500 });
      const exit = await waiting;
      assert.notEqual(exit.exitCode, 0);
      const kept = (await readTaskLogs(logs)).toString();
      assert.match(kept, /^line-0\nline-1\n/);
      await driver.destroyTask(cfg.id);
      assert.equal(running(handle.executorPid), false, 'the executor is gone after destroy');
    });

    it('recovers a task that ended while no agent ran, with its exit status', async () => {
      const cfg = h.config('brief', 'sleep 0.3; exit 9');
      const handle = await startFromDoomedAgent(h, kind, cfg);
      await eventually('the executor finished', () => !running(handle.executorPid));
      await driver.recoverTask(handle);
      assert.equal(driver.inspectTask(cfg.id).state, 'exited');
      assert.deepEqual(await driver.waitTask(cfg.id), { exitCode: 9, signal: null, oomKilled: false, message: 'exited with code 9' });
    });

    it('recovers a task whose executor was killed: stop and wait still work', async () => {
      const cfg = h.config('orphan', 'exec sleep 1000');
      const handle = await startFromDoomedAgent(h, kind, cfg);
      process.kill(handle.executorPid, 'SIGKILL');
      await eventually('the executor is gone', () => !running(handle.executorPid));
      await driver.recoverTask(handle);
      assert.equal(driver.inspectTask(cfg.id).state, 'running');
      assert.ok((await driver.taskStats(cfg.id)).pids.includes(handle.taskPid));
      await driver.stopTask(cfg.id, { timeoutMs: 100 });
      const exit = await driver.waitTask(cfg.id);
      assert.equal(exit.exitCode, -1);
      assert.match(exit.message, /exit status is unknown/);
      assert.equal(running(handle.taskPid), false);
    });

    it('refuses a handle whose executor and task are gone with no recorded exit', async () => {
      const cfg = h.config('lost', 'exec sleep 1000');
      const handle = await startFromDoomedAgent(h, kind, cfg);
      process.kill(handle.executorPid, 'SIGKILL');
      process.kill(-handle.taskPid, 'SIGKILL');
      // Both must be gone: a SIGKILLed executor can take a moment to exit on a loaded machine.
      await eventually('the task and its executor are gone', () => !running(handle.taskPid) && !running(handle.executorPid));
      await assert.rejects(driver.recoverTask(handle), (e: DriverError) => e.code === 'DRIVER_TASK_NOT_RECOVERABLE');
    });
  });
}
