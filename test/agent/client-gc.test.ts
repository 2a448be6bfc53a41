// Client garbage collection through a dev agent: a finished batch
// allocation keeps its directory and secrets tmpfs until `POST /v1/client/gc`
// (what `berth system gc` calls) collects it; a running allocation is never
// collected; a collected allocation is not run again although the server
// still lists it.

import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AllocationListStub } from '../../src/api/index.js';
import { cleanupUnder, mountsUnder, pidsWith, until } from '../support/runtime-cluster.js';
import { AgentUnderTest, tempDir } from './_agent.js';

const MARKER = `i12-gc-keep-${process.pid}`;

const job = (id: string, type: string, script: string): string => `
job "${id}" {
  type = "${type}"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "${script}"]
      }
    }
  }
}
`;

describe('client garbage collection on a dev agent', () => {
  let dir = '';
  let allocRoot = '';
  let agent: AgentUnderTest | undefined;

  before(async () => {
    dir = await tempDir('bi12g-');
    allocRoot = path.join(dir, 'data', 'client', 'alloc');
    writeFileSync(path.join(dir, 'once.hcl'), job('once', 'batch', 'echo done'));
    writeFileSync(path.join(dir, 'keep.hcl'), job('keep', 'service', `while true; do sleep 0.2; done # ${MARKER}`));
    agent = await new AgentUnderTest(['agent', '--dev', '--data-dir', path.join(dir, 'data'), '--port', '0']).ready(true);
  });

  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    cleanupUnder(dir);
  });

  const allocOf = async (jobId: string): Promise<AllocationListStub> => {
    const [a] = await agent!.get<AllocationListStub[]>(`/v1/job/${jobId}/allocations`);
    return a!;
  };

  it('collects a finished allocation on demand, never a running one, and does not run it again', async () => {
    assert.equal((await agent!.cli(['job', 'run', path.join(dir, 'keep.hcl')])).code, 0);
    assert.equal((await agent!.cli(['job', 'run', '--detach', path.join(dir, 'once.hcl')])).code, 0);
    const once = await until('the batch allocation to complete', async () => {
      const a = await allocOf('once');
      return a?.ClientStatus === 'complete' ? a : undefined;
    });
    const keep = await allocOf('keep');
    const onceDir = path.join(allocRoot, once.ID);
    await until('the finished allocation cleaned up (postrun) but kept', () => existsSync(onceDir));
    assert.ok(mountsUnder(onceDir).length > 0, 'its secrets tmpfs is still mounted before collection');

    const res = await fetch(`${agent!.addr}/v1/client/gc`, { method: 'POST', headers: { authorization: `Bearer ${agent!.token}` } });
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { collected: string[] };
    assert.deepEqual(body.collected, [once.ID]);

    assert.equal(existsSync(onceDir), false, 'its directory is gone');
    assert.deepEqual(mountsUnder(onceDir), [], 'its secrets tmpfs is unmounted');
    assert.ok(existsSync(path.join(allocRoot, keep.ID)), 'the running allocation keeps its directory');
    assert.equal(pidsWith(MARKER).length, 1, 'and its task');
    assert.equal((await allocOf('once')).ClientStatus, 'complete', 'the server still lists it as it was');

    const again = await fetch(`${agent!.addr}/v1/client/gc`, { method: 'POST', headers: { authorization: `Bearer ${agent!.token}` } });
    assert.deepEqual(((await again.json()) as { collected: string[] }).collected, [], 'safe to repeat');
    assert.equal(existsSync(onceDir), false, 'the collected allocation was not brought back');

    const denied = await fetch(`${agent!.addr}/v1/client/gc`, { method: 'POST' });
    assert.equal(denied.status, 401, 'the route needs a token');
  });
});
