// Lifecycle order across an agent restart, with R1's raw_exec driver (real
// executor processes that outlive the agent) and a real SQLite state.

import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { eventually, makeAlloc, makeJob, Node } from '../../../test/support/client-allocrunner.js';

describe('TaskLifecycle', () => {
  it('runs the poststop task once the main task ends, even when the agent restarted in between', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const job = makeJob({
      id: 'lc',
      type: 'batch',
      groups: [
        {
          name: 'g',
          tasks: [
            {
              name: 'main',
              driver: 'raw_exec',
              config: { command: '/bin/sh', args: ['-c', 'while [ ! -e "${NOMAD_ALLOC_DIR}/go" ]; do sleep 0.1; done; echo main >> "${NOMAD_ALLOC_DIR}/order"'] },
            },
            {
              name: 'cleanup',
              driver: 'raw_exec',
              lifecycle: { hook: 'poststop' },
              config: { command: '/bin/sh', args: ['-c', 'echo cleanup >> "${NOMAD_ALLOC_DIR}/order"'] },
            },
          ],
        },
      ],
    });
    const alloc = makeAlloc(job);
    const first = node.runner(alloc, job);
    await first.run();
    assert.equal(first.status().taskStates['main']?.state, 'running');
    assert.equal(first.status().taskStates['cleanup']?.state, 'pending');
    const shared = first.allocDir.sharedDir;

    await node.stopAgent();
    await node.startAgentAgain();
    const second = node.runner(alloc, job);
    await second.restore();
    second.update(alloc);
    assert.equal(existsSync(path.join(shared, 'order')), false, 'the poststop task did not run while main still runs');
    writeFileSync(path.join(shared, 'go'), '');
    await eventually('the allocation completes', () => second.status().clientStatus === 'complete', 60_000);
    assert.deepEqual(readFileSync(path.join(shared, 'order'), 'utf8').trim().split('\n'), ['main', 'cleanup']);
  });

  it('a stop of the allocation kills the leader task before its siblings', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    // Each task notes its SIGTERM, the leader after a pause: killed together, the follower would note first.
    const noting = (name: string, pause = 0): string => `trap 'sleep ${pause}; echo ${name} >> "\${NOMAD_ALLOC_DIR}/order"; exit 0' TERM; while :; do sleep 0.1; done`;
    const job = makeJob({
      id: 'lead',
      type: 'service',
      groups: [
        {
          name: 'g',
          tasks: [
            { name: 'follower', driver: 'raw_exec', config: { command: '/bin/sh', args: ['-c', noting('follower')] } },
            { name: 'leader', driver: 'raw_exec', leader: true, config: { command: '/bin/sh', args: ['-c', noting('leader', 0.5)] } },
          ],
        },
      ],
    });
    const alloc = makeAlloc(job);
    const runner = node.runner(alloc, job);
    await runner.run();
    const shared = runner.allocDir.sharedDir;
    await eventually('both tasks run', () => runner.status().taskStates['leader']?.state === 'running' && runner.status().taskStates['follower']?.state === 'running', 30_000);
    runner.update({ ...alloc, desiredStatus: 'stop' });
    await eventually('both tasks stopped', () => existsSync(path.join(shared, 'order')) && readFileSync(path.join(shared, 'order'), 'utf8').trim().split('\n').length === 2, 60_000);
    assert.deepEqual(readFileSync(path.join(shared, 'order'), 'utf8').trim().split('\n'), ['leader', 'follower']);
  });
});
