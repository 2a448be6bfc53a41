// Shared executors (tasksPerExecutor > 1): several tasks run under one
// executor process, each keeping what a per-task executor gives it (its own
// logs, wait, stop, exit status); a task's end or destroy leaves the others
// running; a new driver (an agent restarted) adopts the tasks and places new
// ones beside them; a shared executor killed loses only its own tasks, which
// are reported lost; an idle one exits. Real processes throughout.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readTaskLogs } from '../logs/index.js';
import { DriverHarness, eventually, running } from '../../../test/support/client-drivers.js';
import { RawExecDriver } from './raw-exec-driver.js';
import type { TaskHandle } from './task-driver.js';

const LOOP = (name: string): string => `i=0; while :; do echo ${name}-$i; i=$((i+1)); sleep 0.05; done`;

describe('raw_exec with shared executors (two tasks per executor)', () => {
  const h = new DriverHarness();
  const options = { stateDir: h.stateDir, tasksPerExecutor: 2, sharedExecutorIdleMs: 500 };
  let driver = new RawExecDriver(options);
  h.drivers.push(driver);
  const handles: Record<string, TaskHandle> = {};
  const logLines = async (task: string): Promise<number> =>
    (await readTaskLogs({ dir: h.logDir, taskName: task, stream: 'stdout' })).toString().split('\n').filter((l) => l.startsWith(`${task}-`)).length;

  before(async () => {
    const started = await Promise.all(['a', 'b', 'c'].map((t) => h.start(driver, h.config(t, LOOP(t)))));
    for (const [i, t] of ['a', 'b', 'c'].entries()) handles[t] = started[i]!;
  });
  after(() => h.cleanup());

  it('three tasks started at once run under two executors, each task with its own logs', async () => {
    const pids = Object.values(handles).map((x) => x.executorPid);
    assert.equal(new Set(pids).size, 2, `executors ${pids.join(', ')}`);
    for (const x of Object.values(handles)) {
      assert.ok(x.sharedExecutor, 'the handle says its executor is shared');
      assert.ok(running(x.executorPid) && running(x.taskPid));
      assert.equal(driver.inspectTask(x.taskId).state, 'running');
    }
    for (const t of ['a', 'b', 'c']) await eventually(`task ${t} logging`, async () => (await logLines(t)) > 3);
  });

  it("a task stopped and destroyed leaves its executor running its neighbour's task", async () => {
    const pair = ['a', 'b', 'c'].filter((t) => ['a', 'b', 'c'].some((u) => u !== t && handles[u]!.executorPid === handles[t]!.executorPid));
    assert.equal(pair.length, 2);
    const [first, neighbour] = pair as [string, string];
    const exit = driver.waitTask(handles[first]!.taskId);
    await driver.stopTask(handles[first]!.taskId, { timeoutMs: 1000 });
    assert.equal((await exit).signal, 'SIGTERM');
    await driver.destroyTask(handles[first]!.taskId);
    assert.ok(running(handles[neighbour]!.executorPid), 'the shared executor still runs');
    assert.equal(driver.inspectTask(handles[neighbour]!.taskId).state, 'running');
    const before = await logLines(neighbour);
    await eventually(`task ${neighbour} still logging`, async () => (await logLines(neighbour)) > before + 2);
    delete handles[first];
  });

  it('a new driver adopts the running tasks and starts a new task on the executor with room', async () => {
    await driver.shutdown();
    driver = new RawExecDriver(options);
    h.drivers.push(driver);
    for (const x of Object.values(handles)) {
      const got = await driver.recoverTask(x);
      assert.equal(got.taskPid, x.taskPid);
      assert.equal(driver.inspectTask(x.taskId).state, 'running');
    }
    const withRoom = new Set(Object.values(handles).map((x) => x.executorPid));
    const d = await h.start(driver, h.config('d', LOOP('d')));
    assert.ok(withRoom.has(d.executorPid), `task d on an executor already running (${[...withRoom].join(', ')}), not ${d.executorPid}`);
    handles['d'] = d;
    await eventually('task d logging', async () => (await logLines('d')) > 2);
  });

  it('a shared executor killed loses only its own tasks, reported lost; the other executor is untouched', async () => {
    const victim = handles['d']!.executorPid;
    const mates = Object.values(handles).filter((x) => x.executorPid === victim);
    const others = Object.values(handles).filter((x) => x.executorPid !== victim);
    assert.equal(mates.length, 2);
    assert.equal(others.length, 1);
    const waits = mates.map((x) => driver.waitTask(x.taskId));
    process.kill(victim, 'SIGKILL');
    // Either the driver kills the task, or the task died first of SIGPIPE writing to its lost executor.
    for (const w of waits) assert.match((await w).message, /executor was lost|while its executor was gone/);
    for (const x of mates) assert.equal(running(x.taskPid), false, `task ${x.taskName} was killed with its executor`);
    for (const x of others) {
      assert.ok(running(x.executorPid) && running(x.taskPid));
      assert.equal(driver.inspectTask(x.taskId).state, 'running');
    }
  });

  it('an executor with no task left exits by itself', async () => {
    const last = Object.values(handles).find((x) => running(x.executorPid))!;
    await driver.stopTask(last.taskId, { timeoutMs: 1000, signal: 'SIGKILL' });
    await driver.destroyTask(last.taskId);
    await eventually('the idle executor exits', () => !running(last.executorPid), { timeoutMs: 30_000 });
  });

  it("a task started by an agent killed right after is adopted by the next one (same pid, logs kept)", async () => {
    const cfg = h.config('e', LOOP('e'));
    const handle = (await h.crashedAgent({ cfg, perExecutor: 2 }))!;
    const before = await logLines('e');
    await eventually('task e logging with no agent', async () => (await logLines('e')) > before + 2);
    const got = await driver.recoverTask(handle);
    assert.equal(got.taskPid, handle.taskPid);
    const exit = driver.waitTask(cfg.id);
    await driver.stopTask(cfg.id, { timeoutMs: 1000 });
    assert.equal((await exit).signal, 'SIGTERM');
    await driver.destroyTask(cfg.id);
  });
});
