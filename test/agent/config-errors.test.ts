// A task whose command does not exist is a configuration error, not a
// transient failure: `job run` against a real dev agent shows the reason
// and exits 1 at once, instead of "1 allocation running" while the node
// retries it under the restart policy.

import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AllocationListStub } from '../../src/api/index.js';
import { startAgent, tempDir, type AgentUnderTest } from './_agent.js';

describe('config errors on a real node', () => {
  let dir = '';
  let agent: AgentUnderTest;

  before(async () => {
    dir = await tempDir('bce-');
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'data'), '--port', '0']).ready(true);
  });
  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('job run of a task whose command does not exist fails the allocation at once with the reason, exit 1, no restarts', async () => {
    const file = path.join(dir, 'missing.hcl');
    writeFileSync(
      file,
      `job "missing" {\n  group "g" {\n    restart {\n      attempts = 10\n      delay    = "1s"\n      mode     = "delay"\n    }\n    task "t" {\n      driver = "raw_exec"\n      config {\n        command = "/nonexistent/berth-missing-program"\n      }\n    }\n  }\n}\n`,
    );
    const r = await agent.cli(['job', 'run', file], { timeoutMs: 120_000 });
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /failed: Failed tasks: t \(driver raw_exec failed to start the task: task t: command "\/nonexistent\/berth-missing-program" does not exist/);
    assert.doesNotMatch(r.stdout, /allocations? running/);
    const allocs = await agent.get<AllocationListStub[]>('/v1/job/missing/allocations');
    assert.equal(allocs[0]?.TaskStates?.['t']?.Restarts, 0, 'not retried');
  });
});
