// In-place resource updates as a user meets them through `berth agent --dev`:
// a job resubmitted with only a larger `memory` keeps its allocation and its
// running task (same allocation ID, same processes), the task's cgroup takes
// the new limit, `job run` says the allocation was updated in place, and
// `alloc status` shows the "Resources Updated" event and the task's usage.

import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Allocation } from '../../src/structs/index.js';
import { until } from '../support/runtime-cluster.js';
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

interface Stats {
  tasks: Record<string, { source: string; pids: number[] }>;
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
    const [alloc] = await agent.get<Allocation[]>('/v1/job/resize/allocations');
    assert.ok(alloc);
    const before = await until('the sleeper and its shell in the stats', async () => {
      const t = (await agent.get<Stats>(`/v1/client/allocation/${alloc.id}/stats`)).tasks['sleeper'];
      return t && t.pids.length >= 2 ? t : undefined;
    }, 30_000);
    assert.equal(before.source, 'cgroup');
    const cgroup = memoryCgroupOf(before.pids[before.pids.length - 1]!);
    assert.equal(Number(readFileSync(path.join(cgroup, 'memory.limit_in_bytes'), 'utf8')), 64 * MiB);

    writeFileSync(file, jobHcl(96));
    const second = await agent.cli(['job', 'run', file]);
    assert.equal(second.code, 0, second.stderr + second.stdout);
    assert.match(second.stdout, new RegExp(`Allocation "${alloc.id.slice(0, 8)}" updated in place`));
    assert.match(second.stdout, /1 allocation updated in place/);

    const allocs = await agent.get<Allocation[]>('/v1/job/resize/allocations');
    assert.deepEqual(
      allocs.map((a) => [a.id, a.desiredStatus, a.jobVersion, a.resources?.memoryMb]),
      [[alloc.id, 'run', 1, 96]],
    );
    await until('the cgroup to hold the new limit', () => Number(readFileSync(path.join(cgroup, 'memory.limit_in_bytes'), 'utf8')) === 96 * MiB || undefined, 30_000);
    const after = (await agent.get<Stats>(`/v1/client/allocation/${alloc.id}/stats`)).tasks['sleeper'];
    assert.deepEqual(after?.pids, before.pids, 'the task kept running: same processes');

    const events = await until('the Resources Updated event', async () => {
      const a = await agent.get<Allocation>(`/v1/allocation/${alloc.id}`);
      const e = a.taskStates['sleeper']?.events.find((ev) => ev.type === 'Resources Updated');
      return e ? a.taskStates['sleeper']!.events : undefined;
    }, 30_000);
    assert.match(events.find((e) => e.type === 'Resources Updated')!.message, /in place: memory 96 MB/);
    assert.equal(events.filter((e) => e.type === 'Started').length, 1, 'started once, never restarted');

    const status = await agent.cli(['alloc', 'status', alloc.id]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /Resources Updated/);
    assert.match(status.stdout, /^Resource usage$/m);
    assert.match(status.stdout, /^Memory \(RSS\)\s+Cache\s+Max Usage\s+CPU User\s+CPU System\s+Throttled Periods\s+Pids\s+Source$/m);
    assert.match(status.stdout, /MiB\s+.*\s+cgroup$/m);
    const json = JSON.parse((await agent.cli(['alloc', 'status', alloc.id, '--json'])).stdout) as Allocation & {
      resourceUsage: { tasks: Record<string, { pids: number[] }> };
    };
    assert.ok((json.resourceUsage.tasks['sleeper']?.pids.length ?? 0) >= 2, JSON.stringify(json.resourceUsage));
  });
});
