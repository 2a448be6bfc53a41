// A rolling update as a user meets it through `berth agent --dev` with the
// hostpath CSI plugin: a 3-allocation service job with a per-alloc
// single-node-writer volume and `update { max_parallel = 1 }`. Each
// allocation's task appends "start"/"stop" lines to a log in its volume, so
// the log proves the predecessor stopped (and let its claim go) before the
// replacement started: never two writers. A canary waits for
// `deployment promote` (and `job plan` shows it placed, as the run places
// it, not a false "no free write claim"); a failing version is auto-reverted
// and the old version takes its claims back; a purge leaves no claim and no
// mount. Beside it, a job without volumes is scaled up and down (`job scale`,
// and a count edited for `job run`): each count change is a deployment that
// finishes, replaces nothing, and lets `job restart` run.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AllocationListStub, CSIPlugin, CSIVolume, Deployment, Job, VolumeClaimState } from '../../src/api/index.js';
import { until } from '../support/runtime-cluster.js';
import { EXAMPLES, startAgent, tempDir, type AgentUnderTest, type Result } from './_agent.js';

function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

/** The allocation's index in its group, from its name (`roll.g[2]`), as Nomad's api.Allocation.Index() reads it. */
function indexOf(a: AllocationListStub): number {
  const m = /\[(\d+)\]$/.exec(a.Name);
  assert.ok(m, `an allocation name with an index: ${a.Name}`);
  return Number(m[1]);
}

const volumeHcl = (i: number): string => `
id        = "roll[${i}]"
name      = "roll[${i}]"
type      = "csi"
plugin_id = "hostpath"
capacity_min = "1MiB"
capacity_max = "10MiB"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`;

/** Version `v` of the job; `fails`: its task exits 1 after writing its start line. */
const jobHcl = (v: number, opts: { canary?: number; fails?: boolean } = {}): string => `
job "roll" {
  update {
    max_parallel      = 1
    health_check      = "task_states"
    min_healthy_time  = "1s"
    healthy_deadline  = "30s"
    progress_deadline = "2m"
    auto_revert       = true
    canary            = ${opts.canary ?? 0}
  }
  group "g" {
    count = 3
    restart {
      attempts = 0
      mode     = "fail"
    }
    volume "data" {
      type            = "csi"
      source          = "roll"
      per_alloc       = true
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "w" {
      driver = "raw_exec"
      env { VERSION = "${v}" }
      config {
        command = "/bin/sh"
        args    = ["-c", "cd \\"$BERTH_TASK_DIR/data\\" && echo \\"start v$VERSION $BERTH_ALLOC_ID\\" >> log && cat log && ${opts.fails ? 'exit 1' : 'trap \\"echo stop $BERTH_ALLOC_ID >> log; exit 0\\" TERM && while true; do sleep 0.2; done'}"]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`;

describe('a rolling update with per-alloc volumes through the dev agent', () => {
  let dir = '';
  let agent: AgentUnderTest;
  let nodeId = '';

  const live = async (): Promise<AllocationListStub[]> =>
    (await agent.get<AllocationListStub[]>('/v1/job/roll/allocations')).filter((a) => a.DesiredStatus === 'run').sort((a, b) => indexOf(a) - indexOf(b));
  const claimsOf = async (i: number): Promise<VolumeClaimState[]> => (await agent.get<CSIVolume>(`/v1/volume/csi/${encodeURIComponent(`roll[${i}]`)}`)).BerthClaims;
  const latestDeployment = async (job = 'roll'): Promise<Deployment | null> => agent.get<Deployment | null>(`/v1/job/${job}/deployment`);
  const settled = (version: number, job = 'roll') =>
    until(`the deployment of job ${job} version ${version} to succeed`, async () => {
      const d = await latestDeployment(job);
      if (d?.JobVersion === version && d.Status === 'failed') throw new Error(`deployment failed: ${d.StatusDescription}`);
      return d?.JobVersion === version && d.Status === 'successful' ? d : undefined;
    }, 180_000);
  /** The volume's log as the allocation's task printed it on start. */
  const logOf = async (a: AllocationListStub): Promise<string[]> =>
    until(`the log of ${a.ID}`, async () => {
      const out = (await agent.cli(['alloc', 'logs', a.ID])).stdout.trim().split('\n');
      return out.at(-1)?.endsWith(a.ID) ? out : undefined;
    }, 60_000);
  const write = (v: number, opts?: { canary?: number; fails?: boolean }): string => {
    const file = path.join(dir, `roll-${v}.hcl`);
    writeFileSync(file, jobHcl(v, opts));
    return file;
  };

  before(async () => {
    dir = await tempDir('brl-');
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'a'), '--port', '0']).ready(true);
    ok(await agent.cli(['job', 'run', path.join(EXAMPLES, 'hostpath-plugin.hcl')]), 'job run hostpath-plugin');
    await until('the hostpath plugin to be healthy', async () => {
      const p = await agent.get<CSIPlugin>('/v1/plugin/csi/hostpath').catch(() => undefined);
      return p && p.ControllersHealthy === 1 && p.NodesHealthy === 1;
    }, 60_000);
    nodeId = (await agent.get<AllocationListStub[]>('/v1/job/hostpath-plugin/allocations'))[0]?.NodeID ?? '';
    for (let i = 0; i < 3; i++) {
      const file = path.join(dir, `vol-${i}.hcl`);
      writeFileSync(file, volumeHcl(i));
      ok(await agent.cli(['volume', 'create', file]), `volume create roll[${i}]`);
    }
  });

  after(async () => {
    await agent?.cli(['job', 'stop', '--purge', 'roll']).catch(() => undefined);
    await agent?.stop('SIGINT').catch(() => undefined);
    for (const m of readFileSync('/proc/self/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1] ?? '').filter((m) => m.startsWith(dir))) spawnSync('umount', ['-l', m]);
    rmSync(dir, { recursive: true, force: true });
    if (nodeId) rmSync(path.join('/var/lib/berth/hostpath', nodeId), { recursive: true, force: true });
  });

  it('job run follows the first deployment until it is successful', async () => {
    const run = ok(await agent.cli(['job', 'run', write(1)]), 'job run v1');
    assert.match(run.stdout, /Monitoring deployment/);
    assert.match(run.stdout, /Deployment "[0-9a-f]{8}" successful/);
    const allocs = await live();
    assert.deepEqual(allocs.map(indexOf), [0, 1, 2]);
    for (const [i, a] of allocs.entries()) assert.deepEqual((await claimsOf(i)).map((c) => c.AllocationID), [a.ID]);
  });

  it('a canary replaces the first allocation and waits for promotion; then each claim moves to its replacement in order', async () => {
    const before = await live();
    // The plan places the canary where the run will: its predecessor's claim of roll[0] is freed by the same update.
    const plan = await agent.cli(['job', 'plan', write(2, { canary: 1 })]);
    assert.equal(plan.code, 1, `job plan exits 1 for changes: ${plan.stderr}${plan.stdout}`);
    assert.doesNotMatch(plan.stdout, /Failed to place|no free write claim/);
    assert.match(plan.stdout, /^- All tasks successfully allocated\.$/m);
    assert.match(plan.stdout, new RegExp(`^- Place roll\\.g\\[0\\] on node "[^"]+" \\(${nodeId.slice(0, 8)}\\)$`, 'm'));
    assert.match(plan.stdout, /^- Stop roll\.g\[0\]: replaced by a canary$/m);
    ok(await agent.cli(['job', 'run', '--detach', write(2, { canary: 1 })]), 'job run v2');
    const d = await until('a healthy canary', async () => {
      const dep = await latestDeployment();
      return dep?.JobVersion === 1 && dep.TaskGroups?.['g']?.HealthyAllocs === 1 ? dep : undefined;
    }, 120_000);
    const during = await live();
    assert.deepEqual(during.map((a) => [indexOf(a), a.JobVersion, a.DeploymentStatus?.Canary ?? false]), [[0, 1, true], [1, 0, false], [2, 0, false]]);
    assert.equal(during[0]?.NodeID, nodeId, 'placed on the node the plan named');
    assert.equal(d.Status, 'running');
    // Task Group, Auto Revert, Promoted, Desired, Canaries, Placed, Healthy, Unhealthy, Progress Deadline.
    assert.match(ok(await agent.cli(['deployment', 'status', d.ID]), 'deployment status').stdout, /^g\s+true\s+false\s+3\s+1\s+1\s+1\s+0\s+\d{4}-/m);
    ok(await agent.cli(['deployment', 'promote', '--detach', d.ID.slice(0, 8)]), 'deployment promote');
    await settled(1);

    const after = await live();
    // Replaced in index order, each replacement created after its predecessor's replacement was healthy.
    assert.deepEqual(after.map((a) => a.JobVersion), [1, 1, 1]);
    const created = [...after].sort((a, b) => a.CreateIndex - b.CreateIndex).map(indexOf);
    assert.deepEqual(created, [0, 1, 2]);
    for (const [i, a] of after.entries()) {
      assert.deepEqual((await claimsOf(i)).map((c) => c.AllocationID), [a.ID], `roll[${i}] is claimed by its replacement only`);
      const log = await logOf(a);
      const prev = before[i] as AllocationListStub;
      // The predecessor wrote its stop line before the replacement started: never two writers.
      assert.deepEqual(log.slice(-3), [`start v1 ${prev.ID}`, `stop ${prev.ID}`, `start v2 ${a.ID}`]);
    }
  });

  it('a failing version fails its deployment and is auto-reverted: the old version takes its claims back', async () => {
    const run = await agent.cli(['job', 'run', write(3, { fails: true })]);
    assert.equal(run.code, 1, run.stderr + run.stdout);
    assert.match(run.stdout, /Failed due to unhealthy allocations - rolling back to job version 1/);
    // The revert is version 3, the spec of version 1 (VERSION=2).
    await settled(3);
    const allocs = await live();
    const job = await agent.get<Job>('/v1/job/roll');
    assert.equal(job.Version, 3);
    assert.equal(job.TaskGroups?.[0]?.Tasks?.[0]?.Env?.['VERSION'], '2');
    assert.deepEqual(allocs.map((a) => a.JobVersion), [3, 3, 3]);
    for (const [i, a] of allocs.entries()) assert.deepEqual((await claimsOf(i)).map((c) => c.AllocationID), [a.ID]);
    const log0 = await logOf(allocs[0] as AllocationListStub);
    assert.match(log0.at(-2) ?? '', /^(start v3 |stop )/, 'the failed v3 allocation (or the last v2 one) wrote before the revert started');
    assert.equal(log0.filter((l) => l.startsWith('start v3')).length, 1, 'max_parallel = 1: one failing allocation, no more');
    const history = ok(await agent.cli(['job', 'history', '-p', 'roll']), 'job history');
    assert.match(history.stdout, /Version\s+= 3[\s\S]*Stable\s+= true/);
    assert.match(history.stdout, /\+\/- Env\[VERSION\]: "3" => "2"/);
  });

  it('a count change on a job with an update block is a deployment that finishes, replaces nothing, and lets job restart run', async () => {
    const growHcl = (count: number): string => `
job "grow" {
  update {
    max_parallel      = 1
    min_healthy_time  = "1s"
    healthy_deadline  = "30s"
    progress_deadline = "1m"
  }
  group "g" {
    count = ${count}
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do sleep 0.2; done"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`;
    const file = path.join(dir, 'grow.hcl');
    writeFileSync(file, growHcl(1));
    ok(await agent.cli(['job', 'run', file]), 'job run grow');
    const running = async (): Promise<AllocationListStub[]> =>
      (await agent.get<AllocationListStub[]>('/v1/job/grow/allocations')).filter((a) => a.DesiredStatus === 'run').sort((a, b) => indexOf(a) - indexOf(b));
    const [first] = await running();
    assert.ok(first);

    ok(await agent.cli(['job', 'scale', 'grow', 'g', '3']), 'job scale up');
    const up = await settled(1, 'grow');
    // Task Group, Desired, Placed, Healthy, Unhealthy, Progress Deadline: the running allocation joined it.
    assert.match(ok(await agent.cli(['deployment', 'status', up.ID]), 'deployment status').stdout, /^g\s+3\s+3\s+3\s+0\s+\d{4}-/m);
    const grown = await running();
    assert.deepEqual(grown.map((a) => [indexOf(a), a.JobVersion]), [[0, 1], [1, 1], [2, 1]]);
    assert.equal(grown[0]?.ID, first.ID, 'the first allocation keeps running: a count change replaces nothing');

    // A count edited in the job file: job run follows the deployment to its end.
    writeFileSync(file, growHcl(2));
    const run = ok(await agent.cli(['job', 'run', file]), 'job run count 2');
    assert.match(run.stdout, /Deployment "[0-9a-f]{8}" successful/);
    ok(await agent.cli(['job', 'scale', 'grow', 'g', '1']), 'job scale down');
    await settled(3, 'grow');
    assert.deepEqual((await running()).map((a) => a.ID), [first.ID]);

    const restart = ok(await agent.cli(['job', 'restart', 'grow', '-yes']), 'job restart after the count changes');
    assert.match(restart.stdout, /Job restarted successfully!/);
    ok(await agent.cli(['job', 'stop', '--purge', 'grow']), 'job stop grow');
  });

  it('nothing leaks: a purge releases every claim and unmounts every volume', async () => {
    ok(await agent.cli(['job', 'stop', '--purge', 'roll']), 'job stop --purge');
    for (let i = 0; i < 3; i++) await until(`roll[${i}] to have no claim`, async () => ((await claimsOf(i)).length === 0 ? true : undefined), 60_000);
    const mounts = readFileSync('/proc/self/mounts', 'utf8').split('\n').filter((l) => l.includes('roll[') || l.includes('roll%5B'));
    assert.deepEqual(mounts, []);
  });
});
