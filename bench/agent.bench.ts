// The agent as a user drives it (section `agent` of `npm run bench`): a warm
// `berth agent --dev` in its own process, the real CLI, the real hostpath
// plugin as a raw_exec job, real mounts.
//
// 1. `berth job run --detach` of a workload with one CSI volume -> its task
//    running, p50/p99 over BENCH_AGENT_RUNS (50) runs. The clock starts when
//    the CLI process is spawned and stops when the API first shows the
//    allocation running (polled every 5 ms). The plugin share is the time
//    the agent spent in CSI calls for that run (ControllerPublish,
//    NodeStage, NodePublish...), read as the delta of the
//    `berth_csi_call_duration_seconds` histogram on the agent's /v1/metrics
//    (periodic Probe and fingerprint calls excluded). Between runs the job is
//    stopped and its claim released (not timed).
// 2. Plugin job run -> `plugin status` shows it healthy (one controller and
//    one node instance), p50 over BENCH_AGENT_PLUGIN_RUNS (5) new plugin IDs.
// 3. The same two submitted through the HTTP API (PUT /v1/jobs) instead of
//    the CLI: what the agent and the plugin take without a CLI process.
// 4. Memory of the agent with 10 plugins and 50 tasks: PSS (shared pages
//    split among their users, /proc/<pid>/smaps_rollup) of the agent, of the
//    task executors and of the plugin processes.
// CLI figures also print their ratio to a bare `node -e 0` of the same run.

import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentRun, BERTH, freePort, mountsUnder, ok, until } from '../test/support/agent-run.js';
import { eventually, type NotYet } from '../test/support/eventually.js';
import { agentApi } from './_agent-api.js';
import { round, summarize } from './_stats.js';
import { registration } from '../test/support/nomad-jobs.js';
import type { AllocationListStub } from '../src/api/index.js';

const RUNS = Number(process.env['BENCH_AGENT_RUNS'] ?? 50);
const PLUGIN_RUNS = Number(process.env['BENCH_AGENT_PLUGIN_RUNS'] ?? 5);
const BACKGROUND_RPCS = new Set(['Probe', 'GetPluginInfo', 'GetPluginCapabilities', 'NodeGetInfo', 'NodeGetCapabilities', 'ControllerGetCapabilities']);

function pluginJob(jobId: string, pluginId: string, dataDir: string): Record<string, unknown> {
  return {
    id: jobId,
    type: 'system',
    groups: [
      {
        name: 'plugin',
        tasks: [
          {
            name: 'plugin',
            driver: 'raw_exec',
            config: { command: process.execPath, args: [BERTH, 'plugin', 'hostpath', '--node-id', 'bench-node', '--data-dir', dataDir, '--log-level', 'warn'] },
            csiPlugin: { id: pluginId, type: 'monolith', mountDir: '/csi', healthTimeout: '30s' },
            resources: { cpuMhz: 100, memoryMb: 128 },
          },
        ],
      },
    ],
  };
}

/** p50 wall time of a bare `node -e 0`, ms. */
function bareNodeMs(): number {
  const ns: bigint[] = [];
  for (let i = 0; i < 11; i++) {
    const start = process.hrtime.bigint();
    spawnSync(process.execPath, ['-e', '0']);
    ns.push(process.hrtime.bigint() - start);
  }
  return round(summarize(ns).p50Us / 1000);
}

/** PSS of a process, KiB (0 once gone). */
function pssKiB(pid: number): number {
  try {
    return Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Every descendant of `root` with its command line. */
function descendants(root: number): Array<{ pid: number; cmd: string }> {
  const parent = new Map<number, number>();
  const cmd = new Map<number, string>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      parent.set(Number(e), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      cmd.set(Number(e), readFileSync(`/proc/${e}/cmdline`, 'utf8').replaceAll('\0', ' '));
    } catch {
      // gone
    }
  }
  const out: Array<{ pid: number; cmd: string }> = [];
  const walk = (pid: number): void => {
    for (const [child, p] of parent) if (p === pid) {
      out.push({ pid: child, cmd: cmd.get(child) ?? '' });
      walk(child);
    }
  };
  walk(root);
  return out;
}

export default async function agentBench(dir: string): Promise<Record<string, unknown>> {
  const agentDir = join(dir, 'agent');
  mkdirSync(agentDir);
  const agent = new AgentRun(['--dev', '--data-dir', agentDir, '--port', String(await freePort()), '--log-level', 'warn']);
  await agent.start();
  const call = agentApi(agent);
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => (await call<T>(method, path, body)).body;
  const pluginSeconds = async (plugin: string): Promise<number> => {
    const res = await fetch(`${agent.addr}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${agent.token}` } });
    let sum = 0;
    for (const line of (await res.text()).split('\n')) {
      const m = /^berth_csi_call_duration_seconds_sum\{([^}]*)\} (\S+)$/.exec(line);
      if (!m) continue;
      const labels = Object.fromEntries([...(m[1] as string).matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
      if (labels['plugin'] === plugin && !BACKGROUND_RPCS.has(labels['rpc'] ?? '')) sum += Number(m[2]);
    }
    return sum;
  };
  const healthy = async (id: string): Promise<boolean> => {
    const p = await api<{ ControllersHealthy: number; NodesHealthy: number }>('GET', `/v1/plugin/csi/${id}`).catch(() => undefined);
    return !!p && p.ControllersHealthy >= 1 && p.NodesHealthy >= 1;
  };
  const runningAlloc = async (job: string): Promise<string | undefined> =>
    (await api<AllocationListStub[]>('GET', `/v1/job/${job}/allocations`)).find((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running')?.ID;
  // Polls often: the figure is the time to healthy, so the wait must not blur it.
  const poll = <T>(what: string, fn: () => Promise<T>, timeoutMs = 60_000): Promise<Exclude<T, NotYet>> => eventually(what, fn, { timeoutMs, intervalMs: 5 });

  const bare = bareNodeMs();
  const ratio = (ms: number): string => `${round(ms / bare, 2)}x bare node (${bare} ms)`;
  try {
    // 2 first: each plugin job is a new plugin ID, timed from `berth job run` to healthy.
    const pluginNs: bigint[] = [];
    for (let i = 0; i < PLUGIN_RUNS; i++) {
      const id = `hp-bench-${i}`;
      const file = join(dir, `${id}.json`);
      writeFileSync(file, JSON.stringify(pluginJob(id, id, join(dir, `hp-${i}`))));
      const start = process.hrtime.bigint();
      const run = agent.cli(['job', 'run', '--detach', file]);
      await poll(`plugin ${id} healthy`, () => healthy(id));
      pluginNs.push(process.hrtime.bigint() - start);
      ok(await run, `job run ${id}`);
      if (i > 0) ok(await agent.cli(['job', 'stop', '--purge', id]), `job stop ${id}`);
    }
    const plugin = summarize(pluginNs);
    console.log(`  plugin job run -> plugin status healthy: p50 ${round(plugin.p50Us / 1000)} ms, p99 ${round(plugin.p99Us / 1000)} ms (${plugin.n} plugins), ${ratio(plugin.p50Us / 1000)}`);

    // 3a. The same through the API.
    const apiPluginNs: bigint[] = [];
    for (let i = 0; i < PLUGIN_RUNS; i++) {
      const id = `hp-api-${i}`;
      const start = process.hrtime.bigint();
      await api('PUT', '/v1/jobs', registration(pluginJob(id, id, join(dir, `hp-api-${i}`))));
      await poll(`plugin ${id} healthy`, () => healthy(id));
      apiPluginNs.push(process.hrtime.bigint() - start);
      await api('DELETE', `/v1/job/${id}?purge=true`);
    }
    const apiPlugin = summarize(apiPluginNs);
    console.log(`  plugin job submitted (HTTP API) -> healthy in the API: p50 ${round(apiPlugin.p50Us / 1000)} ms, p99 ${round(apiPlugin.p99Us / 1000)} ms (${apiPlugin.n} plugins)`);

    // 1. Workloads with one CSI volume of the first (warm) plugin.
    const volFile = join(dir, 'volume.hcl');
    writeFileSync(volFile, `id = "bench-vol"\nplugin_id = "hp-bench-0"\ncapacity_min = "1MiB"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\n`);
    ok(await agent.cli(['volume', 'create', volFile]), 'volume create');
    const jobFile = join(dir, 'workload.json');
    const workloadJob = {
        id: 'bench-workload',
        type: 'service',
        groups: [
          {
            name: 'main',
            volumes: { data: { type: 'csi', source: 'bench-vol', accessMode: 'single-node-writer', attachmentMode: 'file-system' } },
            tasks: [{ name: 'main', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['3600'] }, volumeMounts: [{ volume: 'data', destination: '/data' }], resources: { cpuMhz: 50, memoryMb: 32 } }],
          },
        ],
    };
    writeFileSync(jobFile, JSON.stringify(workloadJob));
    const totalNs: bigint[] = [];
    const shares: number[] = [];
    const cliNs: bigint[] = [];
    for (let i = 0; i < RUNS; i++) {
      const before = await pluginSeconds('hp-bench-0');
      const start = process.hrtime.bigint();
      const run = agent.cli(['job', 'run', '--detach', jobFile]).then((r) => ({ r, end: process.hrtime.bigint() }));
      await poll('the workload running', () => runningAlloc('bench-workload'));
      const total = process.hrtime.bigint() - start;
      const { r, end } = await run;
      ok(r, 'job run workload');
      cliNs.push(end - start);
      const spent = (await pluginSeconds('hp-bench-0')) - before;
      totalNs.push(total);
      shares.push(spent / (Number(total) / 1e9));
      await api('DELETE', '/v1/job/bench-workload?purge=true');
      await until('the claim released', async () => (await api<{ BerthClaims?: unknown[] }>('GET', '/v1/volume/csi/bench-vol')).BerthClaims?.length === 0, 60_000);
    }
    const workload = summarize(totalNs);
    const cli = summarize(cliNs);
    const sortedShares = [...shares].sort((a, b) => a - b);
    const shareP50 = round((sortedShares[Math.floor(sortedShares.length / 2)] ?? 0) * 100);
    console.log(`  job run (one CSI volume) -> task running: p50 ${round(workload.p50Us / 1000)} ms, p99 ${round(workload.p99Us / 1000)} ms (${workload.n} runs)`);
    console.log(`    of which plugin calls (agent /v1/metrics CSI histogram): p50 ${shareP50} %`);
    console.log(`    the CLI process alone (node startup, parse, submit): p50 ${round(cli.p50Us / 1000)} ms, ${ratio(cli.p50Us / 1000)}`);

    // 3b. The same workload through the API.
    const apiNs: bigint[] = [];
    for (let i = 0; i < RUNS; i++) {
      const start = process.hrtime.bigint();
      await api('PUT', '/v1/jobs', registration(workloadJob));
      await poll('the workload running', () => runningAlloc('bench-workload'));
      apiNs.push(process.hrtime.bigint() - start);
      await api('DELETE', '/v1/job/bench-workload?purge=true');
      await until('the claim released', async () => (await api<{ BerthClaims?: unknown[] }>('GET', '/v1/volume/csi/bench-vol')).BerthClaims?.length === 0, 60_000);
    }
    const apiWorkload = summarize(apiNs);
    console.log(`  job with one CSI volume submitted (HTTP API) -> running: p50 ${round(apiWorkload.p50Us / 1000)} ms, p99 ${round(apiWorkload.p99Us / 1000)} ms (${apiWorkload.n} runs)`);

    // 4. 10 plugins (hp-bench-0 and 9 more) and 50 tasks.
    for (let i = 1; i < 10; i++) await api('PUT', '/v1/jobs', registration(pluginJob(`hp-mem-${i}`, `hp-mem-${i}`, join(dir, `hp-mem-${i}`))));
    for (let i = 1; i < 10; i++) await poll(`plugin hp-mem-${i} healthy`, () => healthy(`hp-mem-${i}`));
    await api(
      'PUT',
      '/v1/jobs',
      registration({ id: 'bench-many', type: 'service', groups: [{ name: 'g', count: 50, tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['3600'] }, resources: { cpuMhz: 10, memoryMb: 10 } }] }] }),
    );
    await poll('50 tasks running', async () => (await api<AllocationListStub[]>('GET', '/v1/job/bench-many/allocations')).filter((a) => a.ClientStatus === 'running').length >= 50, 120_000);
    const agentPid = agent.child!.pid!;
    const procs = descendants(agentPid);
    const sum = (list: Array<{ pid: number }>): number => round(list.reduce((a, p) => a + pssKiB(p.pid), 0) / 1024);
    const executors = procs.filter((p) => /executor\.[cm]js/.test(p.cmd));
    const plugins = procs.filter((p) => p.cmd.includes(' plugin hostpath '));
    const memory = { agentPssMiB: round(pssKiB(agentPid) / 1024), executorsPssMiB: sum(executors), executors: executors.length, pluginsPssMiB: sum(plugins), plugins: plugins.length };
    console.log(
      `  memory, 10 plugins and 50 tasks (PSS): agent ${memory.agentPssMiB} MiB, ${memory.executors} executors ${memory.executorsPssMiB} MiB, ${memory.plugins} plugin processes ${memory.pluginsPssMiB} MiB`,
    );
    await api('DELETE', '/v1/job/bench-many?purge=true');
    for (let i = 1; i < 10; i++) await api('DELETE', `/v1/job/hp-mem-${i}?purge=true`);

    ok(await agent.cli(['volume', 'delete', 'bench-vol']), 'volume delete');
    const stopped = await agent.stop('SIGINT');
    const leftMounts = mountsUnder(dir).length;
    console.log(`  agent stopped with SIGINT: exit ${stopped.code}, ${leftMounts} mounts left`);
    return {
      jobRunToRunningMs: { p50: round(workload.p50Us / 1000), p99: round(workload.p99Us / 1000), n: workload.n },
      pluginCallSharePercentP50: shareP50,
      cliProcessMs: { p50: round(cli.p50Us / 1000), p99: round(cli.p99Us / 1000) },
      pluginJobToHealthyMs: { p50: round(plugin.p50Us / 1000), p99: round(plugin.p99Us / 1000), n: plugin.n },
      bareNodeMs: bare,
      apiPluginJobToHealthyMs: { p50: round(apiPlugin.p50Us / 1000), p99: round(apiPlugin.p99Us / 1000), n: apiPlugin.n },
      apiJobToRunningMs: { p50: round(apiWorkload.p50Us / 1000), p99: round(apiWorkload.p99Us / 1000), n: apiWorkload.n },
      memory,
      agentExitCode: stopped.code,
      mountsLeft: leftMounts,
    };
  } finally {
    await agent.stop('SIGINT');
  }
}
