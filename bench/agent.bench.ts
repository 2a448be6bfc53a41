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
//    `berth_csi_call_duration_seconds` histogram on the agent's /metrics
//    (periodic Probe and fingerprint calls excluded). Between runs the job is
//    stopped and its claim released (not timed).
// 2. Plugin job run -> `plugin status` shows it healthy (one controller and
//    one node instance), p50 over BENCH_AGENT_PLUGIN_RUNS (5) new plugin IDs.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentRun, BERTH, freePort, mountsUnder, ok, until } from '../test/support/agent-run.js';
import { eventually, type NotYet } from '../test/support/eventually.js';
import { round, summarize } from './_stats.js';

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

export default async function agentBench(dir: string): Promise<Record<string, unknown>> {
  const agentDir = join(dir, 'agent');
  mkdirSync(agentDir);
  const agent = new AgentRun(['--dev', '--data-dir', agentDir, '--port', String(await freePort()), '--log-level', 'warn']);
  await agent.start();
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(agent.addr + path, {
      method,
      headers: { authorization: `Bearer ${agent.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  };
  const pluginSeconds = async (plugin: string): Promise<number> => {
    const res = await fetch(`${agent.addr}/metrics`, { headers: { authorization: `Bearer ${agent.token}` } });
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
    const p = await api<{ controllersHealthy: number; nodesHealthy: number }>('GET', `/v1/plugin/csi/${id}`).catch(() => undefined);
    return !!p && p.controllersHealthy >= 1 && p.nodesHealthy >= 1;
  };
  const runningAlloc = async (job: string): Promise<string | undefined> =>
    (await api<Array<{ id: string; clientStatus: string; desiredStatus: string }>>('GET', `/v1/job/${job}/allocations`)).find((a) => a.desiredStatus === 'run' && a.clientStatus === 'running')?.id;
  // Polls often: the figure is the time to healthy, so the wait must not blur it.
  const poll = <T>(what: string, fn: () => Promise<T>): Promise<Exclude<T, NotYet>> => eventually(what, fn, { timeoutMs: 60_000, intervalMs: 5 });

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
    console.log(`  plugin job run -> plugin status healthy: p50 ${round(plugin.p50Us / 1000)} ms, p99 ${round(plugin.p99Us / 1000)} ms (${plugin.n} plugins)`);

    // 1. Workloads with one CSI volume of the first (warm) plugin.
    const volFile = join(dir, 'volume.hcl');
    writeFileSync(volFile, `id = "bench-vol"\nplugin_id = "hp-bench-0"\ncapacity_min = "1MiB"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\n`);
    ok(await agent.cli(['volume', 'create', volFile]), 'volume create');
    const jobFile = join(dir, 'workload.json');
    writeFileSync(
      jobFile,
      JSON.stringify({
        id: 'bench-workload',
        type: 'service',
        groups: [
          {
            name: 'main',
            volumes: { data: { type: 'csi', source: 'bench-vol', accessMode: 'single-node-writer', attachmentMode: 'file-system' } },
            tasks: [{ name: 'main', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['3600'] }, volumeMounts: [{ volume: 'data', destination: '/data' }], resources: { cpuMhz: 50, memoryMb: 32 } }],
          },
        ],
      }),
    );
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
      await until('the claim released', async () => (await api<{ claims?: unknown[] }>('GET', '/v1/volume/csi/bench-vol')).claims?.length === 0, 60_000);
    }
    const workload = summarize(totalNs);
    const cli = summarize(cliNs);
    const sortedShares = [...shares].sort((a, b) => a - b);
    const shareP50 = round((sortedShares[Math.floor(sortedShares.length / 2)] ?? 0) * 100);
    console.log(`  job run (one CSI volume) -> task running: p50 ${round(workload.p50Us / 1000)} ms, p99 ${round(workload.p99Us / 1000)} ms (${workload.n} runs)`);
    console.log(`    of which plugin calls (agent /metrics CSI histogram): p50 ${shareP50} %`);
    console.log(`    the CLI process alone (node startup, parse, submit): p50 ${round(cli.p50Us / 1000)} ms`);

    ok(await agent.cli(['volume', 'delete', 'bench-vol']), 'volume delete');
    const stopped = await agent.stop('SIGINT');
    const leftMounts = mountsUnder(dir).length;
    console.log(`  agent stopped with SIGINT: exit ${stopped.code}, ${leftMounts} mounts left`);
    return {
      jobRunToRunningMs: { p50: round(workload.p50Us / 1000), p99: round(workload.p99Us / 1000), n: workload.n },
      pluginCallSharePercentP50: shareP50,
      cliProcessMs: { p50: round(cli.p50Us / 1000), p99: round(cli.p99Us / 1000) },
      pluginJobToHealthyMs: { p50: round(plugin.p50Us / 1000), p99: round(plugin.p99Us / 1000), n: plugin.n },
      agentExitCode: stopped.code,
      mountsLeft: leftMounts,
    };
  } finally {
    await agent.stop('SIGINT');
  }
}
