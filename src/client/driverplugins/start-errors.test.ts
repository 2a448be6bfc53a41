// What a user sees when an external driver refuses to start a task: a start
// error the driver marks recoverable (Nomad's RecoverableError detail) is
// retried by the group's restart policy; any other fails the task at once,
// with the driver's reason among its events.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { parseJobSpec, type Allocation } from '../../structs/index.js';
import { AllocDir } from '../allocdir/index.js';
import { SqliteClientStateStore } from '../state/index.js';
import { TaskRunner, type RunnerDriver, type RunnerTaskConfig } from '../taskrunner/index.js';
import { PluginStartError } from './plugin-errors.js';

/** A driver whose every start fails with `recoverable`; it records the configs it was given. */
function refusingDriver(recoverable: boolean): RunnerDriver & { starts: RunnerTaskConfig[] } {
  const starts: RunnerTaskConfig[] = [];
  return {
    name: 'my-driver',
    takesDriverConfig: true,
    capabilities: { fsIsolation: 'none', networkModes: ['host'], mountConfigs: 'none' },
    starts,
    async startTask(cfg) {
      starts.push(cfg);
      throw new PluginStartError(`task ${cfg.taskName}: driver my-driver failed to start it: image "nope" not found`, recoverable);
    },
    async recoverTask() {},
    async waitTask() {
      return { exitCode: 0, signal: null };
    },
    async stopTask() {},
    async destroyTask() {},
  };
}

async function run(t: TestContext, recoverable: boolean) {
  const dir = mkdtempSync(path.join(tmpdir(), 'bse-'));
  const store = SqliteClientStateStore.open(path.join(dir, 'client.db'));
  const job = parseJobSpec({
    id: 'web',
    type: 'batch',
    groups: [{ name: 'g', restart: { attempts: 2, delay: '1ms', interval: '1h', mode: 'fail' }, tasks: [{ name: 'main', driver: 'my-driver', config: { image: 'nope' } }] }],
  });
  const alloc = { id: `a${Math.random().toString(16).slice(2, 10)}`, jobId: 'web', taskGroup: 'g', index: 0, nodeId: 'node-7' } as Allocation;
  const allocDir = new AllocDir({ root: path.join(dir, 'allocs'), allocId: alloc.id });
  await allocDir.build(['main']);
  t.after(async () => {
    store.close();
    await allocDir.destroy();
    rmSync(dir, { recursive: true, force: true });
  });
  const driver = refusingDriver(recoverable);
  const group = job.groups[0]!;
  const runner = new TaskRunner({
    alloc,
    task: group.tasks[0]!,
    jobType: job.type,
    restartPolicy: group.restart,
    driver,
    taskDir: allocDir.task('main'),
    allocDir: allocDir.dir,
    store,
    hooks: [],
    onChange: () => undefined,
    killTimeoutMs: 1000,
  });
  await runner.start();
  await runner.done;
  return { driver, state: runner.state() };
}

describe('start errors of an external driver', () => {
  it('an unrecoverable start error fails the task at once, with the driver’s reason', async (t) => {
    const { driver, state } = await run(t, false);
    assert.equal(driver.starts.length, 1, 'not retried');
    assert.equal(state.failed, true);
    assert.ok(state.events.some((e) => e.type === 'Driver Failure' && /image "nope" not found/.test(e.message)));
    assert.ok(state.events.some((e) => e.type === 'Not Restarting' && /not recoverable/.test(e.message)));
    // The task's config {} reached the driver as the job wrote it; no command was required.
    assert.deepEqual(driver.starts[0]?.driverConfig, { image: 'nope' });
  });

  it('a recoverable start error is retried by the restart policy', async (t) => {
    const { driver, state } = await run(t, true);
    assert.equal(driver.starts.length, 3, 'the first start and 2 restarts');
    assert.equal(state.failed, true);
  });
});
