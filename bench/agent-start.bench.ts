// A dev agent's start as its user sees it (section `agent-start`, issue 40):
// the built `bin/berth.js agent --dev` in its own process (as
// test/support/agent-run.ts starts it), clocked from the spawn to
//   - the first answered API call: GET /v1/jobs with the management token,
//     polled every BENCH_AGENT_START_POLL_MS (3) ms over a new connection
//     each (what a user's first `berth` command would see; the data dir is
//     seeded with the dev tokens, as an agent restarted on it keeps them, so
//     the token is known before the agent prints it);
//   - the agent's ready lines (BERTH_ADDR/BERTH_TOKEN printed);
//   - a first job running as the API lists it: one raw_exec /bin/sleep task,
//     submitted the moment the API answers;
// then jobs 2..BENCH_AGENT_START_JOBS (6), one after another, each clocked
// from its submit to its allocation running (the "hundredth" job), against
// the first's own submit -> running. BENCH_AGENT_START_RUNS (10) starts;
// p50/p99 of each; a bare `node -e 0` start in the same run for the ratio;
// the agent's CPU time (utime + stime, /proc/<pid>/stat) at its first answer
// and at its first job running, which the shared machine's load bends far
// less than the wall clock; the load average before and after.
//
// Knobs: BENCH_AGENT_START_CPU_PROF=dir runs each agent under `node
// --cpu-prof` writing its profile there (BENCH_AGENT_START_CPU_PROF_US sets its
// sampling interval, Node's default 1000 us); BENCH_AGENT_START_PHASES=0 skips the
// extra start at `--log-level debug` whose log gives the agent's own start
// phases (ms since the process began: module evaluation, server store and
// routes, listening, client start, first fingerprint, ...);
// BENCH_AGENT_START_FIRST_JOB=ready submits the first job only once the
// agent printed its ready lines (its client part is up: what the first job
// itself costs, without the client's start) instead of at the first answer;
// BENCH_AGENT_START_FIRST_JOB_IDLE_MS=n (with =ready) waits n ms more, as a
// user would before a first `job run` (the agent warms a job's path once idle);
// BENCH_AGENT_START_LOG=file copies that start's debug log there (every step
// of the first and later jobs on the agent's clock);
// BENCH_AGENT_START_NODE_ARGS='--flag ...' passes node flags to the agent;
// The agent starts through its V8 code cache (src/warm-start/), kept in
// <bench dir>/code-cache (XDG_CACHE_HOME): one start at --log-level debug
// before the measured ones makes it (and says which path each start took:
// its `warm start` log line); BENCH_AGENT_START_CODE_CACHE=cold gives each
// measured start an empty cache dir instead (a first start after install).
// BENCH_AGENT_START_BERTH=path/to/bin/berth.js runs another build (an older
// commit's, built in its own copy) to compare two builds in the same minute.
// BENCH_AGENT_START_API_WORKERS=n starts each agent with `api_workers = n`
// (the API's front worker threads); each start then also gives the agent's
// CPU one second after its spawn and its RSS once its jobs ran (what the
// workers cost beside what they save).
// When the bench's environment sets NODE_EXTRA_CA_CERTS (as this sandbox
// does), Node parses that CA bundle at every process start, before any of
// the agent's code: the measured starts then run twice, with the environment
// as it is and without that variable (a host that sets none), each labelled
// with its own bare `node -e 0`; BENCH_AGENT_START_EXTRA_CA=as-is runs only
// the first set.
// `node scripts/build.mjs` first (the bench runs dist/).

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BERTH, cleanEnv, freePort } from '../test/support/agent-run.js';
import { registration } from '../test/support/nomad-jobs.js';
import { round } from './_stats.js';

const BERTH_JS = process.env['BENCH_AGENT_START_BERTH'] ?? BERTH;
const RUNS = Number(process.env['BENCH_AGENT_START_RUNS'] ?? 10);
const JOBS = Math.max(2, Number(process.env['BENCH_AGENT_START_JOBS'] ?? 6));
const POLL_MS = Number(process.env['BENCH_AGENT_START_POLL_MS'] ?? 3);
const CPU_PROF = process.env['BENCH_AGENT_START_CPU_PROF'];
const CPU_PROF_ARGS = CPU_PROF
  ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF, ...(process.env['BENCH_AGENT_START_CPU_PROF_US'] ? [`--cpu-prof-interval=${process.env['BENCH_AGENT_START_CPU_PROF_US']}`] : [])]
  : [];
const PHASES = process.env['BENCH_AGENT_START_PHASES'] !== '0';
const LOG = process.env['BENCH_AGENT_START_LOG'];
const FIRST_JOB_AT_READY = process.env['BENCH_AGENT_START_FIRST_JOB'] === 'ready';
const FIRST_JOB_IDLE_MS = Number(process.env['BENCH_AGENT_START_FIRST_JOB_IDLE_MS'] ?? '0');
if (!Number.isFinite(FIRST_JOB_IDLE_MS) || FIRST_JOB_IDLE_MS < 0) throw new Error('BENCH_AGENT_START_FIRST_JOB_IDLE_MS must be a number of ms (0 or more)');
const COLD = process.env['BENCH_AGENT_START_CODE_CACHE'] === 'cold';
const NODE_ARGS = (process.env['BENCH_AGENT_START_NODE_ARGS'] ?? '').split(/\s+/).filter(Boolean);
const API_WORKERS = process.env['BENCH_AGENT_START_API_WORKERS'] ? Number(process.env['BENCH_AGENT_START_API_WORKERS']) : undefined;
if (API_WORKERS !== undefined && !(Number.isInteger(API_WORKERS) && API_WORKERS >= 0)) throw new Error('BENCH_AGENT_START_API_WORKERS must be a whole number of workers');
const EXTRA_CA = process.env['NODE_EXTRA_CA_CERTS'] ? process.env['NODE_EXTRA_CA_CERTS'] : undefined;
const BOTH_ENVS = EXTRA_CA !== undefined && process.env['BENCH_AGENT_START_EXTRA_CA'] !== 'as-is';
const TICKS = 100; // USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s

function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
}

const stats = (xs: readonly number[]): { p50: number; p99: number } => ({ p50: round(quantile(xs, 0.5)), p99: round(quantile(xs, 0.99)) });

/** The resident set of a process, MiB (0 once gone). */
function rssMiB(pid: number): number {
  try {
    const kb = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return Number(kb ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** utime + stime of a process, ms (0 once gone). */
function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS;
  } catch {
    return 0;
  }
}

const load = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');
const now = (): number => performance.now();
const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** One HTTP call on a new connection: the status and body, or undefined when nothing answers (not listening yet). */
function call(port: number, token: string, method: string, path: string, body?: string): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, method, path, agent: false, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', () => resolve(undefined));
      },
    );
    req.on('error', () => resolve(undefined));
    req.end(body);
  });
}

function job(id: string): string {
  return JSON.stringify(
    registration({
      id,
      type: 'service',
      groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['3600'] }, resources: { cpuMhz: 5, memoryMb: 10 } }] }],
    }),
  );
}

/** Submits job `id` and polls its allocations until one runs; resolves with the wall time of the submit and of the running. */
async function runJob(port: number, token: string, id: string, gone: () => boolean): Promise<{ submitted: number; running: number }> {
  const submitted = now();
  const r = await call(port, token, 'PUT', '/v1/jobs', job(id));
  if (r?.status !== 200) throw new Error(`PUT /v1/jobs ${id}: ${r ? `${r.status} ${r.body}` : 'no answer'}`);
  const deadline = submitted + 60_000;
  for (;;) {
    if (gone()) throw new Error('the agent exited');
    const a = await call(port, token, 'GET', `/v1/job/${id}/allocations`);
    if (a?.status === 200 && (JSON.parse(a.body) as { ClientStatus: string }[]).some((x) => x.ClientStatus === 'running')) return { submitted, running: now() };
    if (now() > deadline) throw new Error(`job ${id} not running within 60 s: ${a?.body ?? 'no answer'}`);
    await sleep(POLL_MS);
  }
}

interface Start {
  answerMs: number;
  readyMs: number;
  firstRunningMs: number;
  firstJobMs: number;
  laterJobMs: number[];
  cpuAtAnswerMs: number;
  cpuAtFirstRunningMs: number;
  /** The agent's CPU from the first job's submit to its running (with the client's start when it came first). */
  cpuFirstJobMs: number;
  /** The agent's CPU for each of jobs 2..N, from the last one running to this one running. */
  cpuPerLaterJobMs: number;
  /** The agent's CPU one second after its spawn (0 when the start took less than that: never, in practice). */
  cpuAt1sMs: number;
  /** The agent's RSS once its jobs ran, MiB. */
  rssMiB: number;
  /** CLOCK_MONOTONIC, us (the clock of a V8 CPU profile's timestamps): spawn, first answer, first job running. */
  marks: { pid: number; spawned: number; answered: number; firstRunning: number };
  log?: string;
}

/** One start of `berth agent --dev` in `dataDir`, its first and later jobs, then a SIGINT stop. */
async function oneStart(dataDir: string, opts: { logLevel?: string; nodeArgs?: string[]; cacheHome?: string; noExtraCa?: boolean } = {}): Promise<Start> {
  const token = 'benchagentstartmanagement0';
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(join(dataDir, 'dev-tokens.json'), JSON.stringify({ management: token, node: 'benchagentstartnode000000' }), { mode: 0o600 });
  const port = await freePort();
  const workersConfig = join(dataDir, 'api-workers.hcl');
  if (API_WORKERS !== undefined) writeFileSync(workersConfig, `server {\n  api_workers = ${API_WORKERS}\n}\n`);
  const args = [
    ...NODE_ARGS,
    ...(opts.nodeArgs ?? []),
    BERTH_JS,
    'agent',
    '--dev',
    '--port',
    String(port),
    '--data-dir',
    dataDir,
    ...(API_WORKERS !== undefined ? ['--config', workersConfig] : []),
    ...(opts.logLevel ? ['--log-level', opts.logLevel] : []),
  ];
  const t0 = now();
  const spawnedMono = monotonicUs();
  const env = cleanEnv(opts.cacheHome ? { XDG_CACHE_HOME: opts.cacheHome } : {});
  if (opts.noExtraCa) delete env['NODE_EXTRA_CA_CERTS'];
  const child: ChildProcess = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let readyAt = 0;
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    if (!readyAt && /^BERTH_TOKEN=/m.test(out)) readyAt = now();
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise((r) => child.once('exit', r));
  let cpuAt1sMs = 0;
  const at1s = setTimeout(() => (cpuAt1sMs = cpuMs(child.pid!)), Math.max(0, 1000 - (now() - t0)));
  const gone = (): boolean => child.exitCode !== null || child.signalCode !== null;
  try {
    let answeredAt = 0;
    while (!answeredAt) {
      if (gone()) throw new Error(`the agent exited before answering\n${out}\n${err}`);
      const r = await call(port, token, 'GET', '/v1/jobs');
      if (r?.status === 200) answeredAt = now();
      else if (r) throw new Error(`GET /v1/jobs: ${r.status} ${r.body}`);
      else if (now() - t0 > 60_000) throw new Error(`no answer within 60 s\n${out}\n${err}`);
      else await sleep(POLL_MS);
    }
    const cpuAtAnswerMs = cpuMs(child.pid!);
    const answeredMono = monotonicUs();
    while (FIRST_JOB_AT_READY && !readyAt && !gone()) await sleep(POLL_MS);
    if (FIRST_JOB_AT_READY && FIRST_JOB_IDLE_MS > 0) await sleep(FIRST_JOB_IDLE_MS);
    const cpuAtSubmitMs = cpuMs(child.pid!);
    const first = await runJob(port, token, 'first', gone);
    const cpuAtFirstRunningMs = cpuMs(child.pid!);
    const firstRunningMono = monotonicUs();
    const laterJobMs: number[] = [];
    for (let i = 2; i <= JOBS; i++) {
      const j = await runJob(port, token, `job-${i}`, gone);
      laterJobMs.push(j.running - j.submitted);
    }
    const cpuPerLaterJobMs = (cpuMs(child.pid!) - cpuAtFirstRunningMs) / (JOBS - 1);
    const rss = rssMiB(child.pid!);
    while (!readyAt && !gone()) await sleep(5);
    while (!cpuAt1sMs && !gone()) await sleep(5);
    return {
      answerMs: answeredAt - t0,
      readyMs: readyAt - t0,
      firstRunningMs: first.running - t0,
      firstJobMs: first.running - first.submitted,
      laterJobMs,
      cpuAtAnswerMs,
      cpuAtFirstRunningMs,
      cpuFirstJobMs: cpuAtFirstRunningMs - cpuAtSubmitMs,
      cpuPerLaterJobMs,
      cpuAt1sMs,
      rssMiB: rss,
      marks: { pid: child.pid!, spawned: spawnedMono, answered: answeredMono, firstRunning: firstRunningMono },
      ...(opts.logLevel ? { log: readFileSync(join(dataDir, 'agent.log'), 'utf8') } : {}),
    };
  } finally {
    clearTimeout(at1s);
    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    await exited;
    clearTimeout(timer);
  }
}

/** spawn -> exit of `node -e 0`, ms; `noExtraCa` without NODE_EXTRA_CA_CERTS. */
async function bareNode(noExtraCa = false): Promise<number> {
  const env = { ...process.env };
  if (noExtraCa) delete env['NODE_EXTRA_CA_CERTS'];
  const t0 = now();
  await new Promise((r) => spawn(process.execPath, ['-e', '0'], { stdio: 'ignore', env }).once('exit', r));
  return now() - t0;
}

/** p50 of five `node -e 0` (after one not counted). */
async function bareNodeP50(noExtraCa: boolean): Promise<number> {
  await bareNode(noExtraCa);
  const bare: number[] = [];
  for (let i = 0; i < 5; i++) bare.push(await bareNode(noExtraCa));
  return round(quantile(bare, 0.5));
}

/** How the agent's code was loaded (its debug log line `warm start`, src/warm-start/), or why it says nothing of it. */
function warmStartOf(log: string): string {
  const line = log.split('\n').find((l) => l.includes('"warm start"'));
  if (!line) return 'no `warm start` line (a build without src/warm-start/)';
  const rec = JSON.parse(line) as { path?: string; reason?: string };
  return `${rec.path}: ${rec.reason}`;
}

/** The agent's own start phases (debug log lines `start phase`), ms since its process began. */
function phases(log: string): { phase: string; ms: number }[] {
  const out: { phase: string; ms: number }[] = [];
  for (const line of log.split('\n')) {
    if (!line.includes('"start phase"')) continue;
    try {
      const rec = JSON.parse(line) as { phase?: string; ms?: number };
      if (rec.phase !== undefined && rec.ms !== undefined) out.push({ phase: rec.phase, ms: rec.ms });
    } catch {
      // not a JSON line
    }
  }
  return out;
}

/** RUNS measured starts in one environment, printed as they go and summed up under `label`. */
async function measuredStarts(dir: string, cacheHome: string, label: string, noExtraCa: boolean): Promise<Record<string, unknown>> {
  const bareMs = await bareNodeP50(noExtraCa);
  console.log(`-- ${label}: node -e 0 p50 ${bareMs} ms`);
  const starts: Start[] = [];
  for (let i = 0; i < RUNS; i++) {
    const s = await oneStart(join(dir, `run-${noExtraCa ? 'no-ca-' : ''}${i}`), {
      noExtraCa,
      cacheHome: COLD ? join(dir, `code-cache-${noExtraCa ? 'no-ca-' : ''}${i}`) : cacheHome,
      nodeArgs: CPU_PROF_ARGS,
    });
    starts.push(s);
    console.log(
      `start ${i + 1}: first answer ${round(s.answerMs)} ms (cpu ${round(s.cpuAtAnswerMs)} ms), ready lines ${round(s.readyMs)} ms, ` +
        `first job running ${round(s.firstRunningMs)} ms (its submit -> running ${round(s.firstJobMs)} ms, cpu ${round(s.cpuAtFirstRunningMs)} ms), ` +
        `jobs 2..${JOBS}: ${s.laterJobMs.map((x) => round(x)).join(', ')} ms, cpu at 1 s ${round(s.cpuAt1sMs)} ms, rss ${round(s.rssMiB)} MiB  [load ${load()}]`,
    );
    if (CPU_PROF) console.log(`  pid ${s.marks.pid}, CLOCK_MONOTONIC us (a profile's clock): spawned ${s.marks.spawned}, first answer ${s.marks.answered}, first job running ${s.marks.firstRunning}`);
  }
  const figures = {
    runs: RUNS,
    bareNodeMs: bareMs,
    firstAnswerMs: stats(starts.map((s) => s.answerMs)),
    readyLinesMs: stats(starts.map((s) => s.readyMs)),
    firstJobRunningMs: stats(starts.map((s) => s.firstRunningMs)),
    firstJobSubmitToRunningMs: stats(starts.map((s) => s.firstJobMs)),
    laterJobSubmitToRunningMs: stats(starts.flatMap((s) => s.laterJobMs)),
    cpuAtFirstAnswerMs: stats(starts.map((s) => s.cpuAtAnswerMs)),
    cpuAtFirstJobRunningMs: stats(starts.map((s) => s.cpuAtFirstRunningMs)),
    cpuFirstJobMs: stats(starts.map((s) => s.cpuFirstJobMs)),
    cpuPerLaterJobMs: stats(starts.map((s) => s.cpuPerLaterJobMs)),
    cpuAt1sMs: stats(starts.map((s) => s.cpuAt1sMs)),
    rssMiB: stats(starts.map((s) => s.rssMiB)),
    ...(API_WORKERS !== undefined ? { apiWorkers: API_WORKERS } : {}),
  };
  const ratio = (ms: number): string => `${round(ms / bareMs, 1)}x bare node`;
  console.log(`${label}:`);
  console.log(`  spawn -> first API answer: p50 ${figures.firstAnswerMs.p50} ms (${ratio(figures.firstAnswerMs.p50)}), p99 ${figures.firstAnswerMs.p99} ms; agent CPU by then p50 ${figures.cpuAtFirstAnswerMs.p50} ms`);
  console.log(`  spawn -> ready lines printed: p50 ${figures.readyLinesMs.p50} ms, p99 ${figures.readyLinesMs.p99} ms`);
  console.log(`  spawn -> first job running: p50 ${figures.firstJobRunningMs.p50} ms, p99 ${figures.firstJobRunningMs.p99} ms; agent CPU by then p50 ${figures.cpuAtFirstJobRunningMs.p50} ms`);
  console.log(`  submit -> running: first job p50 ${figures.firstJobSubmitToRunningMs.p50} ms (p99 ${figures.firstJobSubmitToRunningMs.p99}), jobs 2..${JOBS} p50 ${figures.laterJobSubmitToRunningMs.p50} ms (p99 ${figures.laterJobSubmitToRunningMs.p99})`);
  console.log(`  agent CPU per job (submit and poll until running): first job p50 ${figures.cpuFirstJobMs.p50} ms, jobs 2..${JOBS} p50 ${figures.cpuPerLaterJobMs.p50} ms`);
  console.log(`  agent CPU 1 s after spawn p50 ${figures.cpuAt1sMs.p50} ms; RSS once its jobs ran p50 ${figures.rssMiB.p50} MiB${API_WORKERS !== undefined ? ` (api_workers = ${API_WORKERS})` : ''}`);
  return figures;
}

export default async function agentStartBench(dir: string): Promise<Record<string, unknown>> {
  const loadBefore = load();
  console.log(`${BERTH_JS}; load average before: ${loadBefore}`);

  if (CPU_PROF) mkdirSync(CPU_PROF, { recursive: true });
  const cacheHome = join(dir, 'code-cache');
  const priming = await oneStart(join(dir, 'priming'), { logLevel: 'debug', cacheHome });
  console.log(`priming start (${warmStartOf(priming.log ?? '')}): first answer ${round(priming.answerMs)} ms (cpu ${round(priming.cpuAtAnswerMs)} ms), first job running ${round(priming.firstRunningMs)} ms (cpu ${round(priming.cpuAtFirstRunningMs)} ms)`);
  console.log(COLD ? 'measured starts: each with an empty code cache dir (cold)' : `measured starts: with the code cache the priming start left in ${cacheHome}`);
  const asIsLabel = EXTRA_CA === undefined ? 'the environment as it is (no NODE_EXTRA_CA_CERTS)' : `the environment as it is (NODE_EXTRA_CA_CERTS=${EXTRA_CA})`;
  const figures = await measuredStarts(dir, cacheHome, asIsLabel, false);
  const withoutExtraCa = BOTH_ENVS ? await measuredStarts(dir, cacheHome, 'without NODE_EXTRA_CA_CERTS (a host that sets none)', true) : undefined;
  const loadAfter = load();
  console.log(`load average after: ${loadAfter}`);

  let phaseFigures: { phase: string; ms: number }[] | undefined;
  if (PHASES) {
    const s = await oneStart(join(dir, 'phases'), { logLevel: 'debug', cacheHome: COLD ? join(dir, 'code-cache-phases') : cacheHome, nodeArgs: CPU_PROF_ARGS });
    if (LOG) writeFileSync(LOG, s.log ?? '');
    phaseFigures = phases(s.log ?? '').map((p) => ({ phase: p.phase, ms: round(p.ms) }));
    console.log(`start phases (one start at --log-level debug, ms since the process began; first answer at ${round(s.answerMs)} ms from spawn; ${warmStartOf(s.log ?? '')}):`);
    for (const p of phaseFigures) console.log(`  ${String(p.ms).padStart(7)}  ${p.phase}`);
  }
  if (LOG) console.log(`the debug log of that start in ${LOG}`);
  if (CPU_PROF) console.log(`CPU profiles of the agents in ${CPU_PROF}`);
  return {
    ...figures,
    ...(EXTRA_CA !== undefined ? { nodeExtraCaCerts: EXTRA_CA } : {}),
    ...(withoutExtraCa ? { withoutNodeExtraCaCerts: withoutExtraCa } : {}),
    loadBefore,
    loadAfter,
    warmStart: warmStartOf(priming.log ?? ''),
    coldCache: COLD,
    ...(phaseFigures ? { phases: phaseFigures } : {}),
  };
}
