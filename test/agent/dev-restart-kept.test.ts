// A dev agent stopped (SIGINT) and started again on its kept --data-dir
// keeps what a user saw before: its token (the web UI and a shell's
// BERTH_TOKEN stay logged in), the time each finished task finished, and a
// node whose last heartbeat stays recent.
import assert from 'node:assert/strict';
import { writeFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import { until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest } from './_agent.js';

const JOB = `job "once" {
  type = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo done"]
      }
    }
  }
}
`;

const SERVICE = `job "svc" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "sleep 600"]
      }
    }
  }
}
`;

describe('a dev agent restarted on its kept --data-dir', () => {
  let dir = '';
  let dataDir = '';
  let agent: AgentUnderTest | undefined;

  before(async () => {
    dir = await tempDir('bxk-');
    dataDir = path.join(dir, 'a');
  });
  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps its token and a finished task's Finished time; the node's last heartbeat stays recent", { timeout: 180_000 }, async () => {
    agent = await startAgent(['--dev', '--data-dir', dataDir, '--port', '0']).ready(true);
    const token = agent.token;
    writeFileSync(path.join(dir, 'once.hcl'), JOB);
    const run = await agent.cli(['job', 'run', path.join(dir, 'once.hcl')]);
    assert.equal(run.code, 0, run.stderr);
    const finished = await until('the batch task to finish', async () => {
      const [stub] = await agent!.get<Api.AllocationListStub[]>('/v1/job/once/allocations');
      const state = stub?.TaskStates?.['t'];
      return stub?.ClientStatus === 'complete' && state?.FinishedAt ? { id: stub.ID, at: state.FinishedAt } : undefined;
    });
    // A service task stopped by `job stop` before the restart.
    writeFileSync(path.join(dir, 'svc.hcl'), SERVICE);
    assert.equal((await agent.cli(['job', 'run', path.join(dir, 'svc.hcl')])).code, 0);
    await until('the service task to run', async () => (await agent!.get<Api.AllocationListStub[]>('/v1/job/svc/allocations'))[0]?.ClientStatus === 'running');
    assert.equal((await agent.cli(['job', 'stop', 'svc'])).code, 0);
    const stoppedSvc = await until('the service task to be stopped', async () => {
      const [stub] = await agent!.get<Api.AllocationListStub[]>('/v1/job/svc/allocations');
      const state = stub?.TaskStates?.['t'];
      return stub?.ClientStatus === 'complete' && state?.State === 'dead' && state.FinishedAt ? { id: stub.ID, at: state.FinishedAt } : undefined;
    });
    const stopped = await agent.stop('SIGINT');
    assert.equal(stopped.code, 0, stopped.stderr);

    agent = await startAgent(['--dev', '--data-dir', dataDir, '--port', '0']).ready(true);
    assert.equal(agent.token, token, 'the same token after the restart');
    const [node] = await until('the node to be ready again', async () => {
      const nodes = await agent!.get<Api.NodeListStub[]>('/v1/nodes');
      return nodes.length === 1 && nodes[0]?.Status === 'ready' ? nodes : undefined;
    });
    // The restarted client reports the allocation again; its Finished time is the one from before.
    const alloc = await until('the allocation to be reported by the restarted client', async () => {
      const a = await agent!.get<Api.Allocation>(`/v1/allocation/${finished.id}`);
      return a.ModifyTime > 0 && a.TaskStates?.['t']?.Events?.length ? a : undefined;
    });
    // Wait past the first report after the restart: the runner's restore is what changed it.
    await until('the node to have heartbeat since the restart', async () => {
      const n = await agent!.get<Api.Node>(`/v1/node/${node!.ID}`);
      return Date.parse(n.BerthLastHeartbeat ?? '') > Date.now() - 5_000;
    });
    const again = await agent.get<Api.Allocation>(`/v1/allocation/${finished.id}`);
    assert.equal(again.TaskStates?.['t']?.FinishedAt, finished.at, `Finished time kept (was ${finished.at}, alloc ${alloc.ID})`);
    const svc = await agent.get<Api.Allocation>(`/v1/allocation/${stoppedSvc.id}`);
    assert.equal(svc.TaskStates?.['t']?.FinishedAt, stoppedSvc.at, 'the stopped service task keeps its Finished time');
    const status = await agent.cli(['alloc', 'status', finished.id]);
    assert.doesNotMatch(status.stdout, /Finished.*(\d+s|now) ago/, status.stdout);
  });
});
