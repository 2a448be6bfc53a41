// 200 allocations placed at once on one node -> all running (section
// `node-burst` of `npm run bench`): the node's side of issue 40's burst
// alone. A server agent and a client agent, each its own process (`berth
// agent --server`, `berth agent --client`: the client's CPU is then the
// node's work alone, none of the API's or the scheduler's); one job of N
// (BENCH_NODE_BURST_ALLOCS, 200) allocations like the concurrent-submit
// bench's jobs (raw_exec /bin/sleep 3600, cpu 5 MHz, memory 10 MB), which
// the scheduler places in one pass (200 jobs of one each are placed over a
// second or more, the node's work mixed with the server's). Each allocation
// goes through the node as one of 200 jobs would; they share the job's one
// copy. From the registration on: the placed/running
// timeline as GET /v1/allocations lists it (every 100 ms), and from each
// allocation's own figures (CreateTime; its task's StartedAt, both from the
// agents' clock on this one machine) placed -> task started for the first,
// the median and the last allocation; the client agent's CPU (utime +
// stime, /proc/<pid>/stat) from the release until all run, per allocation,
// and its event loop's delay. Then every job is stopped and purged and the
// bench waits until every allocation was collected (directories, mounts and
// cgroups go with them).
//
// BENCH_NODE_BURST_CPU_PROF=dir runs the client agent under `node
// --cpu-prof` writing its profile there; BENCH_NODE_BURST_LOG=file copies
// the client agent's debug log there; BENCH_NODE_BURST_TASKS_PER_EXECUTOR=n
// sets its `tasks_per_executor`; BENCH_NODE_BURST_BERTH=path/to/bin/berth.js
// runs another build's agents (an older commit's, built in its own copy) to
// compare two builds in the same minute. Beside the client agent's CPU: the
// executors' own CPU (and minor faults) per task, read while all run
// (bench/_submit-burst.ts executorCost). The machine is shared: the load average is
// printed beside the figures; the CPU per allocation is what the load bends
// least.

import { randomBytes } from 'node:crypto';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentRun, freePort } from '../test/support/agent-run.js';
import { eventually } from '../test/support/eventually.js';
import { registration } from '../test/support/nomad-jobs.js';
import { round } from './_stats.js';
import { cpuMs, executorCost, executorsOf, formatProgress, load, quantile } from './_submit-burst.js';
import type { AllocationListStub } from '../src/api/index.js';

const N = Number(process.env['BENCH_NODE_BURST_ALLOCS'] ?? 200);

function job(id: string): Record<string, unknown> {
  return {
    id,
    type: 'service',
    groups: [{ name: 'g', count: N, tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['3600'] }, resources: { cpuMhz: 5, memoryMb: 10 } }] }],
  };
}

const now = (): number => performance.timeOrigin + performance.now();

export default async function bench(dir: string): Promise<Record<string, unknown>> {
  const management = randomBytes(18).toString('base64url');
  const nodeToken = randomBytes(18).toString('base64url');
  const perExecutor = process.env['BENCH_NODE_BURST_TASKS_PER_EXECUTOR'];
  const prof = process.env['BENCH_NODE_BURST_CPU_PROF'];
  const logFile = process.env['BENCH_NODE_BURST_LOG'];
  const berth = process.env['BENCH_NODE_BURST_BERTH'];
  const config = join(dir, 'agent.hcl');
  writeFileSync(
    config,
    [
      `tokens {\n  management = ["${management}"]\n  node = ["${nodeToken}"]\n}`,
      `client {\n  token = "${nodeToken}"\n  options = { "driver.raw_exec.enable" = "1" }${perExecutor ? `\n  tasks_per_executor = ${Number(perExecutor)}` : ''}\n}`,
      '',
    ].join('\n'),
  );
  const server = new AgentRun(['--server', '--data-dir', join(dir, 'server'), '--config', config, '--port', String(await freePort()), '--log-level', 'warn'], berth ? { berth } : {});
  let client: AgentRun | undefined;
  const headers = { authorization: `Bearer ${management}`, 'content-type': 'application/json' };
  try {
    await server.start();
    client = new AgentRun(
      ['--client', '--server-address', server.addr, '--data-dir', join(dir, 'client'), '--config', config, '--port', String(await freePort()), '--log-level', logFile ? 'debug' : 'warn'],
      { nodeArgs: prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [], ...(berth ? { berth } : {}) },
    );
    await client.start();
    const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const res = await fetch(`${server.addr}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status}: ${text}`);
      return JSON.parse(text) as T;
    };
    await eventually('the client agent\'s node ready', async () => (await api<Array<{ Status: string }>>('GET', '/v1/nodes')).some((n) => n.Status === 'ready') || undefined);
    const allocs = (): Promise<AllocationListStub[]> => api<AllocationListStub[]>('GET', '/v1/allocations');
    // The client agent idle (its start done) before the release.
    await sleep(3000);
    const clientPid = client.child!.pid!;
    const loadBefore = load();
    const cpu0 = cpuMs(clientPid);
    const t0 = now();
    await api('PUT', '/v1/jobs', registration(job('nb')));
    const progress: Array<[number, number, number]> = [];
    let cpuRunning = 0;
    let allRunningMs = 0;
    let nodeCost: ReturnType<typeof executorCost> | undefined;
    let list: AllocationListStub[] = [];
    for (;;) {
      list = (await allocs()).filter((a) => a.JobID === 'nb' && a.DesiredStatus === 'run');
      const running = list.filter((a) => a.ClientStatus === 'running').length;
      progress.push([round((now() - t0) / 1000, 2), list.length, running]);
      if (running === N) {
        allRunningMs = now() - t0;
        cpuRunning = cpuMs(clientPid) - cpu0;
        nodeCost = executorCost(executorsOf(clientPid, true));
        break;
      }
      if (now() - t0 > 300_000) throw new Error(`after 300 s only ${running} of ${N} allocations run`);
      await sleep(100);
    }
    const loadDuring = load();
    // Placed -> started from each allocation's own times (ns since the epoch), and the placement's own spread.
    const created = list.map((a) => a.CreateTime / 1e6);
    const startedAt = list.map((a) => Date.parse(Object.values(a.TaskStates ?? {})[0]?.StartedAt ?? '') || NaN);
    const placedAt = Math.min(...created);
    const fromPlaced = startedAt.map((s) => s - placedAt).sort((a, b) => a - b);
    const placementSpreadMs = Math.max(...created) - placedAt;
    const perAlloc = round(cpuRunning / N, 2);
    const figures = {
      allocs: N,
      placementSpreadMs: round(placementSpreadMs),
      firstStartedMs: round(fromPlaced[0]!),
      medianStartedMs: round(quantile(fromPlaced, 0.5)),
      lastStartedMs: round(fromPlaced[fromPlaced.length - 1]!),
      allRunningListedMs: round(allRunningMs),
      clientCpuMs: round(cpuRunning),
      clientCpuMsPerAlloc: perAlloc,
      executors: nodeCost?.executors.processes ?? 0,
      executorCpuMsPerTask: round((nodeCost?.executors.cpuMs ?? 0) / N, 2),
      executorMinorFaultsPerTask: round((nodeCost?.executors.minorFaults ?? 0) / N, 1),
      load: { before: loadBefore, during: loadDuring },
      ...(perExecutor ? { tasksPerExecutor: Number(perExecutor) } : {}),
    };
    console.log(
      `  ${N} allocations placed at once (within ${figures.placementSpreadMs} ms) on one client agent: task started after placement: first ${figures.firstStartedMs} ms, median ${figures.medianStartedMs} ms, last ${figures.lastStartedMs} ms; the API listed all running ${figures.allRunningListedMs} ms after the release (load ${loadBefore} -> ${loadDuring})`,
    );
    console.log(`  client agent CPU from the release until all ran: ${figures.clientCpuMs} ms (${perAlloc} ms an allocation)`);
    console.log(`  executors (${figures.executors}, from their start): CPU ${figures.executorCpuMsPerTask} ms and ${figures.executorMinorFaultsPerTask} minor faults a task`);
    const byTenth = new Map<number, number>();
    for (const s of fromPlaced) byTenth.set(Math.ceil(s / 100) / 10, (byTenth.get(Math.ceil(s / 100) / 10) ?? 0) + 1);
    let cum = 0;
    console.log(`  tasks started by s after placement (cumulative): ${[...byTenth].map(([t, n]) => `${t} ${(cum += n)}`).join(', ')}`);
    console.log(`  placed / running as the API listed them, by s after the release: ${formatProgress(progress)}`);
    if (logFile) copyFileSync(join(dir, 'client', 'agent.log'), logFile);

    await api('DELETE', '/v1/job/nb?purge=true');
    await eventually('every allocation collected', async () => (await allocs()).length === 0 || undefined, { timeoutMs: 180_000, intervalMs: 500 });
    await eventually('every executor that ran a task gone', () => executorsOf(clientPid, true).length === 0 || undefined, { timeoutMs: 120_000, intervalMs: 500 });
    return figures;
  } finally {
    await client?.stop('SIGINT');
    await server.stop('SIGINT');
  }
}
