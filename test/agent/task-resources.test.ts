// Task resources as a user meets them through `berth agent --dev`: a task that
// allocates past its `memory` is OOM-killed in its cgroup, its restart policy
// applies, and `alloc status`, the API and /v1/metrics say so; a running task's
// usage comes from its cgroup through the API and /v1/metrics; the node's drivers
// fingerprint which cgroups they use.

import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import { parentOf } from '../support/procs.js';
import { pidsWith, until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest } from './_agent.js';

const MARKER = `task-resources-${process.pid}`;

/** The processes in the cgroup of process `pid` (its memory controller's group, or its cgroup v2 group). */
function cgroupProcs(pid: number): number[] {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
  const v1 = lines.map((l) => /^\d+:([^:]*):(.*)$/.exec(l)).find((m) => m?.[1]?.split(',').includes('memory'));
  const v2 = lines.map((l) => /^0::(.*)$/.exec(l)).find((m) => m);
  const dir = v1 ? path.join('/sys/fs/cgroup/memory', v1[2]!) : path.join(existsSync('/sys/fs/cgroup/cgroup.controllers') ? '/sys/fs/cgroup' : '/sys/fs/cgroup/unified', v2?.[1] ?? '/');
  return readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
}

/** Whether `pid` is `root` or one of its descendants. */
function under(pid: number, root: number): boolean {
  for (let p = pid; p > 1; p = parentOf(p)) if (p === root) return true;
  return false;
}

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
      const [a] = await agent.get<Api.AllocationListStub[]>('/v1/job/hog/allocations');
      return a && a.ClientStatus === 'failed' ? a : undefined;
    }, 60_000);
    const full = await agent.get<Api.Allocation>(`/v1/allocation/${alloc.ID}`);
    const state = full.TaskStates?.['hog'];
    const ooms = state?.Events?.filter((e) => e.Type === 'OOM Killed') ?? [];
    assert.equal(ooms.length, 2, JSON.stringify(state?.Events?.map((e) => e.Type)));
    assert.match(ooms[0]!.Message, /memory limit of 20 MB/);
    assert.equal(state?.Restarts, 1);
    const status = await agent.cli(['alloc', 'status', alloc.ID]);
    assert.match(status.stdout, /OOM Killed/);
    const metrics = await (await fetch(`${agent.addr}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${agent.token}` } })).text();
    assert.match(metrics, new RegExp(`^berth_client_task_oom_kills\\{alloc_id="${alloc.ID}",task="hog"\\} 2$`, 'm'));

    // A running task's usage comes from its cgroup.
    const idleFile = path.join(dir, 'idle.hcl');
    writeFileSync(idleFile, idleHcl!);
    assert.equal((await agent.cli(['job', 'run', '--detach', idleFile])).code, 0);
    const idle = await until('the idle task to run', async () => {
      const [a] = await agent.get<Api.AllocationListStub[]>('/v1/job/idle/allocations');
      return a && a.ClientStatus === 'running' ? a : undefined;
    }, 60_000);
    // Nomad's stats carry no process list (Pids is null): the task's cgroup itself is read for its processes.
    await until('the task\'s cgroup to hold the init, the shell and both sleeps', () => {
      const [shell] = pidsWith(`while :; do sleep 1; done # ${MARKER}`);
      if (shell === undefined) return false;
      // The task's own group: its init (the shell's parent) and what runs under it, nothing else.
      const procs = cgroupProcs(shell);
      const init = parentOf(shell);
      assert.ok(procs.every((p) => under(p, init) || !existsSync(`/proc/${p}`)), `the task's cgroup holds only the task's processes: ${procs.join(',')}`);
      return procs.length >= 4;
    }, 30_000);
    const stats = await until('stats of the idle task', async () => {
      const s = await agent.get<Api.AllocResourceUsage>(`/v1/client/allocation/${idle.ID}/stats`);
      return s.Tasks?.['idle']?.ResourceUsage ?? undefined;
    }, 30_000);
    // Measured names what the node read: the cache and the peak come from a cgroup only (from /proc: RSS alone).
    assert.deepEqual(stats.MemoryStats?.Measured, ['RSS', 'Cache', 'Usage', 'Max Usage'], JSON.stringify(stats));
    assert.ok((stats.MemoryStats?.Usage ?? 0) > 0);
    const page = await (await fetch(`${agent.addr}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${agent.token}` } })).text();
    assert.match(page, new RegExp(`^berth_client_task_memory_usage_bytes\\{alloc_id="${idle.ID}",task="idle"\\} [1-9]`, 'm'));
    assert.equal((await agent.cli(['job', 'stop', 'idle'])).code, 0);
  });
});
