// Task resources as a user meets them through `berth agent --dev`: a task that
// allocates past its `memory` is OOM-killed in its cgroup, its restart policy
// applies, and `alloc status`, the API and /v1/metrics say so; a running task's
// usage comes from its cgroup through the API and /v1/metrics; the node's drivers
// fingerprint which cgroups they use.

import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import type { Allocation } from '../../src/structs/index.js';
import { until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest } from './_agent.js';

const MARKER = `task-resources-${process.pid}`;

const JOB_HCL = `
job "hog" {
  type = "batch"
  group "g" {
    restart {
      attempts = 1
      delay    = "0s"
      mode     = "fail"
    }
    task "hog" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "x=$(head -c 200000000 /dev/zero | tr '\\\\0' a) # ${MARKER}"]
      }
      resources {
        memory = 20
      }
    }
  }
}

job "idle" {
  group "g" {
    task "idle" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "sleep 1000 & while :; do sleep 1; done # ${MARKER}"]
      }
      resources {
        memory = 32
        cores  = 1
      }
    }
  }
}
`;

describe('task resources through the dev agent', () => {
  let dir = '';
  let agent: AgentUnderTest;

  before(async () => {
    dir = await tempDir('btr-');
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'a'), '--port', '0']).ready(true);
  });

  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('fingerprints the cgroups its drivers put tasks in', async () => {
    const [node] = await agent.get<Api.NodeListStub[]>('/v1/nodes');
    assert.ok(node?.Drivers?.['exec']?.BerthCgroups && node.Drivers['exec'].BerthCgroups !== 'none', JSON.stringify(node?.Drivers));
  });

  it('an OOM-killed task: "OOM Killed" in alloc status and the API, restarted by its policy, counted in /v1/metrics', async () => {
    const [hogHcl, idleHcl] = JOB_HCL.split(/\n(?=job ")/).filter((s) => s.trim());
    const hogFile = path.join(dir, 'hog.hcl');
    writeFileSync(hogFile, hogHcl!);
    const run = await agent.cli(['job', 'run', '--detach', hogFile]);
    assert.equal(run.code, 0, run.stderr);
    const alloc = await until('the hog to fail after its restart', async () => {
      const [a] = await agent.get<Allocation[]>('/v1/job/hog/allocations');
      return a && a.clientStatus === 'failed' ? a : undefined;
    }, 60_000);
    const full = await agent.get<Allocation>(`/v1/allocation/${alloc.id}`);
    const state = full.taskStates?.['hog'];
    const ooms = state?.events.filter((e) => e.type === 'OOM Killed') ?? [];
    assert.equal(ooms.length, 2, JSON.stringify(state?.events.map((e) => e.type)));
    assert.match(ooms[0]!.message, /memory limit of 20 MB/);
    assert.equal(state?.restarts, 1);
    const status = await agent.cli(['alloc', 'status', alloc.id]);
    assert.match(status.stdout, /OOM Killed/);
    const metrics = await (await fetch(`${agent.addr}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${agent.token}` } })).text();
    assert.match(metrics, new RegExp(`^berth_client_task_oom_kills\\{alloc_id="${alloc.id}",task="hog"\\} 2$`, 'm'));

    // A running task's usage comes from its cgroup.
    const idleFile = path.join(dir, 'idle.hcl');
    writeFileSync(idleFile, idleHcl!);
    assert.equal((await agent.cli(['job', 'run', '--detach', idleFile])).code, 0);
    const idle = await until('the idle task to run', async () => {
      const [a] = await agent.get<Allocation[]>('/v1/job/idle/allocations');
      return a && a.clientStatus === 'running' ? a : undefined;
    }, 60_000);
    const stats = await until('stats with the init, the shell and both sleeps', async () => {
      const s = await agent.get<{ tasks: Record<string, { source: string; pids: number[]; memory: { usageBytes: number } }> }>(`/v1/client/allocation/${idle.id}/stats`);
      const t = s.tasks['idle'];
      return t && t.pids.length >= 4 ? t : undefined;
    }, 30_000);
    assert.equal(stats.source, 'cgroup');
    assert.ok(stats.memory.usageBytes > 0);
    const page = await (await fetch(`${agent.addr}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${agent.token}` } })).text();
    assert.match(page, new RegExp(`^berth_client_task_memory_usage_bytes\\{alloc_id="${idle.id}",task="idle"\\} [1-9]`, 'm'));
    assert.equal((await agent.cli(['job', 'stop', 'idle'])).code, 0);
  });
});
