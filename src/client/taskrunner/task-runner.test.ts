// The task runner with real processes (a small in-test driver), a real
// SQLite client state and a manual clock for restart delays.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { ManualClock, systemClock, type Clock } from '../../lib/index.js';
import { parseJobSpec, type Allocation, type JobSpecInput, type TaskState } from '../../structs/index.js';
import { AllocDir } from '../allocdir/index.js';
import { SqliteClientStateStore, type ClientStateStore } from '../state/index.js';
import { CgroupV1 } from '../cgroups/index.js';
import { RawExecDriver } from '../drivers/index.js';
import type { RunnerDriver } from './driver-port.js';
import { ProcessDriver } from '../../../test/support/process-driver.js';
import { TASK_RUNNERS_BUCKET, TaskRunner, type TaskHook, type TaskRunnerRecord } from './task-runner.js';
import { eventually, nextTurn } from '../../../test/support/eventually.js';

interface Setup {
  dir: string;
  store: ClientStateStore;
  allocDir: AllocDir;
  alloc: Allocation;
  driver: ProcessDriver;
  changes: TaskState[];
  make: (opts?: { driver?: RunnerDriver; clock?: Clock; hooks?: TaskHook[]; store?: ClientStateStore }) => TaskRunner;
}

async function setup(
  t: TestContext,
  command: string[],
  group: Partial<JobSpecInput['groups'][number]> = {},
  type: 'service' | 'batch' = 'service',
  task: Record<string, unknown> = {},
): Promise<Setup> {
  const dir = mkdtempSync(path.join(tmpdir(), 'btr-'));
  const store = SqliteClientStateStore.open(path.join(dir, 'client.db'));
  const job = parseJobSpec({
    id: 'web',
    type,
    groups: [{ name: 'g', ...group, tasks: [{ name: 'main', driver: 'raw_exec', config: { command: command[0], args: command.slice(1) }, ...task }] }],
  });
  const alloc = { id: `a${Math.random().toString(16).slice(2, 10)}`, jobId: 'web', taskGroup: 'g', index: 0, nodeId: 'node-7' } as Allocation;
  const allocDir = new AllocDir({ root: path.join(dir, 'allocs'), allocId: alloc.id });
  await allocDir.build(['main']);
  const driver = new ProcessDriver();
  const changes: TaskState[] = [];
  const group0 = job.groups[0]!;
  t.after(async () => {
    driver.killAll();
    store.close();
    await allocDir.destroy();
    rmSync(dir, { recursive: true, force: true });
  });
  const make: Setup['make'] = (o = {}) =>
    new TaskRunner({
      alloc,
      task: group0.tasks[0]!,
      jobType: job.type,
      restartPolicy: group0.restart,
      driver: o.driver ?? driver,
      taskDir: allocDir.task('main'),
      allocDir: allocDir.dir,
      store: o.store ?? store,
      hooks: o.hooks ?? [],
      onChange: (_n, s) => changes.push(structuredClone(s)),
      killTimeoutMs: 2_000,
      clock: o.clock ?? systemClock,
    });
  return { dir, store, allocDir, alloc, driver, changes, make };
}

const types = (s: TaskState): string[] => s.events.map((e) => e.type);

describe('TaskRunner', () => {
  it('a task OOM-killed in its cgroup gets an "OOM Killed" event with its limit, and its restart policy applies', async (t) => {
    const s = await setup(
      t,
      ['sh', '-c', 'x=$(head -c 200000000 /dev/zero | tr "\\0" a)'],
      { restart: { attempts: 1, interval: '10m', delay: '0s', mode: 'fail' } },
      'service',
      { resources: { cpuMhz: 100, memoryMb: 20 } },
    );
    const cgroups = new CgroupV1({ parent: `berth-test-${path.basename(s.dir)}` });
    const driver = new RawExecDriver({ stateDir: path.join(s.dir, 'd'), cgroups });
    t.after(async () => {
      await driver.shutdown();
      for (const g of cgroups.list()) await cgroups.remove(g).catch(() => undefined);
      cgroups.prune();
    });
    const tr = s.make({ driver });
    await tr.start();
    await tr.done;
    const st = tr.state();
    const ooms = st.events.filter((e) => e.type === 'OOM Killed');
    assert.equal(ooms.length, 2, types(st).join(', '));
    assert.match(ooms[0]!.message, /memory limit of 20 MB/);
    assert.equal(ooms[0]!.details['memoryLimitMb'], '20');
    assert.equal(st.restarts, 1, 'restarted once by its policy');
    assert.equal(st.failed, true);
  });

  it('restarts a failing task by its policy with the delay on the clock, then fails it with a readable trail', async (t) => {
    const s = await setup(t, ['sh', '-c', 'exit 3'], { restart: { attempts: 2, interval: '10m', delay: '15s', mode: 'fail' } });
    const clock = new ManualClock(1_000_000);
    const tr = s.make({ clock });
    await tr.start();
    for (let i = 0; i < 2; i++) {
      await eventually('the runner waits out the restart delay', () => clock.pending > 0);
      assert.equal(tr.state().state, 'pending');
      await clock.advance(15_000);
    }
    await tr.done;
    const st = tr.state();
    assert.equal(st.state, 'dead');
    assert.equal(st.failed, true);
    assert.equal(st.restarts, 2);
    assert.deepEqual(types(st), [
      'Received',
      'Setting Up', 'Started', 'Terminated', 'Restarting',
      'Setting Up', 'Started', 'Terminated', 'Restarting',
      'Setting Up', 'Started', 'Terminated', 'Not Restarting',
    ]);
    const term = st.events.find((e) => e.type === 'Terminated')!;
    assert.equal(term.message, 'Task exited: exit code 3');
    assert.equal(term.details['exitCode'], '3');
    assert.match(st.events.at(-1)!.message, /exceeded the 2 restarts allowed within 10m/);
    assert.equal(s.driver.started.length, 3);
    // What was reported is what was written down.
    const saved = s.store.bucket<TaskRunnerRecord>(TASK_RUNNERS_BUCKET).get(`${s.alloc.id}/main`)!;
    assert.deepEqual(saved.state, st);
    assert.deepEqual(s.changes.at(-1), st);
  });

  it('a batch task that exits 0 is dead and not failed, without a restart', async (t) => {
    const s = await setup(t, ['sh', '-c', 'echo hi > "$BERTH_TASK_DIR/out"'], {}, 'batch');
    const tr = s.make();
    await tr.start();
    await tr.done;
    assert.equal(tr.state().failed, false);
    assert.equal(tr.state().restarts, 0);
    assert.deepEqual(types(tr.state()), ['Received', 'Setting Up', 'Started', 'Terminated']);
    const cfg = s.driver.started[0]!;
    assert.equal(cfg.env['BERTH_TASK_DIR'], s.allocDir.task('main').localDir);
    assert.equal(cfg.env['BERTH_ALLOC_ID'], s.alloc.id);
    assert.equal(cfg.env['BERTH_NODE_ID'], 'node-7');
  });

  it('kill stops a running task (signal, not restarted, not failed) and runs the stop hooks', async (t) => {
    const s = await setup(t, ['sleep', '600']);
    const calls: string[] = [];
    const hook: TaskHook = {
      name: 'recorder',
      prestart: async (req) => {
        calls.push('prestart');
        req.env['FROM_HOOK'] = 'yes';
      },
      poststart: async () => void calls.push('poststart'),
      exited: async () => void calls.push('exited'),
      stop: async () => void calls.push('stop'),
    };
    const tr = s.make({ hooks: [hook] });
    await tr.start();
    assert.equal(tr.state().state, 'running');
    assert.equal(s.driver.started[0]!.env['FROM_HOOK'], 'yes');
    await tr.kill('allocation stopped');
    const st = tr.state();
    assert.equal(st.state, 'dead');
    assert.equal(st.failed, false);
    assert.deepEqual(types(st).slice(-2), ['Killing', 'Killed']);
    assert.match(st.events.at(-1)!.message, /allocation stopped.*signal SIGTERM/);
    assert.deepEqual(calls, ['prestart', 'poststart', 'exited', 'stop']);
    await tr.kill('again'); // safe twice
  });

  it('restart() restarts the task at once without counting against the policy', async (t) => {
    const s = await setup(t, ['sleep', '600'], { restart: { attempts: 0, interval: '1m', delay: '1h', mode: 'fail' } });
    const tr = s.make();
    await tr.start();
    const first = s.driver.pid(tr.taskId!);
    await tr.restart('plugin unhealthy');
    await eventually('the task runs again', () => s.driver.started.length === 2 && tr.state().state === 'running');
    assert.notEqual(s.driver.pid(tr.taskId!), first);
    assert.equal(tr.state().restarts, 1);
    assert.ok(types(tr.state()).includes('Restart Signaled'));
    await tr.kill('done');
  });

  it('a task that had finished keeps its Finished time when it is killed after an agent restart (its allocation stopped then)', async (t) => {
    const s = await setup(t, ['true'], {}, 'batch');
    const clock = new ManualClock(1_000_000);
    const tr = s.make({ clock });
    await tr.start();
    await tr.done;
    const finishedAt = tr.state().finishedAt;
    assert.equal(tr.state().state, 'dead');
    await clock.advance(60_000); // the agent restarts a minute later
    const again = s.make({ clock });
    assert.equal(await again.restore(), 'dead');
    await again.kill('the allocation was stopped');
    assert.equal(again.state().finishedAt, finishedAt, 'the real Finished time, not the restart time');
  });

  it('after an agent restart, reattaches to the running task (same pid, no new start); a lost one waits for resume()', async (t) => {
    const s = await setup(t, ['sleep', '600'], { restart: { attempts: 1, interval: '1m', delay: '0s', mode: 'fail' } });
    const tr = s.make();
    await tr.start();
    const pid = s.driver.pid(tr.taskId!);
    tr.detach(); // the agent stops and leaves the task running
    await tr.done;

    const driver2 = new ProcessDriver();
    t.after(() => driver2.killAll());
    const again = s.make({ driver: driver2 });
    assert.equal(await again.restore(), 'running');
    assert.equal(driver2.started.length, 0);
    assert.equal(driver2.pid(again.taskId!), pid);
    assert.equal(again.state().events.at(-1)!.type, 'Reattached');
    again.detach();

    process.kill(pid, 'SIGKILL'); // dies while the agent is down
    await eventually('the process is gone', () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
    const driver3 = new ProcessDriver();
    t.after(() => driver3.killAll());
    const third = s.make({ driver: driver3 });
    assert.equal(await third.restore(), 'lost');
    // The window closes at once: the lost task's run loop parks on resume() before its first
    // step, and without that gate the step (recording the exit) would run within this turn.
    await nextTurn();
    assert.equal(third.state().events.at(-1)!.type, 'Task Lost', 'the lost exit is not acted on before resume()');
    assert.equal(driver3.started.length, 0, 'nothing is started before resume()');
    third.resume();
    await eventually('the lost task is restarted by its policy', () => driver3.started.length === 1 && third.state().state === 'running');
    assert.ok(types(third.state()).includes('Task Lost'));
    await third.kill('done');
  });

  it('a start the driver refuses is a Driver Failure counted by the restart policy', async (t) => {
    const s = await setup(t, ['/nonexistent/binary'], { restart: { attempts: 0, interval: '1m', delay: '1s', mode: 'fail' } });
    const tr = s.make();
    await tr.start();
    await tr.done;
    const st = tr.state();
    assert.equal(st.failed, true);
    assert.deepEqual(types(st), ['Received', 'Setting Up', 'Driver Failure', 'Not Restarting']);
  });
});

describe('TaskRunner with a config error', () => {
  it('a command that does not exist fails the task at once with the reason, without the restart policy', async (t) => {
    const s = await setup(t, ['/nonexistent/berth-no-such-program', '--flag'], { restart: { attempts: 5, delay: '1s', mode: 'delay' } });
    const driver = new RawExecDriver({ stateDir: path.join(s.dir, 'd') });
    t.after(() => driver.shutdown());
    const tr = s.make({ driver, clock: new ManualClock(1_000) });
    await tr.start();
    await tr.done;
    const st = tr.state();
    assert.equal(st.state, 'dead');
    assert.equal(st.failed, true);
    assert.equal(st.restarts, 0, 'not retried');
    assert.ok(!types(st).includes('Restarting'), types(st).join(','));
    const last = st.events.at(-1)!;
    assert.equal(last.type, 'Not Restarting');
    assert.match(last.message, /command "\/nonexistent\/berth-no-such-program" does not exist or is not an executable file \(not recoverable: a configuration error a retry cannot fix\)/);
  });

  it('a bare command name not on PATH is a config error too; one on PATH runs', async (t) => {
    const s = await setup(t, ['berth-no-such-program-either']);
    const driver = new RawExecDriver({ stateDir: path.join(s.dir, 'd') });
    t.after(() => driver.shutdown());
    const tr = s.make({ driver, clock: new ManualClock(1_000) });
    await tr.start();
    await tr.done;
    assert.match(tr.state().events.at(-1)!.message, /command "berth-no-such-program-either" was not found on the task's PATH/);
    const ok = await setup(t, ['true'], {}, 'batch');
    const tr2 = ok.make({ driver });
    await tr2.start();
    await tr2.done;
    assert.equal(tr2.state().failed, false);
  });
});
