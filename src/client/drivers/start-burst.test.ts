// Many task starts at once on shared executors (a burst of allocations on
// one node): the driver, told how many starts are coming, starts the
// executors they need side by side before the first start reaches it, and
// the starts then run on those; starts that come one after another spread
// over those executors (the least loaded first) rather than filling one.
// Real processes throughout.

import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { DriverHarness, eventually } from '../../../test/support/client-drivers.js';
import { executorsIn } from '../../../test/support/procs.js';
import { RawExecDriver } from './raw-exec-driver.js';


describe('a burst of task starts on shared executors', () => {
  const h = new DriverHarness();
  after(() => h.cleanup());

  it('told of 10 coming starts, a driver of 4 tasks an executor starts 3 executors before any start, and the 10 tasks run on them', async () => {
    const stateDir = `${h.stateDir}-expect`;
    const driver = new RawExecDriver({ stateDir, tasksPerExecutor: 4 });
    h.drivers.push(driver);
    driver.expectStarts(10);
    const started = await eventually('3 executors up', () => {
      const found = executorsIn(stateDir);
      return found.length === 3 ? found : undefined;
    });
    const handles = await Promise.all(Array.from({ length: 10 }, (_, i) => h.start(driver, h.config(`x${i}`, 'sleep 60'))));
    assert.deepEqual([...new Set(handles.map((x) => x.executorPid))].sort((a, b) => a - b), started, 'every task on one of the executors started ahead, and no other');
    assert.deepEqual(executorsIn(stateDir), started, 'the starts found room: no executor started for them');
  });

  it('starts that come one at a time go to the least-loaded executor: 3 starts on 3 executors started ahead, then a fourth beside one of them', async () => {
    const stateDir = `${h.stateDir}-spread`;
    const driver = new RawExecDriver({ stateDir, tasksPerExecutor: 4 });
    h.drivers.push(driver);
    driver.expectStarts(12);
    const started = await eventually('3 executors up', () => {
      const found = executorsIn(stateDir);
      return found.length === 3 ? found : undefined;
    });
    const pids: number[] = [];
    for (let i = 0; i < 4; i++) pids.push((await h.start(driver, h.config(`s${i}`, 'sleep 60'))).executorPid);
    assert.deepEqual([...new Set(pids.slice(0, 3))].sort((a, b) => a - b), started, 'the first three each on an executor of their own');
    assert.ok(started.includes(pids[3]!), 'the fourth on one of them');
  });
});
