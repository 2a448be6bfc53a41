// 200 concurrent job submissions on a dev agent (section `concurrent-submit`
// of `npm run bench`), the load of issue 25: a warm `berth agent --dev` in
// its own process; N (BENCH_SUBMIT_JOBS, 200) jobs {type service, one
// raw_exec task /bin/sleep 3600, cpu 5 MHz, memory 10 MB}, each sent as a
// Nomad JSON job with PUT /v1/jobs (Nomad's registration, as its CLI and Go
// client send it) from its own thread over its own connection (as N separate CLI
// processes would; bench/_submitters.ts: a C program's POSIX threads by
// default, Python threads or Node worker threads with
// BENCH_SUBMIT_HARNESS=threads|workers), all threads started
// first and released at once; then GET /v1/allocations every 200 ms until
// every allocation runs.
//
// Figures: the submit latency each caller sees (p50/p99/max), the time from
// the release until the API lists every allocation running, the executors'
// memory (PSS, /proc/<pid>/smaps_rollup) with all N tasks running, the
// agent's RSS idle and after every job was stopped, purged and its
// allocation collected, and the machine's load average (the machine is
// shared). BENCH_SUBMIT_CPU_PROF=dir runs the agent under `node --cpu-prof`
// writing its profile there; BENCH_SUBMIT_TASKS_PER_EXECUTOR=n sets the
// agent's `tasks_per_executor` (1: an executor process per task, as before).
// Each agent RSS figure comes with where it lives (malloc arenas, V8's
// heap, stacks, files: bench/_proc-memory.ts) and V8's own figures;
// BENCH_SUBMIT_MALLOC_PROBE=1 (needs gdb) then asks the agent's glibc how
// much free memory it holds and trims it; BENCH_SUBMIT_NODE_ARGS='--flag ...'
// passes node flags to the agent (to try V8 settings one at a time);
// BENCH_SUBMIT_HEAP_SNAPSHOTS=dir has the agent write a heap snapshot there
// when idle and once all is collected (compare them in Chrome DevTools);
// BENCH_SUBMIT_ANSWER_TIMES=1 prints when the answers came (ms after the release, at
// the first, 10 %, 25 %, 50 %, 75 %, 90 % and the last) and when the threads sent;
// BENCH_SUBMIT_TIMELINE=1 prints when the burst's allocations passed each
// stage (evaluated, placed, runner built, set up, started, running written),
// read from the agent's own records once all run (bench/_burst-timeline.ts);
// BENCH_SUBMIT_LOG=file runs the agent at `--log-level debug` and copies its
// log there once all run (every step of every allocation on the agent's clock);
// BENCH_SUBMIT_API_WORKERS=n sets the agent's `api_workers`, BENCH_SUBMIT_API_READERS=n its `api_readers`;
// BENCH_SUBMIT_BERTH=path/to/bin/berth.js runs another build's agent (an
// older commit's, built in its own copy) to compare two builds.
//
// The agent's CPU time (utime + stime, /proc/<pid>/stat) from the release
// until every PUT was answered, and until every allocation ran, per job: a
// figure the shared machine's load bends far less than the latencies; and
// its minor page faults until all answered, per job (the main thread's
// apart: a first touch of a page costs tens of microseconds here). The
// node's side of the same, read once every allocation runs: the executors'
// CPU (their Node starts included) and the tasks' (each from its fork: the
// task's own exec, and the join wrapper's where one is used), with their
// minor page faults, per task (bench/_submit-burst.ts executorCost). And
// how many allocations the scheduler wrote before the burst's last
// registration (an allocation's CreateIndex below a job's JobModifyIndex):
// placement mid-burst, which doubles the CPU a registration costs.
// BENCH_SUBMIT_SPLIT=1 runs the same load against a server agent and a
// client agent in two processes (the dev agent's parts apart: what taking
// the client off the API's event loop would buy), and prints each one's CPU.
// BENCH_SUBMIT_FLOOR=1 first sends the same burst twice to a bare node:http
// server that answers at once (cold, then warm): the latency the threads, the
// machine and a Node server doing nothing give. On this quiet machine the
// Node workers' floor is ~0.9 s (p50), the Python threads' ~90 ms, the POSIX
// threads' ~70 ms cold and 20-45 ms warm (the bare server's own: accepting
// and answering 200 connections on one event loop): the harness is printed
// beside each figure.
//
// NOMAD_BIN=/path/to/nomad also sends the same burst (the same harness, the
// same request bodies: Nomad JSON jobs in datacenter dc1) to a Nomad dev
// agent in the same run, right after Berth's (bench/_nomad-dev.ts: free
// ports, raw_exec enabled, no per-client connection limit, its data in the
// bench's directory; stopped with every task it started), polls its
// /v1/allocations the same way (bench/_submit-burst.ts measures both sides)
// and prints both side by side: submit p50/p99/max, all answered, all
// running, connections reset and other errors, each agent's CPU, the load
// before and during each side. BENCH_SUBMIT_RUNS=n repeats the pair n times
// and prints each run (the memory figures are the first run's alone).

import { randomBytes } from 'node:crypto';
import { copyFileSync, readFileSync, readdirSync, mkdirSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import { AgentRun, freePort } from '../test/support/agent-run.js';
import { eventually } from '../test/support/eventually.js';
import { registration } from '../test/support/nomad-jobs.js';
import { formatBreakdown, mallocProbe, openSockets, rssBreakdown, v8Figures } from './_proc-memory.js';
import { burstTimeline, formatTimeline, type TimelineStage } from './_burst-timeline.js';
import { startNomadDev } from './_nomad-dev.js';
import { round } from './_stats.js';
import { cpuMs, executorCost, minorFaults, executorsOf, formatProgress, load, quantile, runBurst, type BurstFigures } from './_submit-burst.js';
import { describeSubmitters, startSubmitters, submitterKind, type Burst, type SubmitterKind } from './_submitters.js';
import type { AllocationListStub, JobListStub } from '../src/api/index.js';

const JOBS = Number(process.env['BENCH_SUBMIT_JOBS'] ?? 200);

/** The burst's request bodies, one Nomad JSON job each (Nomad's JobRegisterRequest): burst-0 .. burst-(JOBS-1). */
const bodies = (): string[] => Array.from({ length: JOBS }, (_, i) => JSON.stringify(registration(job(`burst-${i}`))));

// datacenters dc1 (both dev agents' node's): Nomad 1.1.2 knows no wildcard datacenter, and the same bytes go to both.
function job(id: string): Record<string, unknown> {
  return {
    id,
    type: 'service',
    datacenters: ['dc1'],
    groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['3600'] }, resources: { cpuMhz: 5, memoryMb: 10 } }] }],
  };
}


/** PSS of a process, KiB (0 once gone). */
function pssKiB(pid: number): number {
  try {
    return Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

function rssMiB(pid: number): number {
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return round(kb / 1024);
}

/**
 * DELETE `url` over a connection of its own that closes after the answer,
 * as `berth job stop` would: a burst of fetch() calls would leave the agent
 * holding 200 idle keep-alive connections (and their memory) for the
 * server's keep-alive timeout, counted in the "collected" RSS figure.
 */
function stopAndPurge(url: string, authorization: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'DELETE', agent: false, headers: { authorization, connection: 'close' } }, (res) => {
      res.resume().on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`DELETE ${url}: ${res.statusCode}`))));
    });
    req.on('error', reject).end();
  });
}

// A server that parses each body and answers at once, in a process of its own: what the harness alone costs.
const BARE_SERVER = `
const server = require('node:http').createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8').on('data', (d) => (body += d)).on('end', () => {
    JSON.parse(body);
    res.setHeader('content-type', 'application/json');
    res.end('{}');
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

interface Floor {
  p50: number;
  p99: number;
  max: number;
  allAnsweredMs: number;
  load: string;
}

/**
 * BENCH_SUBMIT_FLOOR=1: the same burst against a bare node:http server (no
 * Berth), twice: the submit latency the threads, the machine and a Node
 * server that does nothing give, the floor under the agent's figures. The
 * first burst meets the server cold, as the agent's burst meets the agent;
 * the second meets it warm. The load average comes with each.
 */
async function harnessFloor(): Promise<{ cold: Floor; warm: Floor }> {
  const child = spawn(process.execPath, ['-e', BARE_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  let burst: Burst | undefined;
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.setEncoding('utf8').once('data', (d: string) => resolve(Number(d.trim())));
      child.once('error', reject);
    });
    const once = async (): Promise<Floor> => {
      burst = startSubmitters(submitterKind(), `http://127.0.0.1:${port}/v1/jobs`, 'none', bodies());
      await burst.ready;
      const t0 = burst.release();
      const submitted = await burst.results;
      await burst.close();
      const latencies = submitted.map((x) => x.end - x.start);
      return { p50: round(quantile(latencies, 0.5)), p99: round(quantile(latencies, 0.99)), max: round(Math.max(...latencies)), allAnsweredMs: round(Math.max(...submitted.map((x) => x.end)) - t0), load: load() };
    };
    const cold = await once();
    return { cold, warm: await once() };
  } finally {
    await burst?.close();
    child.kill();
  }
}

/**
 * One burst against a Berth dev agent (or, BENCH_SUBMIT_SPLIT=1, a server
 * and a client agent) in `dir`: its figures, printed as they come, and the
 * burst's own (for the side-by-side table). `memory`: also stop, purge and
 * collect every job and take the agent's memory figures (the first run only).
 */
async function berthRun(dir: string, harness: SubmitterKind, memory: boolean): Promise<{ figures: Record<string, unknown>; burst: BurstFigures }> {
  const agentDir = join(dir, 'agent');
  mkdirSync(agentDir, { recursive: true });
  const prof = process.env['BENCH_SUBMIT_CPU_PROF'];
  const snapshots = process.env['BENCH_SUBMIT_HEAP_SNAPSHOTS'];
  const perExecutor = process.env['BENCH_SUBMIT_TASKS_PER_EXECUTOR'];
  const configFile = join(dir, 'agent.hcl');
  const split = process.env['BENCH_SUBMIT_SPLIT'] === '1';
  const managementToken = randomBytes(18).toString('base64url');
  const nodeToken = randomBytes(18).toString('base64url');
  const clientBlock = [
    ...(perExecutor ? [`  tasks_per_executor = ${Number(perExecutor)}`] : []),
    ...(split ? [`  token = "${nodeToken}"`, '  options = { "driver.raw_exec.enable" = "1" }'] : []),
  ];
  const tokens = split ? `tokens {\n  management = ["${managementToken}"]\n  node = ["${nodeToken}"]\n}\n` : '';
  const apiWorkers = process.env['BENCH_SUBMIT_API_WORKERS'];
  const apiReaders = process.env['BENCH_SUBMIT_API_READERS'];
  const serverBlock = [...(apiWorkers ? [`  api_workers = ${Number(apiWorkers)}`] : []), ...(apiReaders ? [`  api_readers = ${Number(apiReaders)}`] : [])];
  writeFileSync(configFile, `${serverBlock.length ? `server {\n${serverBlock.join('\n')}\n}\n` : ''}${tokens}${clientBlock.length ? `client {\n${clientBlock.join('\n')}\n}\n` : ''}`);
  const nodeArgs = [
    ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []),
    ...(snapshots ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshots}`] : []),
    ...(process.env['BENCH_SUBMIT_NODE_ARGS']?.split(' ').filter(Boolean) ?? []),
  ];
  const logFile = process.env['BENCH_SUBMIT_LOG'];
  const berth = process.env['BENCH_SUBMIT_BERTH'];
  const agent = new AgentRun([split ? '--server' : '--dev', '--data-dir', agentDir, '--config', configFile, '--port', String(await freePort()), '--log-level', logFile ? 'debug' : 'warn'], { nodeArgs, ...(berth ? { berth } : {}) });
  await agent.start();
  if (split) agent.token = managementToken;
  const agentPid = agent.child!.pid!;
  // Split: the node agent in its own process, on its own port, talking to the server over HTTP.
  const clientAgent = split
    ? new AgentRun(['--client', '--server-address', agent.addr, '--data-dir', join(dir, 'client-agent'), '--config', configFile, '--port', String(await freePort()), '--log-level', 'warn'], { nodeArgs, ...(berth ? { berth } : {}) })
    : undefined;
  if (clientAgent) {
    await clientAgent.start();
    await eventually('the client agent registered its node', async () => {
      const nodes = (await (await fetch(`${agent.addr}/v1/nodes`, { headers: { authorization: `Bearer ${managementToken}` } })).json()) as Array<{ Status: string }>;
      return nodes.some((n) => n.Status === 'ready') || undefined;
    });
  }
  /** The pid whose children are the executors: the node agent's. */
  const nodePid = clientAgent?.child?.pid ?? agentPid;
  const headers = { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' };
  const allocs = async (): Promise<AllocationListStub[]> => (await (await fetch(`${agent.addr}/v1/allocations`, { headers })).json()) as AllocationListStub[];
  /** The agent's event loop delay (ms) since the previous scrape (prom-client's monitorEventLoopDelay gauges). */
  const loopDelay = async (): Promise<{ p50: number; p99: number; max: number }> => {
    const text = await (await fetch(`${agent.addr}/v1/metrics?format=prometheus`, { headers })).text();
    const at = (name: string): number => round(Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000);
    return { p50: at('nodejs_eventloop_lag_p50_seconds'), p99: at('nodejs_eventloop_lag_p99_seconds'), max: at('nodejs_eventloop_lag_max_seconds') };
  };
  /** Where the agent's RSS lives now, and V8's view of its heap. */
  const memoryNow = async (): Promise<{ rss: ReturnType<typeof rssBreakdown>; v8: Record<string, number>; sockets: number; reclaims: number }> => {
    const rss = rssBreakdown(agentPid);
    const metrics = await (await fetch(`${agent.addr}/v1/metrics?format=prometheus`, { headers })).text();
    return { rss, sockets: openSockets(agentPid), v8: v8Figures(metrics), reclaims: Number(/^berth_agent_memory_reclaims (\S+)$/m.exec(metrics)?.[1] ?? NaN) };
  };
  /** Has the agent write a heap snapshot (a full GC first) and waits until the file is complete. */
  const heapSnapshot = async (): Promise<void> => {
    if (!snapshots) return;
    const before = new Set(readdirSync(snapshots));
    process.kill(agentPid, 'SIGUSR2');
    await eventually('heap snapshot written', () => {
      const f = readdirSync(snapshots).find((n) => !before.has(n) && n.endsWith('.heapsnapshot'));
      return f && readFileSync(join(snapshots, f), 'utf8').trimEnd().endsWith('}') ? f : undefined;
    }, { timeoutMs: 120_000, intervalMs: 1000 });
  };
  try {
    await sleep(2000);
    const idleRssMiB = rssMiB(agentPid);
    // The agent's start is a burst too: its memory reclaimer gives back what the start committed in its first quiet interval.
    // Under --cpu-prof the profiler's own work keeps the agent from ever looking quiet: no reclaim to wait for.
    if (memory && !prof) await eventually('the start reclaimed', async () => (await memoryNow()).reclaims >= 1 || undefined, { timeoutMs: 60_000, intervalMs: 500 });
    await sleep(1000);
    const settledIdleRssMiB = rssMiB(agentPid);
    const idleMemory = await memoryNow();
    await heapSnapshot();

    const b = await runBurst(
      harness,
      {
        addr: agent.addr,
        token: agent.token,
        allocs,
        cpu: () => ({ agent: cpuMs(agentPid), main: cpuMs(agentPid, true), faults: minorFaults(agentPid), mainFaults: minorFaults(agentPid, true), ...(clientAgent ? { node: cpuMs(nodePid) } : {}) }),
        beforeRelease: async () => void (await loopDelay()),
      },
      bodies(),
      { prefix: 'burst-' },
    );
    const delay = await loopDelay();
    // Read before anything else asks the agent for work: the stages each allocation passed, by its own records.
    const timeline: TimelineStage[] | undefined =
      process.env['BENCH_SUBMIT_TIMELINE'] === '1'
        ? await burstTimeline(agent.addr, headers, 'burst-', b.releasedAt, b.submitted.filter((s) => s.status === 200).map((s) => s.end), executorsOf(nodePid))
        : undefined;
    // How the scheduler took the burst: evaluations by trigger and status, and how many store writes placed the allocations.
    const evals = (await (await fetch(`${agent.addr}/v1/evaluations?namespace=*`, { headers })).json()) as Array<{ TriggeredBy: string; Status: string; JobID: string }>;
    const evalCounts: Record<string, number> = {};
    for (const e of evals) if (e.JobID.startsWith('burst-')) evalCounts[`${e.TriggeredBy}/${e.Status}`] = (evalCounts[`${e.TriggeredBy}/${e.Status}`] ?? 0) + 1;
    const burstAllocs = (await allocs()).filter((a) => a.JobID.startsWith('burst-'));
    const placementWrites = new Set(burstAllocs.map((a) => a.CreateIndex)).size;
    // Whether the scheduler took the event loop before the burst was answered: allocations written at a store
    // index below the burst's last registration (a job's JobModifyIndex). Read from the state, not from the
    // progress polls, whose spacing grows with the load.
    const jobList = (await (await fetch(`${agent.addr}/v1/jobs`, { headers })).json()) as JobListStub[];
    const lastRegistration = Math.max(0, ...jobList.filter((j) => j.ID.startsWith('burst-')).map((j) => j.JobModifyIndex));
    const placedMidBurst = burstAllocs.filter((a) => a.CreateIndex < lastRegistration).length;
    const cpuAnswered = { agent: b.cpuAnswered['agent'] ?? 0, main: b.cpuAnswered['main'] ?? 0, node: b.cpuAnswered['node'] ?? 0 };
    const cpuRunning = { agent: b.cpuRunning['agent'] ?? 0, node: b.cpuRunning['node'] ?? 0 };

    const executors = executorsOf(nodePid);
    // Read first, while every task runs and before the figures below add work: what the node paid to start them.
    const nodeCost = executorCost(executors);
    const executorsPssMiB = round(executors.reduce((a, p) => a + pssKiB(p), 0) / 1024);
    printBurst('Berth', b);
    if (timeline) console.log(`  the burst's stages, ms after the release at ${round(b.releasedAt)} (epoch ms; first / median / last allocation):\n${formatTimeline(timeline).join('\n')}`);
    console.log(`  agent event loop delay during the run: p50 ${delay.p50} ms, p99 ${delay.p99} ms, max ${delay.max} ms`);
    const perJob = (ms: number): number => round(ms / JOBS, 2);
    if (logFile) copyFileSync(join(agentDir, 'agent.log'), logFile);
    console.log(
      `  ${split ? 'server agent' : 'agent'} CPU: ${round(cpuAnswered.agent)} ms until all answered (${perJob(cpuAnswered.agent)} ms a job; main thread ${perJob(cpuAnswered.main)} ms a job), ${round(cpuRunning.agent)} ms until all running (${perJob(cpuRunning.agent)} ms a job)` +
        (split ? `; client agent CPU: ${round(cpuAnswered.node)} ms until all answered, ${round(cpuRunning.node)} ms until all running (${perJob(cpuRunning.node)} ms a job)` : ''),
    );
    console.log(`  agent minor page faults until all answered: ${round((b.cpuAnswered['faults'] ?? 0) / JOBS, 1)} a job (main thread ${round((b.cpuAnswered['mainFaults'] ?? 0) / JOBS, 1)})`);
    console.log(`  evaluations of the burst's jobs: ${JSON.stringify(evalCounts)}; ${placementWrites} store writes placed the ${JOBS} allocations; ${placedMidBurst} of them before the burst's last registration was written`);
    const perTask = (ms: number): number => round(ms / Math.max(1, nodeCost.tasks.processes), 2);
    console.log(
      `  executors and tasks, CPU and minor faults a task with every task running: executors (${nodeCost.executors.processes}, their start included) ${perTask(nodeCost.executors.cpuMs)} ms, ${perTask(nodeCost.executors.minorFaults)} faults; ` +
        `tasks (${nodeCost.tasks.processes}, fork and exec) ${perTask(nodeCost.tasks.cpuMs)} ms, ${perTask(nodeCost.tasks.minorFaults)} faults (load ${load()})`,
    );
    console.log(`  ${executors.length} executors with every task running (${executors.length - executorsOf(nodePid, true).length} of them spares with no task): PSS ${executorsPssMiB} MiB in all, ${round(executorsPssMiB / Math.max(1, executors.length), 2)} MiB each`);

    const busyRssMiB = rssMiB(agentPid);
    const busyMemory = await memoryNow();
    await Promise.all(
      Array.from({ length: JOBS }, (_, i) => stopAndPurge(`${agent.addr}/v1/job/burst-${i}?purge=true`, headers.authorization)),
    );
    await eventually('every allocation collected', async () => (await allocs()).length === 0 || undefined, { timeoutMs: 180_000, intervalMs: 500 });
    await eventually('every executor that ran a task gone', () => executorsOf(nodePid, true).length === 0 || undefined, { timeoutMs: 120_000, intervalMs: 500 });
    const figures: Record<string, unknown> = {
      ...burstFigures(b),
      ...(split ? { split: true } : {}),
      agentCpuMs: { answered: round(cpuAnswered.agent), running: round(cpuRunning.agent), ...(split ? { clientAnswered: round(cpuAnswered.node), clientRunning: round(cpuRunning.node) } : {}) },
      eventLoopDelayMs: delay,
      evaluations: evalCounts,
      ...(timeline ? { timeline } : {}),
      placementWrites,
      placedBeforeLastRegistration: placedMidBurst,
      executors: executors.length,
      executorsPssMiB,
      nodeCostPerTask: {
        executorCpuMs: perTask(nodeCost.executors.cpuMs),
        executorMinorFaults: perTask(nodeCost.executors.minorFaults),
        taskCpuMs: perTask(nodeCost.tasks.cpuMs),
        taskMinorFaults: perTask(nodeCost.tasks.minorFaults),
      },
    };
    if (!memory) return { figures, burst: b };
    await sleep(5000);
    const afterRssMiB = rssMiB(agentPid);
    console.log(`  agent RSS: idle ${idleRssMiB} MiB, ${JOBS} running ${busyRssMiB} MiB, all collected ${afterRssMiB} MiB (+${round(((afterRssMiB - idleRssMiB) / idleRssMiB) * 100)} %)`);
    const afterMemory = await memoryNow();
    // V8 and the agent's memory reclaimer act on quiet intervals (30 s apart at least): the same figure once the agent had 20 s more.
    await sleep(20_000);
    const settledRssMiB = rssMiB(agentPid);
    const settledMemory = await memoryNow();
    const pct = (x: number, of: number): string => `${x >= of ? '+' : ''}${round(((x - of) / of) * 100)} %`;
    console.log(`  agent RSS 25 s after all were collected: ${settledRssMiB} MiB (${pct(settledRssMiB, idleRssMiB)} of idle)`);
    console.log(
      `  agent RSS idle once its start was reclaimed ${settledIdleRssMiB} MiB; all collected ${pct(afterRssMiB, settledIdleRssMiB)}, 25 s later ${pct(settledRssMiB, settledIdleRssMiB)} of it (${settledMemory.reclaims} reclaims in all)`,
    );
    for (const [when, m] of [['idle (start reclaimed)', idleMemory], ['running', busyMemory], ['collected', afterMemory], ['collected +25 s', settledMemory]] as const) {
      console.log(`    ${when}: ${m.sockets} open sockets, ${m.reclaims} memory reclaims so far; ${formatBreakdown(m.rss)}; V8 ${Object.entries(m.v8).map(([k, v]) => `${k} ${v}`).join(', ')} MiB`);
    }
    if (snapshots) {
      await heapSnapshot();
      console.log(`    after a full GC (heap snapshot): RSS ${rssMiB(agentPid)} MiB; ${formatBreakdown(rssBreakdown(agentPid))}`);
    }
    const probe = process.env['BENCH_SUBMIT_MALLOC_PROBE'] ? mallocProbe(agentPid, dir) : undefined;
    if (probe) console.log(`    glibc malloc held ${probe.freeHeldMiB} MiB free in ${probe.arenas} arenas; after malloc_trim(0) the agent's RSS is ${probe.rssAfterTrimMiB} MiB`);
    return {
      figures: {
        ...figures,
        ...(perExecutor ? { tasksPerExecutor: Number(perExecutor) } : {}),
        agentRssMiB: { idle: idleRssMiB, idleReclaimed: settledIdleRssMiB, running: busyRssMiB, collected: afterRssMiB, collectedPlus25s: settledRssMiB },
        agentMemoryKiB: { idle: idleMemory, running: busyMemory, collected: afterMemory, collectedPlus25s: settledMemory },
        ...(probe ? { mallocProbe: probe } : {}),
      },
      burst: b,
    };
  } finally {
    await clientAgent?.stop('SIGINT');
    await agent.stop('SIGINT');
  }
}

/** A burst's figures as results.json keeps them. */
function burstFigures(b: BurstFigures): Record<string, unknown> {
  return {
    submitP50Ms: b.submit.p50,
    submitP99Ms: b.submit.p99,
    submitMaxMs: b.submit.max,
    allAnsweredMs: b.allAnsweredMs,
    allRunningMs: b.allRunningMs,
    accepted: b.accepted,
    resets: b.resets,
    errors: b.errors,
    load: b.load,
  };
}

/** A burst's figures as lines, the same for each side. */
function printBurst(side: string, b: BurstFigures): void {
  console.log(
    `  ${side}: ${JOBS} PUT /v1/jobs (Nomad JSON jobs), one thread and connection each: submit p50 ${b.submit.p50} ms, p99 ${b.submit.p99} ms, max ${b.submit.max} ms; all answered after ${b.allAnsweredMs} ms; all running after ${b.allRunningMs} ms (load ${b.load.before} -> ${b.load.during})`,
  );
  if (b.resets || b.errors) console.log(`  ${side}: ${b.accepted} of ${JOBS} accepted; ${b.resets} connections reset, ${b.errors} other errors (${b.failureSamples.join('; ')})`);
  console.log(`  ${side}: placed / running as the API listed them, by seconds after the release: ${formatProgress(b.progress)}`);
}

/**
 * The same burst (same harness, same bodies) against a Nomad dev agent
 * (bench/_nomad-dev.ts) in `dir`, polled the same way; its agent's CPU (the
 * `nomad agent` process; its executors and tasks are other processes, as
 * Berth's are) beside. Nothing of it is left running.
 */
async function nomadRun(bin: string, dir: string, harness: SubmitterKind): Promise<{ figures: Record<string, unknown>; burst: BurstFigures }> {
  const nomad = await startNomadDev(bin, dir);
  try {
    const b = await runBurst(
      harness,
      {
        addr: nomad.addr,
        token: '',
        allocs: async () => (await (await fetch(`${nomad.addr}/v1/allocations`)).json()) as AllocationListStub[],
        cpu: () => ({ agent: cpuMs(nomad.pid) }),
      },
      bodies(),
      { prefix: 'burst-', timeoutMs: 600_000 },
    );
    printBurst('Nomad', b);
    const perJob = (ms: number | undefined): number => round((ms ?? 0) / JOBS, 2);
    console.log(`  Nomad agent CPU: ${b.cpuAnswered['agent']} ms until all answered (${perJob(b.cpuAnswered['agent'])} ms a job), ${b.cpuRunning['agent']} ms until all running (${perJob(b.cpuRunning['agent'])} ms a job)`);
    return { figures: { ...burstFigures(b), agentCpuMs: { answered: b.cpuAnswered['agent'], running: b.cpuRunning['agent'] } }, burst: b };
  } finally {
    await nomad.stop();
  }
}

/** Berth and Nomad of one run, one row a figure. */
function printSideBySide(run: number, runs: number, berth: BurstFigures, nomad: BurstFigures): void {
  const rows: Array<[string, (b: BurstFigures) => string]> = [
    ['submit p50 / p99 / max (ms)', (b) => `${b.submit.p50} / ${b.submit.p99} / ${b.submit.max}`],
    ['all answered (ms)', (b) => `${b.allAnsweredMs}`],
    ['all running (ms)', (b) => `${b.allRunningMs}`],
    ['accepted; resets; other errors', (b) => `${b.accepted}; ${b.resets}; ${b.errors}`],
    ['agent CPU until all running, a job (ms)', (b) => `${round((b.cpuRunning['agent'] ?? 0) / JOBS, 2)}`],
    ['load before -> during', (b) => `${b.load.before} -> ${b.load.during}`],
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  const cw = Math.max(...rows.map(([, f]) => f(berth).length), 'Berth'.length);
  console.log(`  run ${run} of ${runs}, ${JOBS} jobs, same client and jobs:`);
  console.log(`    ${''.padEnd(w)}  ${'Berth'.padEnd(cw)}  Nomad`);
  for (const [k, f] of rows) console.log(`    ${k.padEnd(w)}  ${f(berth).padEnd(cw)}  ${f(nomad)}`);
}

export default async function bench(dir: string): Promise<Record<string, unknown>> {
  const harness = submitterKind();
  const nomadBin = process.env['NOMAD_BIN'];
  const runs = Number(process.env['BENCH_SUBMIT_RUNS'] ?? 1);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`BENCH_SUBMIT_RUNS must be a whole number of runs, 1 or more, not "${process.env['BENCH_SUBMIT_RUNS']}"`);
  console.log(`  harness: ${describeSubmitters(harness)}, one thread and connection a job${nomadBin ? `; Berth, then Nomad (${nomadBin}) in each run` : ''}`);
  const floor = process.env['BENCH_SUBMIT_FLOOR'] === '1' ? await harnessFloor() : undefined;
  for (const [when, f] of Object.entries(floor ?? {})) {
    console.log(`  harness floor (a bare node:http server answering at once, ${when}): submit p50 ${f.p50} ms, p99 ${f.p99} ms, max ${f.max} ms; all answered after ${f.allAnsweredMs} ms (load ${f.load})`);
  }
  const all: Array<{ berth: Record<string, unknown>; nomad?: Record<string, unknown> }> = [];
  for (let run = 1; run <= runs; run++) {
    if (runs > 1) console.log(`  -- run ${run} of ${runs}`);
    const berth = await berthRun(join(dir, `berth-${run}`), harness, run === 1);
    const nomad = nomadBin ? await nomadRun(nomadBin, join(dir, `nomad-${run}`), harness) : undefined;
    if (nomad) printSideBySide(run, runs, berth.burst, nomad.burst);
    all.push({ berth: berth.figures, ...(nomad ? { nomad: nomad.figures } : {}) });
  }
  return {
    jobs: JOBS,
    harness,
    ...(floor ? { harnessFloorMs: floor } : {}),
    // The first run's Berth figures as before (the memory figures are the first run's alone).
    ...all[0]!.berth,
    ...(all.length > 1 || nomadBin ? { runs: all } : {}),
  };
}
