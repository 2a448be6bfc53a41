// Dynamic host volumes (Nomad 1.10): how soon a volume the built-in `mkdir`
// plugin creates is usable by a job, on a dev agent. Each run creates a
// volume (PUT /v1/volume/host/create, answered once the node reports it:
// `ready`), registers a batch job that mounts it (PUT /v1/jobs), and waits
// until the job's allocation is placed on the volume's node, then until the
// task has written a file into the volume's directory. The goal is the first
// figure, create -> usable by a job (the volume ready and the job placed on
// it): under 100 ms.

import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AgentRun, freePort } from '../test/support/agent-run.js';
import { agentApi } from './_agent-api.js';
import { round, summarize, type Summary } from './_stats.js';

const RUNS = Number(process.env['BENCH_HOST_VOLUMES_RUNS'] ?? 20);

const jobHcl = (id: string, source: string): string => `
job "${id}" {
  type = "batch"
  group "g" {
    volume "d" {
      type   = "host"
      source = "${source}"
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo ok > /srv/written"]
      }
      volume_mount {
        volume      = "d"
        destination = "/srv"
      }
    }
  }
}
`;

const fmt = (s: Summary): string => `p50 ${round(s.p50Us / 1000)} ms, p90 ${round(s.p90Us / 1000)} ms, p99 ${round(s.p99Us / 1000)} ms`;

export default async function hostVolumes(dir: string): Promise<Record<string, unknown>> {
  const agentDir = join(dir, 'agent');
  mkdirSync(agentDir);
  const agent = await new AgentRun(['--dev', '--data-dir', agentDir, '--port', String(await freePort()), '--log-level', 'warn']).start();
  const call = agentApi(agent);
  const createNs: bigint[] = [];
  const usableNs: bigint[] = [];
  const wroteNs: bigint[] = [];
  try {
    for (let i = 0; i < RUNS + 2; i++) {
      const name = `bench-${i}`;
      const t0 = process.hrtime.bigint();
      const created = await call<{ Volume: { ID: string; State: string; NodeID: string; HostPath: string } }>('PUT', '/v1/volume/host/create', {
        Volume: { Name: name, PluginID: 'mkdir', RequestedCapabilities: [{ AccessMode: 'single-node-writer', AttachmentMode: 'file-system' }] },
      });
      const t1 = process.hrtime.bigint();
      if (created.body.Volume.State !== 'ready') throw new Error(`volume ${name} answered ${created.body.Volume.State}, not ready`);
      const { body: job } = await call<unknown>('POST', '/v1/jobs/parse', { JobHCL: jobHcl(`bench-job-${i}`, name), Canonicalize: true });
      const posted = await call('PUT', '/v1/jobs', { Job: job });
      let index = posted.index;
      let placed = false;
      while (!placed) {
        const { body: allocs, index: next } = await call<Array<{ NodeID: string; ClientStatus: string }>>('GET', `/v1/job/bench-job-${i}/allocations?index=${index}&wait=5s`);
        index = next;
        placed = allocs.some((a) => a.NodeID === created.body.Volume.NodeID);
      }
      const t2 = process.hrtime.bigint();
      let done = false;
      while (!done) {
        const { body: allocs, index: next } = await call<Array<{ ClientStatus: string }>>('GET', `/v1/job/bench-job-${i}/allocations?index=${index}&wait=5s`);
        index = next;
        done = allocs.some((a) => a.ClientStatus === 'complete' || a.ClientStatus === 'failed');
      }
      const t3 = process.hrtime.bigint();
      if (!existsSync(join(created.body.Volume.HostPath, 'written'))) throw new Error(`volume ${name}: the task did not write into ${created.body.Volume.HostPath}`);
      // The first two runs warm the agent up.
      if (i < 2) continue;
      createNs.push(t1 - t0);
      usableNs.push(t2 - t0);
      wroteNs.push(t3 - t0);
    }
  } finally {
    await agent.stop('SIGINT');
  }
  const create = summarize(createNs);
  const usable = summarize(usableNs);
  const ran = summarize(wroteNs);
  console.log(`host volume create (mkdir) -> ready: ${fmt(create)} (${RUNS} runs)`);
  console.log(`dynamic host volume create (mkdir) -> usable by a job (placed on its node): ${fmt(usable)} (goal < 100 ms)`);
  console.log(`... -> the job's batch task finished: ${fmt(ran)}`);
  return { runs: RUNS, createReadyMs: create, createToPlacedMs: usable, createToTaskDoneMs: ran };
}
