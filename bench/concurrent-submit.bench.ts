// 200 concurrent job submissions over HTTP (section `concurrent-submit` of
// `npm run bench`): a warm `berth agent --dev` in its own process; N
// (BENCH_SUBMIT_JOBS, 200) one-task raw_exec jobs POSTed to /v1/jobs at
// once. Figures: the submit latency each caller sees (p50/p99/max), and the
// time from the first POST until the API lists every allocation running.
// Then every job is stopped and purged (not timed). BENCH_SUBMIT_CPU_PROF=dir
// starts the agent under `node --cpu-prof` writing its profile there.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AgentRun, freePort } from '../test/support/agent-run.js';
import { eventually } from '../test/support/eventually.js';
import { round } from './_stats.js';

function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
}

const JOBS = Number(process.env['BENCH_SUBMIT_JOBS'] ?? 200);

function job(id: string): Record<string, unknown> {
  return {
    id,
    type: 'service',
    groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['3600'] }, resources: { cpuMhz: 1, memoryMb: 1 } }] }],
  };
}

export default async function bench(dir: string): Promise<Record<string, unknown>> {
  const agentDir = join(dir, 'agent');
  mkdirSync(agentDir);
  const prof = process.env['BENCH_SUBMIT_CPU_PROF'];
  const prevOptions = process.env['NODE_OPTIONS'];
  if (prof) process.env['NODE_OPTIONS'] = `${prevOptions ?? ''} --cpu-prof --cpu-prof-dir=${prof}`.trim();
  const agent = new AgentRun(['--dev', '--data-dir', agentDir, '--port', String(await freePort()), '--log-level', 'warn']);
  try {
    await agent.start();
  } finally {
    if (prof) {
      if (prevOptions === undefined) delete process.env['NODE_OPTIONS'];
      else process.env['NODE_OPTIONS'] = prevOptions;
    }
  }
  const headers = { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' };
  const running = async (): Promise<number> => {
    const res = await fetch(`${agent.addr}/v1/allocations`, { headers });
    const allocs = (await res.json()) as Array<{ jobId: string; clientStatus: string; desiredStatus: string }>;
    return allocs.filter((a) => a.jobId.startsWith('burst-') && a.desiredStatus === 'run' && a.clientStatus === 'running').length;
  };
  try {
    const t0 = performance.now();
    const submitMs = await Promise.all(
      Array.from({ length: JOBS }, async (_, i) => {
        const s = performance.now();
        const res = await fetch(`${agent.addr}/v1/jobs`, { method: 'POST', headers, body: JSON.stringify({ job: job(`burst-${i}`) }) });
        const body = (await res.json()) as { evaluation?: { placed: number } };
        if (!res.ok || body.evaluation?.placed !== 1) throw new Error(`submit ${i}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
        return performance.now() - s;
      }),
    );
    const submittedMs = performance.now() - t0;
    await eventually(`all ${JOBS} allocations running`, async () => (await running()) === JOBS || undefined, { timeoutMs: 180_000, intervalMs: 100 });
    const allRunningMs = performance.now() - t0;
    const submit = { p50: quantile(submitMs, 0.5), p99: quantile(submitMs, 0.99) };
    console.log(
      `${JOBS} concurrent POST /v1/jobs: submit p50 ${round(submit.p50)} ms, p99 ${round(submit.p99)} ms, all answered in ${round(submittedMs)} ms; all running after ${round(allRunningMs)} ms`,
    );
    await Promise.all(
      Array.from({ length: JOBS }, (_, i) => fetch(`${agent.addr}/v1/job/burst-${i}?purge=true`, { method: 'DELETE', headers: { authorization: headers.authorization } })),
    );
    return { jobs: JOBS, submitP50Ms: round(submit.p50), submitP99Ms: round(submit.p99), allAnsweredMs: round(submittedMs), allRunningMs: round(allRunningMs) };
  } finally {
    await agent.stop('SIGINT');
  }
}
