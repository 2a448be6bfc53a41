// Acting on one allocation through a dev agent (issue 21): a service task
// with the examples' hostpath volume at /data that records each start in the
// volume, each SIGHUP in its local/ dir, and appends ticks to a file.
//   - `alloc fs` lists and reads inside the allocation directory, follows a
//     growing file, and refuses `..`, symlinks leading out, and secrets/;
//   - `alloc signal -s SIGHUP` reaches the task;
//   - `alloc restart` runs the task again with the volume still mounted (same
//     mount, same claim, the data written before still there);
//   - `alloc stop` replaces the allocation (the replacement names it);
//   - `job restart -batch-size 2` restarts every allocation of a job of three
//     in two batches (same allocations, each task one restart more), and
//     `job restart -reschedule` replaces all three.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import type { Allocation, AllocationListStub, CSIPlugin, CSIVolume, StreamFrame } from '../../src/api/index.js';
import { jsonObjects } from '../../src/lib/index.js';
import { mountsUnder, until } from '../support/runtime-cluster.js';
import { EXAMPLES, startAgent, tempDir, type AgentUnderTest, type Result } from './_agent.js';

function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

const SCRIPT =
  'echo "start $$" >> "$BERTH_TASK_DIR/data/starts"; ' +
  'ln -sfn /etc "$BERTH_TASK_DIR/etc-link"; ln -sfn ../../.. "$BERTH_TASK_DIR/up"; ' +
  `trap 'echo HUP >> "$BERTH_TASK_DIR/signals"' HUP; ` +
  'while :; do echo tick >> "$BERTH_TASK_DIR/ticks"; sleep 0.2; done';

const JOB = `job "ops" {
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "shared-data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", ${JSON.stringify(SCRIPT)}]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
`;

const MANY = `job "many" {
  group "g" {
    count = 3
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "while :; do sleep 1; done"]
      }
    }
  }
}
`;

/** Two allocations, each with a prestart task that has finished (so cannot be restarted) beside a running one. */
const ONCE = `job "once" {
  group "g" {
    count = 2
    task "setup" {
      driver = "raw_exec"
      lifecycle {
        hook = "prestart"
      }
      config {
        command = "/bin/true"
      }
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "while :; do sleep 1; done"]
      }
    }
  }
}
`;

describe('allocation commands on a dev agent', () => {
  let dir = '';
  let agent: AgentUnderTest;
  let nodeId = '';

  before(async () => {
    dir = await tempDir('bao-');
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'a'), '--port', '0']).ready(true);
    nodeId = (await agent.get<Api.NodeListStub[]>('/v1/nodes'))[0]!.ID;
    ok(await agent.cli(['job', 'run', path.join(EXAMPLES, 'hostpath-plugin.hcl')]), 'job run hostpath-plugin');
    await until('the hostpath plugin healthy', async () => {
      const p = await agent.get<CSIPlugin>('/v1/plugin/csi/hostpath').catch(() => undefined);
      return p && p.ControllersHealthy === 1 && p.NodesHealthy === 1;
    }, 90_000);
    ok(await agent.cli(['volume', 'create', path.join(EXAMPLES, 'volume.hcl')]), 'volume create');
    writeFileSync(path.join(dir, 'ops.hcl'), JOB);
    ok(await agent.cli(['job', 'run', path.join(dir, 'ops.hcl')]), 'job run ops');
  });

  after(async () => {
    await agent?.cli(['job', 'stop', '--purge', 'ops']).catch(() => undefined);
    await agent?.cli(['job', 'stop', '--purge', 'many']).catch(() => undefined);
    await agent?.cli(['job', 'stop', '--purge', 'once']).catch(() => undefined);
    await agent?.stop('SIGINT').catch(() => undefined);
    for (const m of mountsUnder(dir).reverse()) spawnSync('umount', ['-l', m]);
    rmSync(dir, { recursive: true, force: true });
    if (nodeId) rmSync(path.join('/var/lib/berth/hostpath', nodeId), { recursive: true, force: true });
  });

  it('reads the allocation directory and never outside it; signals, restarts with the volume mounted, stops', async () => {
    const alloc = await until('the task running', async () => (await agent.get<AllocationListStub[]>('/v1/job/ops/allocations')).find((a) => a.ClientStatus === 'running'));
    const id = alloc.ID.slice(0, 8);
    await until('the task set up its links', async () => /up ->/.test((await agent.cli(['alloc', 'fs', id, 't/local'])).stdout));

    const root = ok(await agent.cli(['alloc', 'fs', id]), 'alloc fs /');
    assert.match(root.stdout, /alloc\//);
    assert.match(root.stdout, /t\//);
    const starts = ok(await agent.cli(['alloc', 'fs', id, 't/local/data/starts']), 'alloc fs cat');
    assert.match(starts.stdout, /^start \d+\n$/);
    assert.match(ok(await agent.cli(['alloc', 'fs', '-stat', id, 't/local/ticks']), 'alloc fs -stat').stdout, /ticks/);

    for (const escape of ['..', 't/../../x', '../../etc/passwd', 't/local/etc-link/passwd', 't/local/up', 't/local/up/etc/hostname']) {
      const r = await agent.cli(['alloc', 'fs', id, escape]);
      assert.notEqual(r.code, 0, `alloc fs ${escape} must be refused: ${r.stdout}`);
      assert.match(r.stderr, /outside the allocation directory/, `alloc fs ${escape}`);
    }
    const secret = await agent.cli(['alloc', 'fs', id, 't/secrets']);
    assert.notEqual(secret.code, 0);
    assert.match(secret.stderr, /secrets directory is not allowed/);

    // Following a file: what the task appends after the read started arrives, in Nomad's frames.
    const abort = new AbortController();
    const res = await fetch(`${agent.addr}/v1/client/fs/stream/${alloc.ID}?path=t/local/ticks&origin=end&offset=0&follow=true`, {
      headers: { 'X-Nomad-Token': agent.token },
      signal: abort.signal,
    });
    assert.equal(res.status, 200);
    for await (const frame of jsonObjects(res.body as unknown as AsyncIterable<Uint8Array>)) {
      const data = (frame as StreamFrame).Data;
      if (!data) continue;
      assert.match(Buffer.from(data, 'base64').toString(), /tick/);
      break;
    }
    abort.abort();

    ok(await agent.cli(['alloc', 'signal', '-s', 'SIGHUP', id]), 'alloc signal');
    await until('the task saw SIGHUP', async () => /HUP/.test((await agent.cli(['alloc', 'fs', id, 't/local/signals'])).stdout));

    const dataMounts = (): string[] => mountsUnder(path.join(dir, 'a')).filter((m) => m.includes(alloc.ID) && m.endsWith('/t/local/data'));
    const before = dataMounts();
    assert.equal(before.length, 1, `the volume is mounted in the task: ${mountsUnder(dir).join(', ')}`);
    const claimBefore = (await agent.get<CSIVolume>('/v1/volume/csi/shared-data')).BerthClaims.find((c) => c.AllocationID === alloc.ID);
    ok(await agent.cli(['alloc', 'restart', id]), 'alloc restart');
    await until('the task started again', async () => /^start \d+\nstart \d+\n$/.test((await agent.cli(['alloc', 'fs', id, 't/local/data/starts'])).stdout));
    assert.deepEqual(dataMounts(), before, 'the volume stayed mounted');
    const claimAfter = (await agent.get<CSIVolume>('/v1/volume/csi/shared-data')).BerthClaims.find((c) => c.AllocationID === alloc.ID);
    assert.equal(claimAfter?.ClaimTime, claimBefore?.ClaimTime, 'the same claim');
    const restarted = await agent.get<Allocation>(`/v1/allocation/${alloc.ID}`);
    assert.equal(restarted.ClientStatus, 'running');
    assert.ok(restarted.TaskStates!['t']!.Events!.some((e) => /Restart requested/.test(e.Message)), 'the restart is in the task events');

    const stop = ok(await agent.cli(['alloc', 'stop', id]), 'alloc stop');
    assert.match(stop.stdout, /marked for migration/);
    const replacement = await until('a replacement running', async () =>
      (await agent.get<AllocationListStub[]>('/v1/job/ops/allocations')).find((a) => a.ID !== alloc.ID && a.ClientStatus === 'running'),
    );
    assert.equal((await agent.get<Allocation>(`/v1/allocation/${replacement.ID}`)).PreviousAllocation, alloc.ID);
    assert.equal((await agent.get<Allocation>(`/v1/allocation/${alloc.ID}`)).DesiredStatus, 'stop');

    const claims = ok(await agent.cli(['volume', 'claim', 'list', '-job', 'ops']), 'volume claim list');
    assert.match(claims.stdout, new RegExp(replacement.ID.slice(0, 8)));
    const verbose = ok(await agent.cli(['volume', 'status', '--verbose', 'shared-data']), 'volume status --verbose');
    assert.match(verbose.stdout, /Plugin View \(ListVolumes\)/);
    const refused = await agent.cli(['volume', 'claim', 'delete', 'shared-data', replacement.ID.slice(0, 8)]);
    assert.notEqual(refused.code, 0, 'a running allocation keeps its claim');
    assert.match(refused.stderr, /stop it first, or delete the claim with force/);
  });

  it('job restart restarts every allocation in batches, in place; -reschedule replaces them', async () => {
    writeFileSync(path.join(dir, 'many.hcl'), MANY);
    ok(await agent.cli(['job', 'run', path.join(dir, 'many.hcl')]), 'job run many');
    const running = async (): Promise<AllocationListStub[]> =>
      (await agent.get<AllocationListStub[]>('/v1/job/many/allocations')).filter((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running');
    const first = await until('three allocations running', async () => ((await running()).length === 3 ? running() : undefined));
    const ids = first.map((a) => a.ID).sort();

    const r = ok(await agent.cli(['job', 'restart', 'many', '-batch-size', '2', '-yes']), 'job restart');
    assert.match(r.stdout, /==> .*: Restarting 3 allocations/);
    assert.match(r.stdout, /Restarting 1st batch of 2 allocations/);
    assert.match(r.stdout, /Restarting 2nd batch of 1 allocations/);
    for (const a of first) assert.match(r.stdout, new RegExp(`Restarting running tasks in allocation "${a.ID.slice(0, 8)}" for group "g"`));
    assert.match(r.stdout, /Job restarted successfully!/);
    // The command returned once each task ran again: the same allocations, each task restarted once, started anew.
    const after = await running();
    assert.deepEqual(after.map((a) => a.ID).sort(), ids, 'the same allocations');
    for (const a of after) {
      const was = first.find((f) => f.ID === a.ID)!.TaskStates!['t']!;
      assert.equal(a.TaskStates!['t']!.Restarts, was.Restarts + 1, `allocation ${a.ID} restarted once`);
      assert.ok(Date.parse(a.TaskStates!['t']!.StartedAt) > Date.parse(was.StartedAt), `allocation ${a.ID} started again`);
    }

    const none = ok(await agent.cli(['job', 'restart', 'many', '-group', 'nosuch', '-verbose']), 'job restart -group nosuch');
    assert.match(none.stdout, /Skipping allocation ".{36}" because it doesn't have any of requested groups/);
    assert.match(none.stdout, /No allocations to restart/);

    // --json: the progress on stderr, one document on stdout.
    const re = ok(await agent.cli(['job', 'restart', 'many', '-reschedule', '-batch-size', '2', '-batch-wait', '1s', '-yes', '--json']), 'job restart -reschedule');
    for (const a of first) assert.match(re.stderr, new RegExp(`Rescheduling allocation "${a.ID.slice(0, 8)}" for group "g"`));
    assert.match(re.stderr, /Waiting 1s before restarting the next batch/);
    const doc = JSON.parse(re.stdout) as { jobId: string; allocations: string[]; rescheduled: boolean };
    assert.deepEqual({ ...doc, allocations: [...doc.allocations].sort() }, { jobId: 'many', allocations: ids, rescheduled: true });
    const replaced = await running();
    assert.equal(replaced.length, 3);
    const previous = await Promise.all(replaced.map(async (a) => (await agent.get<Allocation>(`/v1/allocation/${a.ID}`)).PreviousAllocation));
    assert.deepEqual(previous.sort(), ids, 'each allocation replaced by a new one');
    for (const id of ids) assert.equal((await agent.get<Allocation>(`/v1/allocation/${id}`)).DesiredStatus, 'stop');
  });

  it('job restart -task stops at the first allocation that fails and names it (no terminal: -on-error ask acts as fail)', async () => {
    writeFileSync(path.join(dir, 'once.hcl'), ONCE);
    ok(await agent.cli(['job', 'run', path.join(dir, 'once.hcl')]), 'job run once');
    const allocs = await until('two allocations running', async () => {
      const list = (await agent.get<AllocationListStub[]>('/v1/job/once/allocations')).filter((a) => a.ClientStatus === 'running');
      return list.length === 2 ? list : undefined;
    });
    const r = await agent.cli(['job', 'restart', 'once', '-task', 'setup']);
    assert.equal(r.code, 1, `${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /Stopping job restart due to error/);
    const failed = allocs.filter((a) => r.stderr.includes(`Error restarting allocation "${a.ID.slice(0, 8)}"`));
    assert.equal(failed.length, 1, `one allocation named: ${r.stderr}`);
    assert.match(r.stderr, /task "setup" is not running/);
    const other = allocs.find((a) => a !== failed[0])!;
    assert.doesNotMatch(r.stdout, new RegExp(other.ID.slice(0, 8)), 'the second batch was not started');
    for (const a of allocs) {
      const now = await agent.get<Allocation>(`/v1/allocation/${a.ID}`);
      assert.equal(now.ClientStatus, 'running');
      assert.equal(now.TaskStates!['t']!.Restarts, 0, 'only the named task was asked for');
    }
  });
});
