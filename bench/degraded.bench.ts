// A degraded cluster, as an operator lives it: three servers on a
// three-member etcd (lease TTL 3 s, node heartbeat TTL 5 s), one client
// agent with the hostpath plugin, a single-node-writer volume written every
// 100 ms by a workload.
//   - leader SIGSTOP -> a job submitted to the new leader runs (3 runs; the
//     leader stays paused until the job runs, then is resumed);
//   - workload downtime across lost etcd quorum: two of three members
//     stopped for QUORUM_LOSS_MS (20 s, scaled down from the 60 s:
//     the fencing window is 5 s here, so 20 s is four windows); the figure is
//     the writer's longest pause between two lines;
//   - CLI invocations failing during a leader SIGKILL, with every server
//     listed: `job status` in a loop from before the kill until a new
//     leader serves; failures counted, and those that are not retryable.
// The machine's load average is printed with the figures.

import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { mountsUnder, until } from '../test/support/agent-run.js';
import { Cluster, type ServerProc } from '../test/support/process-cluster.js';
import { hostpathVolumeHcl, perNodeHostpathPluginJob, rawExecJob } from '../test/support/runtime-cluster.js';
import { round } from './_stats.js';
import type { AllocationListStub } from '../src/api/index.js';

const QUORUM_LOSS_MS = 20_000;
const SIGSTOP_RUNS = 3;
const COUNTER = 'while true; do date +%s%N >> "$BERTH_TASK_DIR/data/counter"; sleep 0.1; done';

function jobOf(cluster: Cluster, id: string, volume: string | undefined, script: string): string {
  return cluster.writeJson(`${id}.json`, rawExecJob(id, volume, script));
}

async function running(cluster: Cluster, jobId: string, via?: ServerProc): Promise<string> {
  return until(
    `${jobId} running`,
    async () => (await cluster.read<AllocationListStub[]>(`/v1/job/${jobId}/allocations`, via).catch(() => [])).find(
      (a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running',
    )?.ID,
    120_000,
  );
}

const load = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');

export default async function degradedBench(): Promise<Record<string, unknown>> {
  const cluster = new Cluster();
  await cluster.start({ etcdMembers: 3, servers: 3, clients: 1, stopAfterServerDisconnect: '5s' });
  const out: Record<string, unknown> = {};
  try {
    const leader = await cluster.leader();
    await leader.run.cli(['job', 'run', cluster.writeJson('plugin.json', perNodeHostpathPluginJob({ dir: cluster.dir, nodeIdPrefix: 'bd-' }))]);
    await until('plugin healthy', async () => (await cluster.read<{ NodesHealthy: number }>('/v1/plugin/csi/hostpath').catch(() => ({ NodesHealthy: 0 }))).NodesHealthy === 1, 120_000);

    // Leader SIGSTOP -> a job submitted to the new leader runs.
    const stopSamples: number[] = [];
    for (let run = 0; run < SIGSTOP_RUNS; run++) {
      const paused = await cluster.leader();
      paused.run.child!.kill('SIGSTOP');
      const t0 = performance.now();
      try {
        const next = await until('another leader', async () => {
          for (const s of cluster.live().filter((x) => x !== paused)) if ((await cluster.status(s))?.isLeader) return s;
          return undefined;
        });
        const electedMs = performance.now() - t0;
        const id = `stop-${run}`;
        await until('job run accepted', async () => (await next.run.cli(['job', 'run', '--detach', jobOf(cluster, id, undefined, 'exec sleep 600')], { addr: next.url })).code === 0);
        await running(cluster, id, next);
        const ms = performance.now() - t0;
        stopSamples.push(ms);
        console.log(`  run ${run + 1}: ${paused.name} paused; ${next.name} leads after ${round(electedMs)} ms; the job submitted to it runs ${round(ms)} ms after the SIGSTOP (load ${load()})`);
      } finally {
        paused.run.child!.kill('SIGCONT');
      }
      await until('resumed server follows', async () => (await cluster.status(paused))?.isLeader === false);
    }
    const sorted = [...stopSamples].sort((a, b) => a - b);
    out['leaderSigstopToAllocRunningP50Ms'] = round(sorted[Math.floor(sorted.length / 2)] ?? 0);
    out['leaderSigstopToAllocRunningMaxMs'] = round(sorted.at(-1) ?? 0);
    console.log(`leader SIGSTOP -> allocation submitted to the new leader runs: p50 ${out['leaderSigstopToAllocRunningP50Ms']} ms, max ${out['leaderSigstopToAllocRunningMaxMs']} ms (goal < lease TTL 3 s + 2 s)`);

    // CLI invocations across a leader SIGKILL, every server listed.
    const victim = await cluster.leader();
    let stop = false;
    const results: Array<number | null> = [];
    const loop = (async () => {
      while (!stop) results.push((await victim.run.cli(['job', 'status'], { addr: cluster.addresses() })).code);
    })();
    await until('invocations before the kill', () => results.length >= 3);
    await victim.run.stop('SIGKILL');
    await cluster.leader();
    const after = results.length;
    await until('invocations after the failover', () => results.length >= after + 5);
    stop = true;
    await loop;
    await victim.run.start();
    const failed = results.filter((c) => c !== 0);
    const nonRetryable = failed.filter((c) => c !== 3 && c !== 7 && c !== 8);
    out['cliInvocationsAcrossSigkill'] = results.length;
    out['cliFailuresAcrossSigkill'] = failed.length;
    out['cliNonRetryableFailuresAcrossSigkill'] = nonRetryable.length;
    console.log(`CLI across a leader SIGKILL (servers listed): ${results.length} invocations, ${failed.length} failed, ${nonRetryable.length} not retryable (goal 0)`);

    // Workload downtime across lost quorum.
    await cluster.leader();
    const first = cluster.live()[0] as ServerProc;
    const volume = path.join(cluster.dir, 'vol-q.hcl');
    writeFileSync(volume, hostpathVolumeHcl('vol-q'));
    await until('volume created', async () => (await first.run.cli(['volume', 'create', volume], { addr: cluster.addresses() })).code === 0);
    await first.run.cli(['job', 'run', '--detach', jobOf(cluster, 'writer', 'vol-q', COUNTER)], { addr: cluster.addresses() });
    const allocId = await running(cluster, 'writer');
    const counter = (): bigint[] => {
      const mount = mountsUnder(path.join(cluster.dir, 'n1')).find((m) => m.includes(allocId) && m.endsWith('/data'));
      if (!mount) return [];
      return readFileSync(path.join(mount, 'counter'), 'utf8').split('\n').filter(Boolean).map((l) => BigInt(l));
    };
    await until('the writer writes', () => counter().length > 5);
    const before = counter().length;
    const down = cluster.etcd.members.slice(0, 2);
    for (const m of down) await m.kill();
    await new Promise((r) => setTimeout(r, QUORUM_LOSS_MS));
    for (const m of down) await m.start();
    await cluster.leader();
    await until('writes after quorum returns', () => counter().length > before + QUORUM_LOSS_MS / 100);
    const lines = counter().slice(Math.max(0, before - 1));
    let gap = 0n;
    for (let i = 1; i < lines.length; i++) if ((lines[i] as bigint) - (lines[i - 1] as bigint) > gap) gap = (lines[i] as bigint) - (lines[i - 1] as bigint);
    const allocs = await cluster.read<unknown[]>('/v1/job/writer/allocations');
    out['quorumLossMs'] = QUORUM_LOSS_MS;
    out['writerLongestGapAcrossQuorumLossMs'] = Number(gap / 1_000_000n);
    out['writerAllocationsAfterQuorumLoss'] = allocs.length;
    console.log(
      `workload across ${QUORUM_LOSS_MS / 1000} s of lost etcd quorum (fencing window 5 s): longest pause between writes ${out['writerLongestGapAcrossQuorumLossMs']} ms, ${allocs.length} allocation(s) (goal: no downtime, 1)`,
    );
    out['loadAverage'] = load();
    console.log(`load average: ${load()}`);
  } finally {
    await cluster.close();
  }
  return out;
}
