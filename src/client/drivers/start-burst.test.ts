// Many task starts at once on shared executors (a burst of allocations on
// one node): the driver, told how many starts are coming, starts the
// executors they need side by side before the first start reaches it, and
// the starts then run on those. Real processes throughout.

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
});
