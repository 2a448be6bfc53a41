// Containers (section `docker` of `npm run bench`), the figures of issue 35,
// each timed as a user sees it, on a private dockerd and registry
// (scripts/docker-rig.mjs) and a warm `berth agent --dev --log-level warn`
// configured with Nomad's `plugin "docker" { config { … } }`:
//   - the hostpath CSI plugin as a privileged docker plugin job: POST ->
//     healthy in GET /v1/plugin/csi/hostpath, and the plugin container's own
//     start (dockerd's State.StartedAt) -> healthy in the API;
//   - a docker task with a CSI volume: POST /v1/jobs -> GET /v1/allocation/:id
//     `running` (blocking reads), BENCH_DOCKER_RUNS (10) runs after 2 warm-up
//     runs, the job purged, its claim released and its container gone between
//     runs (not timed);
//   - 50 docker tasks running (one job, count = BENCH_DOCKER_TASKS): the
//     agent's CPU at rest over BENCH_DOCKER_REST_S (10) seconds, and the PSS of
//     Berth's processes (the agent and everything it started; the containers'
//     own processes are dockerd's children, not ours), from /proc.
// Skipped, with the reason printed, where a private dockerd cannot run (not root).

import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { Allocation, AllocationListStub, CSIPlugin, Evaluation } from '../src/api/index.js';
import { dockerUnavailable, startDockerRig } from '../scripts/docker-rig.mjs';
import { AgentRun, freePort, until } from '../test/support/agent-run.js';
import { volumeRequest } from '../test/support/csi-api.js';
import { ALLOC_LABEL, dockerApi, listContainers, PAUSE_IMAGE, testImage, type TestDocker } from '../test/support/docker.js';
import { eventually } from '../test/support/eventually.js';
import { agentApi, type AgentCall } from './_agent-api.js';
import { round, summarize } from './_stats.js';

const RUNS = Number(process.env['BENCH_DOCKER_RUNS'] ?? 10);
const WARMUP = 2;
const TASKS = Number(process.env['BENCH_DOCKER_TASKS'] ?? 50);
const REST_S = Number(process.env['BENCH_DOCKER_REST_S'] ?? 10);

const now = (): number => performance.timeOrigin + performance.now();
const load = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');
const fig = (ms: number[]): { p50: number; p99: number } => {
  const s = summarize(ms.map((x) => BigInt(Math.round(x * 1e6))));
  return { p50: round(s.p50Us / 1000), p99: round(s.p99Us / 1000) };
};

function pluginJob(image: string, hostDir: string): string {
  return `job "hostpath-plugin" {
  type = "system"
  group "plugin" {
    task "plugin" {
      driver = "docker"
      config {
        image      = "${image}"
        privileged = true
        args       = ["--endpoint=\${CSI_ENDPOINT}", "--node-id=\${node.unique.id}", "--data-dir=/var/lib/berth/hostpath"]
        volumes    = ["${hostDir}:/var/lib/berth/hostpath"]
      }
      csi_plugin {
        id        = "hostpath"
        type      = "monolith"
        mount_dir = "/csi"
      }
      resources {
        cpu    = 100
        memory = 256
      }
    }
  }
}`;
}

function volumeJob(id: string, image: string): string {
  return `job "${id}" {
  group "main" {
    volume "data" {
      type            = "csi"
      source          = "bench-vol"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "main" {
      driver = "docker"
      config {
        image   = "${image}"
        command = "sleep"
        args    = ["3600"]
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
}`;
}

function manyJob(image: string, count: number): string {
  return `job "many" {
  group "many" {
    count = ${count}
    task "sleep" {
      driver = "docker"
      config {
        image   = "${image}"
        command = "sleep"
        args    = ["3600"]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}`;
}

/** HCL -> Nomad's Job JSON through the agent (POST /v1/jobs/parse), then PUT /v1/jobs; resolves with the register's index. */
async function register(call: AgentCall, hcl: string): Promise<number> {
  const parsed = await call<Record<string, unknown>>('POST', '/v1/jobs/parse', { JobHCL: hcl, Canonicalize: true });
  return (await call('PUT', '/v1/jobs', { Job: parsed.body })).index;
}

/** The process and all its descendants (from /proc's parent links). */
function tree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(e)]);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (pid: number): void => {
    out.push(pid);
    for (const c of children.get(pid) ?? []) walk(c);
  };
  walk(root);
  return out;
}

/** CPU ticks (utime + stime) of a process; 0 once gone. */
function ticks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]);
  } catch {
    return 0;
  }
}

/** Proportional set size of a process in KiB (smaps_rollup); 0 once gone. */
function pssKiB(pid: number): number {
  try {
    return Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Waits for the allocation to be running with blocking reads; throws when it ends otherwise. */
async function running(call: AgentCall, jobId: string, index: number): Promise<Allocation> {
  let allocId: string | undefined;
  while (!allocId) {
    const r = await call<AllocationListStub[]>('GET', `/v1/job/${jobId}/allocations?index=${index}&wait=60s`);
    allocId = r.body[0]?.ID;
    index = r.index;
  }
  for (;;) {
    const r = await call<Allocation>('GET', `/v1/allocation/${allocId}?index=${index}&wait=60s`);
    index = r.index;
    if (r.body.ClientStatus === 'running') return r.body;
    if (r.body.ClientStatus !== 'pending') throw new Error(`allocation ${allocId} is ${r.body.ClientStatus}: ${JSON.stringify(r.body.TaskStates)}`);
  }
}

export default async function docker(dir: string): Promise<Record<string, unknown>> {
  const why = dockerUnavailable();
  if (why) {
    console.log(`  skipped: docker cannot run here (${why})`);
    return { skipped: why };
  }
  const rig = await startDockerRig({ dir: join(dir, 'rig') });
  const td: TestDocker = { host: rig.host, socketPath: rig.socketPath, registry: rig.registry, sharedDir: rig.sharedDir };
  let agent: AgentRun | undefined;
  try {
    const [busybox, plugin] = [await testImage(td, 'busybox'), await testImage(td, 'plugin')];
    await testImage(td, 'pause');
    const config = join(dir, 'agent.hcl');
    writeFileSync(config, `plugin "docker" {\n  config {\n    endpoint = "${rig.host}"\n    allow_privileged = true\n    infra_image = "${PAUSE_IMAGE}"\n    volumes {\n      enabled = true\n    }\n  }\n}\n`);
    const hostDir = join(dir, 'hostpath');
    mkdirSync(hostDir);
    agent = new AgentRun(['--dev', '--data-dir', join(dir, 'agent'), '--port', String(await freePort()), '--log-level', 'warn', '--config', config]);
    await agent.start();
    const call = agentApi(agent);

    // The plugin: POST -> healthy, and its container's start -> healthy.
    const t0 = now();
    await register(call, pluginJob(plugin, hostDir));
    // A job the scheduler cannot place (no docker driver on the node) fails the section at once.
    const unplaced = new AbortController();
    await eventually('the plugin healthy', async () => {
      const p = await call<CSIPlugin>('GET', '/v1/plugin/csi/hostpath').catch(() => undefined);
      if (p && p.body.ControllersHealthy >= 1 && p.body.NodesHealthy >= 1) return true;
      const evals = (await call<Evaluation[]>('GET', '/v1/job/hostpath-plugin/evaluations')).body;
      const failed = evals.find((e) => e.FailedTGAllocs && Object.keys(e.FailedTGAllocs).length > 0);
      if (failed) unplaced.abort(new Error(`the plugin job cannot be placed: ${JSON.stringify(failed.FailedTGAllocs)}`));
      return false;
    }, { timeoutMs: 180_000, intervalMs: 10, signal: unplaced.signal });
    const healthy = now();
    const [pluginStub] = (await call<AllocationListStub[]>('GET', '/v1/job/hostpath-plugin/allocations')).body;
    const [pc] = await listContainers(td, `${ALLOC_LABEL}=${pluginStub!.ID}`);
    const started = Date.parse((await dockerApi<{ State: { StartedAt: string } }>(td, 'GET', `/containers/${pc!.Id}/json`)).State.StartedAt);
    const pluginFig = { postToHealthyMs: round(healthy - t0), containerStartToHealthyMs: round(healthy - started) };
    console.log(`  hostpath plugin as a docker job: POST -> healthy in the API ${pluginFig.postToHealthyMs} ms; its container started -> healthy ${pluginFig.containerStartToHealthyMs} ms`);

    const capabilities = [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }];
    await call('PUT', '/v1/volume/csi/bench-vol/create', volumeRequest('bench-vol', { pluginId: 'hostpath', name: 'bench-vol', capabilities }));

    // A docker task with the CSI volume, POST -> running.
    const totals: number[] = [];
    const loadBefore = load();
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const id = `docker-csi-${i}`;
      const parsed = await call<Record<string, unknown>>('POST', '/v1/jobs/parse', { JobHCL: volumeJob(id, busybox), Canonicalize: true });
      const start = now();
      const { index } = await call('PUT', '/v1/jobs', { Job: parsed.body });
      const alloc = await running(call, id, index);
      if (i >= WARMUP) totals.push(now() - start);
      await call('DELETE', `/v1/job/${id}?purge=true`);
      await until('the claim released and the container gone', async () => {
        const vol = (await call<{ ReadAllocs: object | null; WriteAllocs: object | null }>('GET', '/v1/volume/csi/bench-vol')).body;
        const claims = Object.keys(vol.ReadAllocs ?? {}).length + Object.keys(vol.WriteAllocs ?? {}).length;
        return claims === 0 && (await listContainers(td, `${ALLOC_LABEL}=${alloc.ID}`)).length === 0;
      });
    }
    const alloc = fig(totals);
    console.log(`  docker task with a CSI volume, POST /v1/jobs -> running: p50 ${alloc.p50} ms, p99 ${alloc.p99} ms (${totals.length} runs; load ${loadBefore} -> ${load()})`);

    // TASKS docker tasks: the agent at rest, and what Berth's processes hold.
    const index = await register(call, manyJob(busybox, TASKS));
    await until(`${TASKS} docker tasks running`, async () => {
      const list = (await call<AllocationListStub[]>('GET', `/v1/job/many/allocations?index=${index}`)).body;
      return list.filter((a) => a.ClientStatus === 'running').length === TASKS;
    }, 600_000);
    const agentPid = agent.child!.pid!;
    const procs = tree(agentPid);
    const tck = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    const before = procs.reduce((a, p) => a + ticks(p), 0);
    const restStart = now();
    await new Promise((r) => setTimeout(r, REST_S * 1000)); // the measuring window itself
    const cpuPct = round(((procs.reduce((a, p) => a + ticks(p), 0) - before) / tck) / ((now() - restStart) / 1000) * 100, 2);
    const pss = round(tree(agentPid).reduce((a, p) => a + pssKiB(p), 0) / 1024);
    const agentPss = round(pssKiB(agentPid) / 1024);
    console.log(`  ${TASKS} docker tasks running: Berth's CPU at rest ${cpuPct}% of one core over ${REST_S} s; PSS of Berth's ${procs.length} processes ${pss} MiB (the agent ${agentPss} MiB)`);
    await call('DELETE', '/v1/job/many?purge=true');
    return { plugin: pluginFig, dockerCsiAlloc: { ...alloc, runs: totals.length }, many: { tasks: TASKS, cpuAtRestPct: cpuPct, pssMiB: pss, agentPssMiB: agentPss, processes: procs.length } };
  } finally {
    await agent?.stop('SIGINT', 180_000).catch(() => undefined);
    await rig.stop();
  }
}
