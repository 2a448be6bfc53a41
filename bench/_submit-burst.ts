// One burst of the concurrent-submit bench against one agent (Berth's or
// Nomad's): N PUT /v1/jobs released at once from the harness's threads
// (bench/_submitters.ts), then GET /v1/allocations every 200 ms until every
// accepted job's allocation runs. The same code measures both sides, so the
// figures printed beside each other are taken the same way.

import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { round } from './_stats.js';
import { startSubmitters, type Burst, type SubmitterKind, type Submitted } from './_submitters.js';

/** What the bench reads of an allocation list stub (Berth and Nomad give the same fields). */
export interface AllocRow {
  JobID: string;
  DesiredStatus: string;
  ClientStatus: string;
}

export interface BurstTarget {
  /** The agent's base URL. */
  addr: string;
  /** Bearer token ('' or 'none' when the agent takes none). */
  token: string;
  /** The agent's allocations now. */
  allocs(): Promise<AllocRow[]>;
  /** The CPU time (ms) of each process whose CPU the figures count, so far. */
  cpu(): Record<string, number>;
  /** Called with the threads ready, just before the release (e.g. to reset a metric). */
  beforeRelease?(): Promise<void>;
}

export interface BurstFigures {
  submitted: Submitted[];
  /** Submissions answered 200. */
  accepted: number;
  /** Connections the agent reset or closed without an answer. */
  resets: number;
  /** Other failures: connect errors, timeouts, HTTP statuses other than 200. */
  errors: number;
  /** A few failures as seen, for the output. */
  failureSamples: string[];
  submit: { p50: number; p99: number; max: number };
  allAnsweredMs: number;
  /** When the burst was released (ms since the epoch, this machine's clock). */
  releasedAt: number;
  /** From the release until the API listed every accepted job's allocation running. */
  allRunningMs: number;
  /** [s since the release, burst allocations placed, running], each poll. */
  progress: Array<[number, number, number]>;
  /** CPU ms of each counted process from the release until all answered / all running. */
  cpuAnswered: Record<string, number>;
  cpuRunning: Record<string, number>;
  load: { before: string; during: string };
}

export const POLL_MS = 200;

/** Minor page faults a process (or, `mainThread`, its main thread) took so far: on this kind of VM a first touch of a page costs tens of microseconds. */
export function minorFaults(pid: number, mainThread = false): number {
  const stat = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[7]);
}

/** CPU time (user + system) a process used so far, ms. */
export function cpuMs(pid: number, mainThread = false): number {
  // `mainThread`: that thread alone (the API's front workers are threads of their own; BENCH_SUBMIT_API_WORKERS).
  const stat = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * (1000 / 100);
}


export const load = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');

const now = (): number => performance.timeOrigin + performance.now();

export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
}

const diff = (a: Record<string, number>, b: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(a).map(([k, v]) => [k, round(v - (b[k] ?? 0))]));

/** A failure that is the agent dropping the connection (reset, closed before any answer), not an HTTP error. */
export function isReset(s: Submitted): boolean {
  return s.status === 0 && /reset|ECONNRESET|EPIPE|broken pipe|closed|RemoteDisconnected|no HTTP status/i.test(s.text);
}

/**
 * Sends `bodies` as one burst to `target` with the `harness` threads and
 * polls its allocations until every accepted job's allocation of a job
 * whose ID starts with `prefix` runs (throws after `timeoutMs`).
 */
export async function runBurst(harness: SubmitterKind, target: BurstTarget, bodies: readonly string[], opts: { prefix: string; timeoutMs?: number }): Promise<BurstFigures> {
  const timeoutMs = opts.timeoutMs ?? 300_000;
  let burst: Burst | undefined;
  try {
    const loadBefore = load();
    burst = startSubmitters(harness, `${target.addr}/v1/jobs`, target.token || 'none', bodies);
    await burst.ready;
    await target.beforeRelease?.();
    const cpu0 = target.cpu();
    const t0 = burst.release();
    /** How many allocations must run: every job until the answers are in, then the accepted ones. */
    let expected = bodies.length;
    let allRunningMs = 0;
    let cpuRunning: Record<string, number> = {};
    const progress: Array<[number, number, number]> = [];
    const polled = (async () => {
      for (;;) {
        const list = await target.allocs();
        const placed = list.filter((a) => a.JobID.startsWith(opts.prefix) && a.DesiredStatus === 'run');
        const running = placed.filter((a) => a.ClientStatus === 'running').length;
        progress.push([round((now() - t0) / 1000, 2), placed.length, running]);
        if (running >= expected) {
          allRunningMs = now() - t0;
          cpuRunning = diff(target.cpu(), cpu0);
          return;
        }
        if (now() - t0 > timeoutMs) throw new Error(`after ${timeoutMs / 1000} s only ${running} of ${expected} allocations run`);
        await sleep(POLL_MS);
      }
    })();
    // A rejected poll must not go unhandled while the answers are awaited.
    polled.catch(() => {});
    const submitted = await burst.results;
    const cpuAnswered = diff(target.cpu(), cpu0);
    const ok = submitted.filter((s) => s.status === 200);
    expected = ok.length;
    if (!ok.length) throw new Error(`no submission was accepted, e.g. ${submitted[0]?.status} ${submitted[0]?.text}`);
    const failed = submitted.filter((s) => s.status !== 200);
    const resets = failed.filter(isReset).length;
    await polled;
    const latencies = ok.map((s) => s.end - s.start);
    if (process.env['BENCH_SUBMIT_ANSWER_TIMES'] === '1') console.log(`  ${opts.prefix}: answers by ms after the release (the first, 10 %, 25 %, 50 %, 75 %, 90 %, the last): ${answerTimes(ok.map((s) => s.end - t0))}; sent between ${answerTimes(ok.map((s) => s.start - t0), [0, 1])}`);
    return {
      submitted,
      accepted: ok.length,
      resets,
      errors: failed.length - resets,
      failureSamples: [...new Set(failed.map((s) => `${s.status || ''} ${s.text}`.trim()))].slice(0, 3),
      submit: { p50: round(quantile(latencies, 0.5)), p99: round(quantile(latencies, 0.99)), max: round(Math.max(...latencies)) },
      allAnsweredMs: round(Math.max(...submitted.map((s) => s.end)) - t0),
      releasedAt: t0,
      allRunningMs: round(allRunningMs),
      progress,
      cpuAnswered,
      cpuRunning,
      load: { before: loadBefore, during: load() },
    };
  } finally {
    await burst?.close();
  }
}

/** The placed/running timeline as one line. */
export function formatProgress(progress: ReadonlyArray<[number, number, number]>): string {
  return progress.map(([t, p, r]) => `${t} ${p}/${r}`).join(', ');
}

/** What processes cost so far: CPU (scheduler time, ns precision) and minor page faults, summed. */
export interface ProcessCost {
  processes: number;
  cpuMs: number;
  minorFaults: number;
}

/**
 * The CPU and minor faults of the executors given and of the tasks they
 * started (their children, each counted from its fork, so a task's figure
 * holds the join wrapper and its exec), read from /proc while they run. On
 * this kind of VM a first touch of a page costs tens of microseconds, so
 * faults explain much of a process start's CPU; both bend less with the
 * machine's load than wall times. Processes already gone are not counted.
 */
export function executorCost(executors: readonly number[]): { executors: ProcessCost; tasks: ProcessCost } {
  const cost = (pids: readonly number[]): ProcessCost => {
    const out: ProcessCost = { processes: 0, cpuMs: 0, minorFaults: 0 };
    for (const pid of pids) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const ns = Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
        out.minorFaults += Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[7]);
        out.cpuMs += ns / 1e6;
        out.processes++;
      } catch {
        // gone meanwhile
      }
    }
    return out;
  };
  const tasks: number[] = [];
  for (const pid of executors) {
    try {
      tasks.push(...readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
    } catch {
      // gone meanwhile
    }
  }
  return { executors: cost(executors), tasks: cost(tasks) };
}

/**
 * Processes whose command line names the executor script and whose parent
 * is `agentPid`; `busy`: those that run a task (have a child), not the
 * spares the agent keeps started ahead of need.
 */
export function executorsOf(agentPid: number, busy = false): number[] {
  const out: number[] = [];
  const parents = new Set<number>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.add(ppid);
      if (ppid !== agentPid) continue;
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').includes('executor')) out.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return busy ? out.filter((pid) => parents.has(pid)) : out;
}

/** `times` (ms) at the given shares of their sorted list, rounded, space separated. */
function answerTimes(times: number[], shares = [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1]): string {
  const sorted = [...times].sort((a, b) => a - b);
  return shares.map((q) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0)).join(' ');
}
