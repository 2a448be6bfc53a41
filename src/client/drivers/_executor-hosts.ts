// Starting executors: a per-task executor process (tasksPerExecutor 1), or a
// place on a shared executor ("host", executor.mjs in host mode) that runs up
// to tasksPerExecutor tasks, each with its own control socket, started.json
// and exit.json exactly as a per-task executor keeps them. A shared executor
// takes a task start off the Node start (a spawn of the task only) and costs
// one Node process per tasksPerExecutor tasks; what a crash of one takes down
// is its tasks (at most tasksPerExecutor), which the driver reports lost as it
// does for a per-task executor, and their restart policy starts them again.
// With `spare`, one executor with room is kept started ahead of need (warm(),
// and again each time a start takes the last place): the next task start,
// even the first on an idle node, is a spawn of the task, not a Node start.
// A spare that never got a task lives as long as its agent (see executor.mjs).

import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { AbortedError, helperProcessEnv, type Logger } from '../../lib/index.js';
import { askExecutorFollowing, type ExecutorUnavailable, type FollowedAsk } from './_control.js';
import { isAlive } from './_proc.js';
import type { ExitResult, TaskHandle } from './task-driver.js';

/** An executor's start report (fd 3 of a new process, or a shared executor's answer to `start`). */
export interface StartReport {
  ok: boolean;
  error?: string;
  retry?: boolean;
  pid?: number;
  taskPid?: number;
  taskStartTicks?: number;
  executorStartTicks?: number;
  /** How the executor's code was loaded (a new executor's report, from a build: src/warm-start/helper-main.ts). */
  warmStart?: { path: 'code-cache' | 'compiled' | 'modules'; reason: string };
}

/** What an executor writes to `started.json` in the task's state dir once the task runs (before it reports). */
export interface StartedRecord {
  taskPid: number;
  taskStartTicks: number;
  executorStartTicks: number;
}

/** The task's started.json, when it was written with a task pid. */
export function readStartedRecord(handle: Pick<TaskHandle, 'stateDir'>): StartedRecord | undefined {
  try {
    const rec = JSON.parse(readFileSync(join(handle.stateDir, 'started.json'), 'utf8')) as StartedRecord;
    return typeof rec.taskPid === 'number' && rec.taskPid > 0 ? rec : undefined;
  } catch {
    return undefined;
  }
}

/** The task's exit.json (how it ended), once its executor recorded it. */
export function readExitRecord(handle: Pick<TaskHandle, 'stateDir'>): (ExitResult & { finishedAt: number }) | undefined {
  try {
    return JSON.parse(readFileSync(join(handle.stateDir, 'exit.json'), 'utf8')) as ExitResult & { finishedAt: number };
  } catch {
    return undefined;
  }
}

/**
 * Starts `node executorPath` detached in `cwd` with `config` on its stdin;
 * `report` resolves with its first line on fd 3 (an exit without one is a
 * failed report, never a rejection) or rejects with AbortedError when
 * `signal` aborts, after SIGKILLing the process. Does not throw.
 */
export function spawnExecutor(
  executorPath: string,
  cwd: string,
  config: unknown,
  signal?: AbortSignal,
  lifeline = false,
): { child: ChildProcess; report: Promise<StartReport> } {
  const stdio: StdioOptions = ['pipe', 'ignore', 'ignore', 'pipe', ...(lifeline ? ['pipe' as const] : [])];
  const child = spawn(process.execPath, [executorPath], { detached: true, stdio, env: helperProcessEnv(), cwd });
  const pipe = child.stdio[3] as Readable;
  const report = new Promise<StartReport>((resolve, reject) => {
    let buf = '';
    const onAbort = (): void => {
      child.kill('SIGKILL');
      reject(new AbortedError('task start aborted', { cause: signal?.reason }));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    pipe.setEncoding('utf8');
    pipe.on('data', (d: string) => {
      buf += d;
    });
    pipe.on('close', () => {
      signal?.removeEventListener('abort', onAbort);
      const line = buf.split('\n')[0];
      if (!line) {
        resolve({ ok: false, error: 'the executor exited before reporting' });
        return;
      }
      try {
        resolve(JSON.parse(line) as StartReport);
      } catch {
        resolve({ ok: false, error: 'the executor sent a malformed report' });
      }
    });
    child.on('error', (err) => resolve({ ok: false, error: err.message }));
  });
  child.stdin?.on('error', () => undefined);
  child.stdin?.end(JSON.stringify(config));
  return { child, report };
}

/** How long expect()'s hint holds: starts that have not come by then are not waited for. */
const EXPECT_FOR_MS = 10_000;

interface Host {
  socketPath: string;
  /** Resolves once it listens, with its pid and kernel start time; rejects when it could not start. */
  ready: Promise<{ pid: number; startTicks: number }>;
  pid: number;
  startTicks: number;
  /** Tasks placed on it and not yet released. */
  tasks: number;
  gone: boolean;
  /** A spare's pipe (its fd 4) while it has had no task: closing it makes the spare exit. */
  lifeline?: Socket;
}

export interface ExecutorHostsOptions {
  executorPath: string;
  /** Where the shared executors' sockets live (their cwd too); short, since socket paths are limited. */
  dir: string;
  tasksPerExecutor: number;
  /** How long a shared executor with no task waits before it exits. */
  idleExitMs: number;
  /** Keep one executor with room started ahead of need (warm()). */
  spare?: boolean;
  /** Where a new executor's start is told at debug, with how its code was loaded (its report's `warmStart`). */
  logger?: Logger;
}

/** Where a task was started: its shared executor's pid, start time and socket. */
export interface HostPlace {
  pid: number;
  startTicks: number;
  socketPath: string;
}

/**
 * A set of shared executors, of one driver or of several (createDrivers
 * gives raw_exec and exec one: a task's config says how it runs). Not safe
 * across agents: each agent keeps its own in its own directory. Executors outlive the agent; a new
 * agent adopts the ones its recovered tasks run on (adopt()).
 */
export class ExecutorHosts {
  readonly #opts: ExecutorHostsOptions;
  readonly #hosts: Host[] = [];
  #closed = false;
  /** Starts expect() was told of that have not taken a place yet, and when it was last told. */
  #expected = 0;
  #expectedAt = 0;
  /** Executors expect() asked for and not spawned yet (#spawnQueued starts one a turn). */
  #queued = 0;

  constructor(opts: ExecutorHostsOptions) {
    this.#opts = opts;
  }

  /**
   * Starts one task on a shared executor with room (starting a new one when
   * none has), calling `onPlaced` once the executor is known and before it is
   * asked (persist the handle there; a promise it returns is waited for, and
   * its rejection fails the start). Resolves with the executor's start
   * report and where it ran; a start refused because the executor was
   * exiting, or that never reached it, is retried on another. On abort it
   * rejects at once and a task that still starts is killed. `told`, with a
   * task started: the task's exit as the executor tells it on the start's
   * connection (`follow`; its `exit` undefined when that connection ends
   * without it: ask the task's socket then).
   */
  async start(
    config: unknown,
    onPlaced: (place: HostPlace) => void | Promise<void>,
    signal?: AbortSignal,
  ): Promise<{ report: StartReport; place: HostPlace; told?: Pick<FollowedAsk, 'exit' | 'hold'> }> {
    for (let attempt = 0; ; attempt++) {
      if (signal?.aborted) throw new AbortedError('task start aborted', { cause: signal.reason });
      const host = this.#pick();
      let place: HostPlace;
      try {
        const { pid, startTicks } = await host.ready;
        place = { pid, startTicks, socketPath: host.socketPath };
      } catch (err) {
        this.#drop(host);
        if (attempt < 2) continue;
        return { report: { ok: false, error: `the executor did not start: ${(err as Error).message}` }, place: { pid: 0, startTicks: 0, socketPath: host.socketPath } };
      }
      try {
        await onPlaced(place);
      } catch (err) {
        host.tasks--;
        throw err;
      }
      if (signal?.aborted) {
        host.tasks--;
        throw new AbortedError('task start aborted', { cause: signal.reason });
      }
      const followed = askExecutorFollowing(host.socketPath, { op: 'start', config, follow: true });
      const asked = followed.answer;
      let report: StartReport;
      try {
        report = (await (signal ? raceAbort(asked, signal) : asked)) as StartReport;
      } catch (err) {
        if (err instanceof AbortedError) {
          host.tasks--;
          void asked.then((r) => r.taskPid && killTaskGroup(r.taskPid)).catch(() => undefined);
          throw err;
        }
        const code = ((err as ExecutorUnavailable).cause as NodeJS.ErrnoException | undefined)?.code;
        this.#drop(host);
        // Never delivered: safe to start it elsewhere. Delivered and then lost: the task may run; report a failure.
        if ((code === 'ENOENT' || code === 'ECONNREFUSED') && attempt < 2) continue;
        return { report: { ok: false, error: (err as Error).message }, place };
      }
      if (!report.ok) {
        host.tasks--;
        if (report.retry && attempt < 2) {
          this.#drop(host);
          continue;
        }
        return { report, place };
      }
      return { report, place, told: followed };
    }
  }

  /** A task on the executor `pid` is gone (destroyed): its place is free again. Safe to repeat only once per task. */
  release(pid: number): void {
    const host = this.#hosts.find((h) => h.pid === pid && !h.gone);
    if (host && host.tasks > 0) host.tasks--;
    // An executor left with no task and no wait exits by itself: a spare takes its place.
    if (host?.tasks === 0 && this.#opts.idleExitMs === 0 && this.#opts.spare) {
      this.#drop(host);
      this.warm();
    }
  }

  /**
   * Starts executors until those running or starting have room for the
   * starts expected and not yet begun, `count` more among them: what a burst
   * of task starts will need, started side by side while the allocations are
   * set up, rather than each when a start finds no room (then 1-2 s of a
   * burst's starts waited on executors' Node starts). A hint forgotten after
   * EXPECT_FOR_MS; an executor that gets no task exits by itself (5 s after
   * its start, as any new one). The executors it asks for are forked one a
   * turn of the loop (#spawnQueued), a start finding no room takes one at
   * once. Never throws.
   */
  expect(count: number): void {
    if (this.#closed) return;
    const now = Date.now();
    if (now - this.#expectedAt > EXPECT_FOR_MS) this.#expected = 0;
    this.#expected += count;
    this.#expectedAt = now;
    let room = this.#queued * this.#opts.tasksPerExecutor;
    for (const h of this.#hosts) if (!h.gone) room += Math.max(0, this.#opts.tasksPerExecutor - h.tasks);
    let more = 0;
    for (; room < this.#expected; room += this.#opts.tasksPerExecutor) more++;
    if (more === 0) return;
    const first = this.#queued === 0;
    this.#queued += more;
    if (first) this.#spawnQueued();
  }

  /**
   * The executors expect() asked for, one a turn: each is a fork of the
   * agent (~15 ms of its loop, more under load), and six in one turn held
   * the burst's first allocations for ~90 ms.
   */
  #spawnQueued(): void {
    if (this.#queued === 0) return;
    if (this.#closed) {
      this.#queued = 0;
      return;
    }
    this.#queued--;
    this.#spawn(false, true);
    if (this.#queued > 0) setImmediate(() => this.#spawnQueued());
  }

  /** With `spare`: starts a spare executor unless one with room runs or starts already. */
  warm(): void {
    if (this.#opts.spare && !this.#closed && !this.#hosts.some((h) => !h.gone && h.tasks < this.#opts.tasksPerExecutor)) this.#spawn(true);
  }

  /**
   * Ends the spares that never got a task and starts no more: they would
   * exit on their pipe's end, killing them makes an agent's stop leave none
   * behind at once. Tasks and their executors keep running.
   */
  close(): void {
    this.#closed = true;
    for (const h of this.#hosts) {
      if (!h.lifeline) continue;
      h.lifeline.destroy();
      // A detached spare leads its own process group.
      if (h.tasks === 0 && h.pid) killTaskGroup(h.pid);
    }
  }

  /** Counts a recovered task's place on a still-running shared executor, so new tasks may join it. */
  adopt(place: HostPlace): void {
    if (!isAlive(place.pid, place.startTicks)) return;
    const known = this.#hosts.find((h) => h.pid === place.pid && h.startTicks === place.startTicks);
    if (known) {
      known.tasks++;
      return;
    }
    this.#hosts.push({ ...place, ready: Promise.resolve({ pid: place.pid, startTicks: place.startTicks }), tasks: 1, gone: false });
  }

  /**
   * The executor with the fewest tasks among those with room (the first of
   * them on a tie), else a new one. Least-loaded rather than first-fit: the
   * starts of a burst, arriving a few at a time, spread over the executors
   * started for it (expect()) and spawn side by side, rather than filling one
   * executor, which spawns its tasks one after the other, while the rest idle.
   */
  #pick(): Host {
    for (;;) {
      let best: Host | undefined;
      for (const h of this.#hosts) {
        if (h.gone || h.tasks >= this.#opts.tasksPerExecutor) continue;
        if (!best || h.tasks < best.tasks) best = h;
      }
      if (!best) break;
      // Only the one chosen is checked (a read of its /proc stat), not every executor at each start.
      if (best.pid && !isAlive(best.pid, best.startTicks)) {
        this.#drop(best);
        continue;
      }
      return this.#take(best);
    }
    // No room: one expect() queued is started now rather than in its turn.
    if (this.#queued > 0) this.#queued--;
    return this.#take(this.#spawn(false));
  }

  #take(host: Host): Host {
    host.tasks++;
    if (this.#expected > 0) this.#expected--;
    this.warm();
    return host;
  }

  #spawn(spare: boolean, ahead = spare): Host {
    // One started ahead of need may come before the first task made the driver's state dir (a task's start makes it first).
    if (ahead) mkdirSync(this.#opts.dir, { recursive: true, mode: 0o700 });
    const socketPath = join(this.#opts.dir, `x-${randomBytes(4).toString('hex')}.sock`);
    const config = { mode: 'host', socketPath, idleExitMs: this.#opts.idleExitMs, ...(spare ? { spare } : {}) };
    const { child, report } = spawnExecutor(this.#opts.executorPath, this.#opts.dir, config, undefined, spare);
    const host: Host = { socketPath, pid: 0, startTicks: 0, tasks: 0, gone: false, ready: Promise.resolve({ pid: 0, startTicks: 0 }) };
    if (spare) {
      // Held open until the spare lets go of its end with its first task, or close().
      const lifeline = child.stdio[4] as Socket;
      host.lifeline = lifeline;
      lifeline.on('error', () => undefined).on('close', () => delete host.lifeline).unref();
    }
    host.ready = report.then((r) => {
      child.unref();
      if (!r.ok || !r.pid) throw new Error(r.error ?? 'no report');
      host.pid = r.pid;
      host.startTicks = r.executorStartTicks ?? 0;
      this.#opts.logger?.debug({ pid: r.pid, spare, ...(r.warmStart ? { warmStart: r.warmStart } : {}) }, 'executor started');
      return { pid: host.pid, startTicks: host.startTicks };
    });
    // One that never came up makes room for the next (a pick drops it too).
    host.ready.catch(() => this.#drop(host));
    this.#hosts.push(host);
    return host;
  }

  #drop(host: Host): void {
    host.gone = true;
    const i = this.#hosts.indexOf(host);
    if (i >= 0) this.#hosts.splice(i, 1);
  }
}

/** `p`, or an AbortedError (`message`) once `signal` aborts first. */
export function raceAbort<T>(p: Promise<T>, signal: AbortSignal, message = 'task start aborted'): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      reject(new AbortedError(message, { cause: signal.reason }));
      return;
    }
    const onAbort = (): void => reject(new AbortedError(message, { cause: signal.reason }));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function killTaskGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone
  }
}
