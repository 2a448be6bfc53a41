// An allocation with a CSI volume, from the API to running (section
// `csi-alloc` of `npm run bench`), the row of issue 25: what a user does,
// timed as a user sees it. A warm `berth agent --dev` in its own process
// (`--log-level warn`), the real hostpath plugin as a raw_exec system job
// (monolith: controller and node), one volume created through it. Then,
// BENCH_CSI_ALLOC_RUNS (20) times after 3 warm-up runs: POST /v1/jobs with a
// service job whose one raw_exec task (/bin/sleep) mounts the volume, and a
// blocking read of GET /v1/allocation/:id until it says `running`. Between
// runs (not timed) the job is purged, its claim released and the allocation
// collected on the node.
//
// The breakdown puts what the agent itself records on the bench's clock (one
// machine, one wall clock; the agent's times are whole milliseconds):
//   submit+schedule   POST sent -> the allocation written (its createTime)
//   to the node       -> the node built its runner (the task's Received event)
//   claim + setup     -> the volume mounted (Volume Mounted event), minus the
//                        node's CSI calls: the claim round trip to the server
//                        (with the claim's ControllerPublishVolume), the alloc
//                        dir, hooks
//   NodeStage/Publish the node plugin's NodeStageVolume + NodePublishVolume
//                        (the agent's berth_csi_call_duration_seconds)
//   task start        Volume Mounted -> the task's Started event
//   status back       Started -> the API answers `running` (report to the
//                        server, its write, the blocking read's wake-up)
// ControllerPublishVolume (the claim's) is printed apart, and so is the
// CPU time the agent (with the mount processes it ran and reaped) and the
// plugin used per run, from /proc (the machine may be busy: CPU time moves
// less with its load than wall time does), and the gRPC calls the agent
// sent the plugin per run. The machine's
// load average is printed beside the figures (the machine may be shared).
// BENCH_CSI_ALLOC_LOG=file runs the agent at `--log-level debug` and copies
// its log there (every step on the agent's clock; the figures then include
// the logging) and prints the HTTP requests per run by caller and route;
// BENCH_CSI_ALLOC_CPU_PROF=dir runs it under `node --cpu-prof` and writes
// beside the profile `windows.json`, each timed run's
// [start, end] on the monotonic clock in microseconds (the profile's clock),
// so that a profile can be cut to the timed windows.

import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { AgentRun, freePort, until } from '../test/support/agent-run.js';
import { volumeRequest } from '../test/support/csi-api.js';
import { hostpathPluginJob } from '../test/support/runtime-cluster.js';
import { agentApi } from './_agent-api.js';
import { round, summarize } from './_stats.js';
import { registration } from '../test/support/nomad-jobs.js';
import type { Allocation, AllocationListStub } from '../src/api/index.js';

const RUNS = Number(process.env['BENCH_CSI_ALLOC_RUNS'] ?? 20);
const WARMUP = 3;
const PLUGIN = 'hostpath';
const STEPS = ['submit+schedule', 'to the node', 'claim + setup', 'NodeStage/Publish', 'task start', 'status back'] as const;
type Step = (typeof STEPS)[number];

interface Sample {
  allocId: string;
  /** The run's window on the monotonic clock, microseconds. */
  window: [number, number];
  /** The same on the wall clock, milliseconds (the agent's log times). */
  wall: [number, number];
  totalMs: number;
  submitMs: number;
  steps: Record<Step, number>;
  controllerPublishMs: number;
  /** gRPC calls the agent sent the plugin during the run, by RPC (probes included). */
  csiCalls: Record<string, number>;
  /** CPU ticks the agent (with the children it reaped) and the plugin used during the run. */
  agentTicks: number;
  pluginTicks: number;
}

/** Nomad's times are nanoseconds since the epoch; the bench's clock is ms. */
const nsToMs = (ns: number): number => ns / 1e6;

/** CPU time (utime + stime, with reaped children's) of a process so far, in clock ticks; 0 once gone. */
function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  } catch {
    return 0;
  }
}

/** The pid of the process whose command line contains `marker`. */
function pidWith(marker: string): number | undefined {
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(marker)) return Number(e);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

const now = (): number => performance.timeOrigin + performance.now();
const load = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');

function workload(id: string): Record<string, unknown> {
  return {
    id,
    type: 'service',
    groups: [
      {
        name: 'main',
        volumes: { data: { type: 'csi', source: 'bench-vol', accessMode: 'single-node-writer', attachmentMode: 'file-system' } },
        tasks: [
          {
            name: 'main',
            driver: 'raw_exec',
            config: { command: '/bin/sleep', args: ['3600'] },
            volumeMounts: [{ volume: 'data', destination: '/data' }],
            resources: { cpuMhz: 50, memoryMb: 32 },
          },
        ],
      },
    ],
  };
}

export default async function csiAlloc(dir: string): Promise<Record<string, unknown>> {
  const agentDir = join(dir, 'agent');
  mkdirSync(agentDir);
  const logFile = process.env['BENCH_CSI_ALLOC_LOG'];
  const prof = process.env['BENCH_CSI_ALLOC_CPU_PROF'];
  const agent = new AgentRun(['--dev', '--data-dir', agentDir, '--port', String(await freePort()), '--log-level', logFile ? 'debug' : 'warn'], {
    nodeArgs: prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [],
  });
  await agent.start();
  const call = agentApi(agent);
  /** Sum (ms) of the agent's CSI call durations to the plugin, and how many calls, by RPC. */
  const csiMs = async (): Promise<{ ms: Record<string, number>; calls: Record<string, number> }> => {
    const res = await fetch(`${agent.addr}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${agent.token}` } });
    const out = { ms: {} as Record<string, number>, calls: {} as Record<string, number> };
    for (const line of (await res.text()).split('\n')) {
      const m = /^berth_csi_call_duration_seconds_(sum|count)\{([^}]*)\} (\S+)$/.exec(line);
      if (!m) continue;
      const labels = Object.fromEntries([...(m[2] as string).matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
      if (labels['plugin'] !== PLUGIN) continue;
      const rpc = labels['rpc'] ?? '';
      if (m[1] === 'sum') out.ms[rpc] = (out.ms[rpc] ?? 0) + Number(m[3]) * 1000;
      else out.calls[rpc] = (out.calls[rpc] ?? 0) + Number(m[3]);
    }
    return out;
  };

  /** The timed runs' wall-clock windows, for the log's request counts. */
  const timed: Sample[] = [];
  try {
    // The plugin's data dir names its process (pidWith below).
    await call('PUT', '/v1/jobs', registration(hostpathPluginJob({ id: 'hostpath-plugin', driver: 'raw_exec', dataDir: join(dir, 'hp'), pluginId: PLUGIN })));
    await until('the plugin healthy', async () => {
      const p = await call<{ ControllersHealthy: number; NodesHealthy: number }>('GET', `/v1/plugin/csi/${PLUGIN}`).catch(() => undefined);
      return !!p && p.body.ControllersHealthy >= 1 && p.body.NodesHealthy >= 1;
    });
    const capabilities = [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }];
    await call('PUT', '/v1/volume/csi/bench-vol/create', volumeRequest('bench-vol', { pluginId: PLUGIN, name: 'bench-vol', capabilities }));

    const agentPid = agent.child!.pid!;
    const pluginPid = pidWith(join(dir, 'hp'));
    if (!pluginPid) throw new Error('the plugin process is not found');
    const runOne = async (jobId: string): Promise<Sample> => {
      const before = await csiMs();
      const ticks0 = [cpuTicks(agentPid), cpuTicks(pluginPid)] as const;
      const mono0 = Number(process.hrtime.bigint() / 1000n);
      const t0 = now();
      const posted = await call('PUT', '/v1/jobs', registration(workload(jobId)));
      const submitted = now();
      let index = posted.index;
      let allocId: string | undefined;
      while (!allocId) {
        const r = await call<AllocationListStub[]>('GET', `/v1/job/${jobId}/allocations?index=${index}&wait=60s`);
        allocId = r.body[0]?.ID;
        index = r.index;
      }
      let alloc: Allocation;
      for (;;) {
        const r = await call<Allocation>('GET', `/v1/allocation/${allocId}?index=${index}&wait=60s`);
        alloc = r.body;
        index = r.index;
        if (alloc.ClientStatus === 'running') break;
        if (alloc.ClientStatus !== 'pending') throw new Error(`allocation ${allocId} is ${alloc.ClientStatus}: ${JSON.stringify(alloc.TaskStates)}`);
      }
      const running = now();
      const mono1 = Number(process.hrtime.bigint() / 1000n);
      const ticks1 = [cpuTicks(agentPid), cpuTicks(pluginPid)] as const;
      const after = await csiMs();
      const spent = (rpc: string): number => (after.ms[rpc] ?? 0) - (before.ms[rpc] ?? 0);
      const csiCalls = Object.fromEntries(Object.keys(after.calls).map((rpc) => [rpc, (after.calls[rpc] ?? 0) - (before.calls[rpc] ?? 0)]).filter(([, n]) => (n as number) > 0));
      const events = Object.values(alloc.TaskStates ?? {})[0]?.Events ?? [];
      const at = (type: string): number => {
        const e = events.find((x) => x.Type === type);
        if (!e) throw new Error(`allocation ${allocId} has no "${type}" event: ${JSON.stringify(events)}`);
        return nsToMs(e.Time);
      };
      const created = nsToMs(alloc.CreateTime);
      const received = at('Received');
      const mounted = at('Volume Mounted');
      const started = at('Started');
      const nodeCalls = spent('NodeStageVolume') + spent('NodePublishVolume');
      return {
        allocId,
        window: [mono0, mono1],
        wall: [t0, running],
        totalMs: running - t0,
        submitMs: submitted - t0,
        steps: {
          'submit+schedule': created - t0,
          'to the node': received - created,
          'claim + setup': mounted - received - nodeCalls,
          'NodeStage/Publish': nodeCalls,
          'task start': started - mounted,
          'status back': running - started,
        },
        controllerPublishMs: spent('ControllerPublishVolume'),
        csiCalls,
        agentTicks: ticks1[0] - ticks0[0],
        pluginTicks: ticks1[1] - ticks0[1],
      };
    };

    const samples: Sample[] = timed;
    const loadBefore = load();
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const jobId = `csi-alloc-${i}`;
      const s = await runOne(jobId);
      if (i >= WARMUP) samples.push(s);
      await call('DELETE', `/v1/job/${jobId}?purge=true`);
      await until('the claim released', async () => (await call<{ BerthClaims?: unknown[] }>('GET', '/v1/volume/csi/bench-vol')).body.BerthClaims?.length === 0);
      // And the allocation collected on the node (its directory gone), so that no teardown overlaps the next run.
      await until('the allocation collected', () => !existsSync(join(agentDir, 'client', 'alloc', s.allocId)));
    }
    const loadAfter = load();
    if (prof) writeFileSync(join(prof, 'windows.json'), JSON.stringify(samples.map((s) => s.window)));

    const fig = (ms: number[]): { p50: number; p99: number } => {
      const s = summarize(ms.map((x) => BigInt(Math.round(x * 1e6))));
      return { p50: round(s.p50Us / 1000), p99: round(s.p99Us / 1000) };
    };
    const total = fig(samples.map((s) => s.totalMs));
    const submit = fig(samples.map((s) => s.submitMs));
    const steps = Object.fromEntries(STEPS.map((k) => [k, fig(samples.map((s) => s.steps[k]))])) as Record<Step, { p50: number; p99: number }>;
    const controllerPublish = fig(samples.map((s) => s.controllerPublishMs));
    const tickMs = 1000 / (Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100);
    const cpuMs = (ticks: (s: Sample) => number): number => round((samples.reduce((a, s) => a + ticks(s), 0) * tickMs) / samples.length);
    const cpu = { agentMs: cpuMs((s) => s.agentTicks), pluginMs: cpuMs((s) => s.pluginTicks) };
    console.log(`  alloc with a CSI volume, POST /v1/jobs -> GET /v1/allocation/:id running: p50 ${total.p50} ms, p99 ${total.p99} ms (${samples.length} runs; load ${loadBefore} -> ${loadAfter})`);
    console.log(`    the POST itself answered: p50 ${submit.p50} ms, p99 ${submit.p99} ms`);
    for (const k of STEPS) console.log(`    ${k.padEnd(18)} p50 ${String(steps[k].p50).padStart(6)} ms, p99 ${String(steps[k].p99).padStart(6)} ms`);
    console.log(`    (the claim's ControllerPublishVolume, inside claim + setup: p50 ${controllerPublish.p50} ms)`);
    console.log(`    CPU per run (mean): agent ${cpu.agentMs} ms (with the mount processes it ran), plugin ${cpu.pluginMs} ms`);
    const calls: Record<string, number> = {};
    for (const smp of samples) for (const [rpc, n] of Object.entries(smp.csiCalls)) calls[rpc] = (calls[rpc] ?? 0) + n;
    const callsPerRun = Object.fromEntries(Object.entries(calls).map(([rpc, n]) => [rpc, round(n / samples.length)]));
    console.log(`    CSI calls to the plugin per run (mean): ${Object.entries(callsPerRun).map(([rpc, n]) => `${rpc} ${n}`).join(', ')}`);
    return {
      runs: samples.length,
      apiToRunningMs: total,
      submitMs: submit,
      stepsMs: steps,
      controllerPublishMs: controllerPublish,
      cpuPerRunMs: cpu,
      csiCallsPerRun: callsPerRun,
      load: { before: loadBefore, after: loadAfter },
    };
  } finally {
    await agent.stop('SIGINT');
    if (logFile) {
      copyFileSync(join(agentDir, 'agent.log'), logFile);
      if (timed.length) console.log(`    HTTP requests per run (mean, from the agent's log): ${httpPerRun(logFile, timed.map((t) => t.wall))}`);
    }
  }
}

/** The agent's HTTP requests inside the timed runs' wall-clock windows, by caller and route, per run. */
function httpPerRun(logFile: string, windows: ReadonlyArray<[number, number]>): string {
  const counts = new Map<string, number>();
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('"component":"http"')) continue;
    let rec: { time?: number; route?: string; method?: string; caller?: string; ms?: number };
    try {
      rec = JSON.parse(line) as typeof rec;
    } catch {
      continue;
    }
    // A request is logged when it answers: count it in the window it started in.
    const started = (rec.time ?? 0) - (rec.ms ?? 0);
    if (!windows.some(([a, b]) => started >= a && started <= b)) continue;
    const key = `${rec.caller ?? '?'} ${rec.method ?? ''} ${rec.route ?? ''}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${round(n / windows.length)}`).join('; ');
}
