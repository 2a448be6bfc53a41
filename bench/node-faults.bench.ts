// The node under faults and after load (section `node-faults` of `npm run
// bench`), with a real `berth agent --dev` in its own process:
//
// 1. A SIGKILLed agent back with its tasks adopted: BENCH_ADOPT_TASKS (10)
//    raw_exec tasks run; the agent is SIGKILLed and started again on the same
//    --data-dir, BENCH_ADOPT_RUNS (5) times. Timed from the new agent's
//    spawn to the API showing every allocation running with a "Reattached"
//    event newer than the kill (polled every 10 ms). p50 / p99.
// 2. Agent memory after BENCH_GC_JOBS (200) jobs ran and were stopped, in
//    waves of 20 submitted over HTTP: the agent's RSS and PSS idle (after a
//    warm-up wave), after the jobs stopped, and after `POST /v1/client/gc`
//    collected their allocations (directories, secrets tmpfs, runners).
//    In dev mode the server shares the process: what it keeps of stopped
//    jobs and allocations counts too.
// 3. The same in this process (a dev Agent object), with V8's heap used
//    after a full collection: what the agent keeps per finished allocation
//    before and after the client's garbage collection (RSS rarely shrinks,
//    the heap does).

import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Agent, emptyAgentConfig } from '../src/agent/index.js';
import { AgentRun, freePort } from '../test/support/agent-run.js';
import { eventually } from '../test/support/eventually.js';
import { agentApi } from './_agent-api.js';
import { round, summarize } from './_stats.js';
import { registration } from '../test/support/nomad-jobs.js';
import type { AllocationListStub } from '../src/api/index.js';

const ADOPT_TASKS = Number(process.env['BENCH_ADOPT_TASKS'] ?? 10);
const ADOPT_RUNS = Number(process.env['BENCH_ADOPT_RUNS'] ?? 5);
const GC_JOBS = Number(process.env['BENCH_GC_JOBS'] ?? 200);
const WAVE = 20;

type AllocRow = AllocationListStub;

function job(id: string): Record<string, unknown> {
  return {
    id,
    type: 'service',
    groups: [
      {
        name: 'g',
        tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/sh', args: ['-c', 'while :; do sleep 1; done'] }, resources: { cpuMhz: 20, memoryMb: 16 } }],
      },
    ],
  };
}

/** RSS and PSS of a process, MiB. */
function memoryMiB(pid: number): { rssMiB: number; pssMiB: number } {
  const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  const pss = Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  return { rssMiB: round(rss / 1024), pssMiB: round(pss / 1024) };
}

function client(agent: Pick<AgentRun, 'addr' | 'token'>): Api {
  const call = agentApi(agent);
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => (await call<T>(method, path, body)).body;
}

async function adoption(dir: string): Promise<Record<string, unknown>> {
  const dataDir = join(dir, 'adopt');
  const args = ['--dev', '--data-dir', dataDir, '--port', String(await freePort()), '--log-level', 'warn'];
  let agent = await new AgentRun(args).start();
  try {
    let api = client(agent);
    for (let i = 0; i < ADOPT_TASKS; i++) await api('PUT', '/v1/jobs', registration(job(`adopt-${i}`)));
    const all = async (): Promise<AllocRow[]> => (await api<AllocRow[]>('GET', '/v1/allocations')).filter((a) => a.JobID.startsWith('adopt-') && a.DesiredStatus === 'run');
    await eventually('every task running', async () => (await all()).filter((a) => a.ClientStatus === 'running').length === ADOPT_TASKS, { timeoutMs: 120_000, intervalMs: 50 });
    const samples: bigint[] = [];
    for (let r = 0; r < ADOPT_RUNS; r++) {
      await agent.stop('SIGKILL');
      const killedAt = Date.now();
      const start = process.hrtime.bigint();
      agent = await new AgentRun(args).start();
      api = client(agent);
      await eventually(
        'every task adopted',
        async () => {
          const allocs = await all().catch(() => []);
          const adopted = allocs.filter(
            (a) => a.ClientStatus === 'running' && Object.values(a.TaskStates ?? {}).every((t) => t.State === 'running' && (t.Events ?? []).some((e) => e.Type === 'Reattached' && e.Time / 1e6 >= killedAt)),
          );
          return adopted.length === ADOPT_TASKS;
        },
        { timeoutMs: 60_000, intervalMs: 10 },
      );
      samples.push(process.hrtime.bigint() - start);
    }
    const s = summarize(samples);
    const figures = { tasks: ADOPT_TASKS, runs: ADOPT_RUNS, p50Ms: round(s.p50Us / 1000), p99Ms: round(s.p99Us / 1000) };
    console.log(`  SIGKILLed agent -> restarted with ${ADOPT_TASKS} tasks adopted (running, reattached): p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms (${ADOPT_RUNS} runs)`);
    return figures;
  } finally {
    await agent.stop('SIGINT');
  }
}

type Api = <T>(method: string, path: string, body?: unknown) => Promise<T>;

/** Runs `n` jobs through `api`, waits for them to run, stops them and waits for their allocations to end. */
async function wave(api: Api, prefix: string, n: number): Promise<void> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  await Promise.all(ids.map((id) => api('PUT', '/v1/jobs', registration(job(id)))));
  const mine = async (): Promise<AllocRow[]> => (await api<AllocRow[]>('GET', '/v1/allocations')).filter((a) => ids.includes(a.JobID));
  await eventually(`${prefix} running`, async () => (await mine()).filter((a) => a.ClientStatus === 'running').length === n, { timeoutMs: 180_000, intervalMs: 100 });
  await Promise.all(ids.map((id) => api('DELETE', `/v1/job/${id}`)));
  const ended = async (): Promise<boolean> => (await mine()).every((a) => a.ClientStatus === 'complete' || a.ClientStatus === 'failed');
  await eventually(`${prefix} stopped`, ended, { timeoutMs: 180_000, intervalMs: 100 });
}

async function memoryAfterJobs(dir: string): Promise<Record<string, unknown>> {
  const agent = await new AgentRun(['--dev', '--data-dir', join(dir, 'mem'), '--port', String(await freePort()), '--log-level', 'warn']).start();
  const api = client(agent);
  const pid = agent.child!.pid as number;
  try {
    await wave(api, 'warm', WAVE);
    await api('POST', '/v1/client/gc');
    const idle = memoryMiB(pid);
    for (let done = 0; done < GC_JOBS; done += WAVE) await wave(api, `load-${done}`, Math.min(WAVE, GC_JOBS - done));
    const stopped = memoryMiB(pid);
    const { collected } = await api<{ collected: string[] }>('POST', '/v1/client/gc');
    const collectedMem = memoryMiB(pid);
    const pct = (m: { rssMiB: number }): number => round(((m.rssMiB - idle.rssMiB) / idle.rssMiB) * 100);
    const figures = { jobs: GC_JOBS, idle, afterStop: stopped, afterGc: collectedMem, collected: collected.length, rssOverIdlePct: pct(collectedMem) };
    console.log(
      `  agent memory, ${GC_JOBS} jobs run and stopped: idle rss ${idle.rssMiB} MiB (pss ${idle.pssMiB}); stopped ${stopped.rssMiB} MiB (pss ${stopped.pssMiB}); ` +
        `after client gc (${collected.length} allocations) ${collectedMem.rssMiB} MiB (pss ${collectedMem.pssMiB}), ${figures.rssOverIdlePct}% over idle`,
    );
    return figures;
  } finally {
    await agent.stop('SIGINT');
  }
}

async function heapAfterJobs(dir: string): Promise<Record<string, unknown>> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const heapKiB = async (): Promise<number> => {
    for (let i = 0; i < 3; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 20));
    }
    return Math.round(process.memoryUsage().heapUsed / 1024);
  };
  const dataDir = join(dir, 'heap');
  mkdirSync(dataDir);
  const agent = new Agent({ mode: 'dev', config: emptyAgentConfig(), dataDir, port: 0 });
  const { url, managementToken } = await agent.start();
  const api = client({ addr: url, token: managementToken ?? '' });
  try {
    await wave(api, 'warm', WAVE);
    await api('POST', '/v1/client/gc');
    const idle = await heapKiB();
    for (let done = 0; done < GC_JOBS; done += WAVE) await wave(api, `load-${done}`, Math.min(WAVE, GC_JOBS - done));
    const stopped = await heapKiB();
    const runnersBefore = agent.client?.allocIds().length ?? 0;
    await api('POST', '/v1/client/gc');
    const collected = await heapKiB();
    const figures = {
      jobs: GC_JOBS,
      idleHeapMiB: round(idle / 1024),
      stoppedHeapMiB: round(stopped / 1024),
      afterGcHeapMiB: round(collected / 1024),
      heapOverIdlePct: round(((collected - idle) / idle) * 100),
      keptPerAllocKiBBeforeGc: round((stopped - idle) / GC_JOBS),
      keptPerAllocKiBAfterGc: round((collected - idle) / GC_JOBS),
      clientRunnersBeforeGc: runnersBefore,
      clientRunnersAfterGc: agent.client?.allocIds().length ?? 0,
    };
    console.log(
      `  agent heap (in process, after full GC), ${GC_JOBS} jobs run and stopped: idle ${figures.idleHeapMiB} MiB; stopped ${figures.stoppedHeapMiB} MiB ` +
        `(${figures.keptPerAllocKiBBeforeGc} KiB per allocation, ${runnersBefore} runners); after client gc ${figures.afterGcHeapMiB} MiB, ${figures.heapOverIdlePct}% over idle ` +
        `(${figures.keptPerAllocKiBAfterGc} KiB per allocation left, the server's; ${figures.clientRunnersAfterGc} runners)`,
    );
    return figures;
  } finally {
    await agent.stop({ drain: true });
  }
}

export default async function nodeFaultsBench(dir: string): Promise<Record<string, unknown>> {
  const adopt = await adoption(dir);
  const memory = await memoryAfterJobs(dir);
  const heap = await heapAfterJobs(dir);
  return { adopt, memory, heap };
}
