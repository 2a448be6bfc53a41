// kill -9 on the node, as an operator sees it: a dev agent SIGKILLed the
// instant its task started (before the driver handed back the task's handle)
// comes back with that task adopted, and `job stop` then stops it; a task's
// executor SIGKILLed while the task runs is noticed at once, the task is
// killed with it and started again by the restart policy, so that every
// running allocation has exactly one executor. Real agent, real processes.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AllocationListStub } from '../../src/api/index.js';
import { executorsUnder } from '../support/procs.js';
import { cleanupUnder, pidsWith, until } from '../support/runtime-cluster.js';
import { AgentUnderTest, tempDir } from './_agent.js';

const MARKER = `i12-adopt-${process.pid}`;

const JOB = `
job "adopt" {
  group "g" {
    restart {
      attempts = 3
      delay    = "100ms"
      interval = "1m"
      mode     = "fail"
    }
    task "worker" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do sleep 0.1; done # ${MARKER}"]
      }
    }
  }
}
`;

/**
 * The executors under `dir` that run a task (test/support/procs.ts): the
 * agent's spare executors, started ahead of need, run none.
 */
function runningExecutors(dir: string): number[] {
  return executorsUnder(dir, { running: true }).map((p) => p.pid);
}

function devAgent(dataDir: string, env: Record<string, string> = {}): AgentUnderTest {
  return new AgentUnderTest(['agent', '--dev', '--data-dir', dataDir, '--port', '0'], { env });
}

describe('a node agent under kill -9', () => {
  let dir = '';
  let dataDir = '';
  let agent: AgentUnderTest | undefined;

  before(async () => {
    dir = await tempDir('bi12a-');
    dataDir = path.join(dir, 'data');
    writeFileSync(path.join(dir, 'adopt.hcl'), JOB);
  });

  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    for (const pid of pidsWith(MARKER)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    cleanupUnder(dir);
  });

  const alloc = async (): Promise<AllocationListStub | undefined> => {
    const list = await agent!.get<AllocationListStub[]>('/v1/job/adopt/allocations').catch(() => []);
    return list.find((a) => a.DesiredStatus === 'run');
  };

  it('an agent SIGKILLed right after its task was spawned adopts that task when it comes back', async () => {
    agent = await devAgent(dataDir, { BERTH_TEST_KILL_AFTER_TASK_START: 'worker' }).ready(true);
    const run = await agent.cli(['job', 'run', '--detach', path.join(dir, 'adopt.hcl')]);
    assert.equal(run.code, 0, run.stderr);
    const killed = await agent.exited;
    assert.equal(killed.signal, 'SIGKILL', 'the agent killed itself at the injected instant');
    const orphan = pidsWith(MARKER);
    assert.equal(orphan.length, 1, 'the task runs without its agent');

    agent = await devAgent(dataDir).ready(true);
    const adopted = await until('the allocation to run its adopted task', async () => {
      const a = await alloc();
      return a?.ClientStatus === 'running' && a.TaskStates?.['worker']?.State === 'running' ? a : undefined;
    });
    assert.deepEqual(pidsWith(MARKER), orphan, 'the same process, adopted rather than started again');
    assert.equal(runningExecutors(dataDir).length, 1, 'one executor for the one running task');
    assert.ok(
      adopted.TaskStates?.['worker']?.Events?.some((e) => /Reattached/.test(e.DisplayMessage)),
      'the task events say it was reattached',
    );
  });

  it("a task's executor SIGKILLed is noticed: the task is killed with it and restarted, one executor per running task", async () => {
    const [executor] = runningExecutors(dataDir);
    const [before] = pidsWith(MARKER);
    assert.ok(executor && before);
    process.kill(executor, 'SIGKILL');
    await until('the task to be restarted under a new executor', async () => {
      const a = await alloc();
      const [now] = pidsWith(MARKER);
      return a?.ClientStatus === 'running' && a.TaskStates?.['worker']?.State === 'running' && now !== undefined && now !== before;
    });
    assert.equal(pidsWith(MARKER).length, 1, 'the old task process is gone; one runs');
    assert.ok(!pidsWith(MARKER).includes(before), 'the orphaned process was killed');
    const executors = runningExecutors(dataDir);
    assert.equal(executors.length, 1, 'one executor for the one running allocation');
    assert.ok(!executors.includes(executor));
    const a = await alloc();
    assert.ok(
      a!.TaskStates!['worker']!.Events!.some((e) => /executor was lost/.test(e.DisplayMessage)),
      `the task events tell why it restarted: ${JSON.stringify(a!.TaskStates!['worker']!.Events!.map((e) => e.DisplayMessage))}`,
    );
  });

  it('job stop then stops the adopted task and its executor', async () => {
    const stop = await agent!.cli(['job', 'stop', 'adopt']);
    assert.equal(stop.code, 0, stop.stderr);
    await until('the task and its executor to be gone', () => pidsWith(MARKER).length === 0 && runningExecutors(dataDir).length === 0);
  });
});
