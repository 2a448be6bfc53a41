// A spare shared executor (spareExecutor, as an agent's drivers keep one):
// a fingerprint starts it, the next task starts on it without a Node start
// of its own, and another spare takes its place once the executors in use
// are full or gone; a spare that never got a task goes with its agent
// (driver shutdown, or the agent killed), while one that got a task keeps
// running it across the agent's death. Real processes throughout.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { readTaskLogs } from '../logs/index.js';
import { DriverHarness, eventually, running } from '../../../test/support/client-drivers.js';
import { executorsIn } from '../../../test/support/procs.js';
import { createDrivers } from './create-drivers.js';
import { RawExecDriver } from './raw-exec-driver.js';

const LOOP = (name: string): string => `i=0; while :; do echo ${name}-$i; i=$((i+1)); sleep 0.05; done`;


/** `executorsIn(dir)` once it has settled on `count` processes. */
const settled = (dir: string, count: number): Promise<number[]> =>
  eventually(`${count} executor(s) in ${dir}`, () => {
    const found = executorsIn(dir);
    return found.length === count ? found : undefined;
  });

describe('a spare shared executor', () => {
  const h = new DriverHarness();
  after(() => h.cleanup());

  it('a fingerprint starts one; the next tasks start on it, and a new spare comes once it is full', async () => {
    const driver = new RawExecDriver({ stateDir: h.stateDir, tasksPerExecutor: 2, spareExecutor: true });
    h.drivers.push(driver);
    assert.deepEqual(executorsIn(h.stateDir), [], 'nothing runs before the driver is used');
    await driver.fingerprint();
    const [spare] = await settled(h.stateDir, 1);
    await driver.fingerprint();
    assert.deepEqual(executorsIn(h.stateDir), [spare], 'a second fingerprint keeps the one spare');

    const a = await h.start(driver, h.config('a', LOOP('a')));
    assert.equal(a.executorPid, spare, 'the first task runs on the spare');
    assert.deepEqual(executorsIn(h.stateDir), [spare], 'the spare still has room: no other executor yet');
    const b = await h.start(driver, h.config('b', LOOP('b')));
    assert.equal(b.executorPid, spare);
    const [next] = (await settled(h.stateDir, 2)).filter((pid) => pid !== spare);

    const c = await h.start(driver, h.config('c', LOOP('c')));
    assert.equal(c.executorPid, next, 'the third task runs on the spare started ahead of it');
    for (const t of ['a', 'b', 'c']) await eventually(`task ${t} logging`, async () => (await readTaskLogs({ dir: h.logDir, taskName: t, stream: 'stdout' })).includes(`${t}-2`));

    // The tasks end: their executors go, and one spare is left.
    for (const x of [a, b, c]) {
      await driver.stopTask(x.taskId, { timeoutMs: 1000, signal: 'SIGKILL' });
      await driver.destroyTask(x.taskId);
    }
    const [left] = await eventually('the used executors gone and one spare left', () => {
      const found = executorsIn(h.stateDir);
      return found.length === 1 && !found.includes(spare!) && !found.includes(next!) ? found : undefined;
    });
    await driver.shutdown();
    await eventually('the spare gone with the driver', () => !running(left!));
  });

  it("a spare goes when its agent is killed; a spare that got a task keeps running it", async () => {
    const idleDir = `${h.stateDir}-idle`;
    let spare = 0;
    await h.crashedAgent({ stateDir: idleDir, perExecutor: 2, spare: true, beforeKill: async () => ([spare] = await settled(idleDir, 1)) });
    await eventually('the unused spare gone with its agent', () => !running(spare));

    const handle = (await h.crashedAgent({ cfg: h.config('d', LOOP('d')), perExecutor: 2, spare: true }))!;
    const lines = async (): Promise<number> => (await readTaskLogs({ dir: h.logDir, taskName: 'd', stream: 'stdout' })).toString().split('\n').filter((l) => l.startsWith('d-')).length;
    const before = await lines();
    await eventually('task d logging with no agent', async () => (await lines()) > before + 2);
    assert.ok(running(handle.executorPid) && running(handle.taskPid), 'the task and the executor it started on outlive the agent');
  });

  it("an agent's raw_exec and exec share one spare: one executor before any task, and a task of each runs on it", async () => {
    const stateDir = `${h.stateDir}-both`;
    const drivers = createDrivers({ stateDir, tasksPerExecutor: 4, spareExecutor: true, cgroups: null });
    const raw = drivers.get('raw_exec')!;
    const exec = drivers.get('exec')!;
    h.drivers.push(raw, exec);
    const [rawInfo, execInfo] = [await raw.fingerprint(), await exec.fingerprint()];
    assert.ok(rawInfo.healthy && execInfo.healthy, `both drivers healthy here (raw_exec: ${rawInfo.healthReason}, exec: ${execInfo.healthReason})`);
    const [spare] = await settled(join(stateDir, 'executors'), 1);
    assert.deepEqual([...executorsIn(join(stateDir, 'raw_exec')), ...executorsIn(join(stateDir, 'exec'))], [], 'no spare of either driver of its own');

    const a = await h.start(raw, h.config('r', LOOP('r')));
    const b = await h.start(exec, h.config('e', LOOP('e')));
    assert.equal(a.executorPid, spare, 'the raw_exec task runs on the spare');
    assert.equal(b.executorPid, spare, 'the exec task runs on the same executor');
    for (const t of ['r', 'e']) await eventually(`task ${t} logging`, async () => (await readTaskLogs({ dir: h.logDir, taskName: t, stream: 'stdout' })).includes(`${t}-2`));
    for (const [d, x] of [[raw, a], [exec, b]] as const) {
      await d.stopTask(x.taskId, { timeoutMs: 1000, signal: 'SIGKILL' });
      await d.destroyTask(x.taskId);
    }
    const [left] = await eventually('the used executor gone and one spare left', () => {
      const found = executorsIn(join(stateDir, 'executors'));
      return found.length === 1 && found[0] !== spare ? found : undefined;
    });
    await raw.shutdown();
    await exec.shutdown();
    await eventually('the spare gone with the drivers', () => !running(left!));
  });
});
