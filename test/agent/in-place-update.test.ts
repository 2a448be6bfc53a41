// In-place resource updates as a user meets them through `berth agent --dev`:
// a job resubmitted with only a larger `memory` keeps its allocation and its
// running task (same allocation ID, same processes), the task's cgroup takes
// the new limit, `job run` says the allocation was updated in place, and
// `alloc status` shows the "Resources Updated" event and the task's usage.

import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AllocResourceUsage, Allocation, AllocationListStub } from '../../src/api/index.js';
import { processes } from '../support/procs.js';
import { pidsWith, until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest } from './_agent.js';

const MARKER = `in-place-${process.pid}`;

const jobHcl = (memory: number): string => `
job "resize" {
  group "g" {
    task "sleeper" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "sleep 100000 # ${MARKER}"]
      }
      resources {
        memory = ${memory}
      }
    }
  }
}
`;

/** The task's processes on the host: its shell (its command line names MARKER) and the shell's children. */
function taskPids(): number[] {
  const shells = pidsWith(MARKER);
  const children = processes()
    .filter((p) => shells.includes(p.ppid))
    .map((p) => p.pid);
  return [...shells, ...children].sort((a, b) => a - b);
}

/** The v1 memory cgroup directory of a host pid (from /proc/<pid>/cgroup). */
function memoryCgroupOf(pid: number): string {
  const line = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  assert.ok(line, `pid ${pid} has no v1 memory cgroup`);
  return path.join('/sys/fs/cgroup/memory', line.slice(line.lastIndexOf(':') + 1));
}

const MiB = 1024 * 1024;

describe('in-place resource updates through the dev agent', () => {
  let dir = '';
  let agent: AgentUnderTest;

  before(async () => {
    dir = await tempDir('bip-');
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'a'), '--port', '0']).ready(true);
  });

  after(async () => {
    await agent?.cli(['job', 'stop', '--purge', 'resize']).catch(() => undefined);
    await agent?.stop('SIGINT').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('memory 64 -> 96: same allocation, same processes, the cgroup limit follows, alloc status shows the event and usage', async () => {
    const file = path.join(dir, 'resize.hcl');
    writeFileSync(file, jobHcl(64));
    const first = await agent.cli(['job', 'run', file]);
    assert.equal(first.code, 0, first.stderr + first.stdout);
    const [alloc] = await agent.get<AllocationListStub[]>('/v1/job/resize/allocations');
    assert.ok(alloc);
    const before = await until('the sleeper and its shell running', () => {
      const pids = taskPids();
      return pids.length >= 2 ? pids : undefined;
    }, 30_000);
    const usage = await until('the sleeper in the stats', async () => (await agent.get<AllocResourceUsage>(`/v1/client/allocation/${alloc.ID}/stats`)).Tasks?.['sleeper']?.ResourceUsage ?? undefined, 30_000);
    assert.deepEqual(usage.MemoryStats?.Measured, ['RSS', 'Cache', 'Usage', 'Max Usage'], "measured from the task's cgroup");
    const cgroup = memoryCgroupOf(before[before.length - 1]!);
    assert.equal(Number(readFileSync(path.join(cgroup, 'memory.limit_in_bytes'), 'utf8')), 64 * MiB);

    writeFileSync(file, jobHcl(96));
    const second = await agent.cli(['job', 'run', file]);
    assert.equal(second.code, 0, second.stderr + second.stdout);
    assert.match(second.stdout, new RegExp(`Allocation "${alloc.ID.slice(0, 8)}" updated in place`));
    assert.match(second.stdout, /1 allocation updated in place/);

    const allocs = await agent.get<AllocationListStub[]>('/v1/job/resize/allocations');
    const full = await Promise.all(allocs.map((a) => agent.get<Allocation>(`/v1/allocation/${a.ID}`)));
    assert.deepEqual(
      full.map((a) => [a.ID, a.DesiredStatus, a.Job?.Version, a.AllocatedResources?.Tasks?.['sleeper']?.Memory.MemoryMB]),
      [[alloc.ID, 'run', 1, 96]],
    );
    await until('the cgroup to hold the new limit', () => Number(readFileSync(path.join(cgroup, 'memory.limit_in_bytes'), 'utf8')) === 96 * MiB || undefined, 30_000);
    assert.deepEqual(taskPids(), before, 'the task kept running: same processes');

    const events = await until('the Resources Updated event', async () => {
      const a = await agent.get<Allocation>(`/v1/allocation/${alloc.ID}`);
      const e = a.TaskStates?.['sleeper']?.Events?.find((ev) => ev.Type === 'Resources Updated');
      return e ? a.TaskStates!['sleeper']!.Events! : undefined;
    }, 30_000);
    assert.match(events.find((e) => e.Type === 'Resources Updated')!.DisplayMessage, /in place: memory 96 MB/);
    assert.equal(events.filter((e) => e.Type === 'Started').length, 1, 'started once, never restarted');

    const status = await agent.cli(['alloc', 'status', alloc.ID]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /Resources Updated/);
    assert.match(status.stdout, /^Resource usage$/m);
    assert.match(status.stdout, /^Memory \(RSS\)\s+Cache\s+Max Usage\s+CPU\s+Throttled Periods\s+Measured$/m);
    assert.match(status.stdout, /MiB\s+.*\s+RSS, Cache, Usage, Max Usage$/m);
    // --json: Nomad's Allocation, at the new size, with the event.
    const json = JSON.parse((await agent.cli(['alloc', 'status', alloc.ID, '--json'])).stdout) as Allocation;
    assert.equal(json.ID, alloc.ID);
    assert.equal(json.AllocatedResources?.Tasks?.['sleeper']?.Memory.MemoryMB, 96);
    assert.ok(json.TaskStates?.['sleeper']?.Events?.some((e) => e.Type === 'Resources Updated'), JSON.stringify(json.TaskStates));
  });
});
