// The host's log collector for tasks of external driver plugins (Nomad's
// client/logmon): the driver is given two FIFOs as StdoutPath/StderrPath and
// a detached process (the executor script in logmon mode) reads them into
// rotated files `<task>.stdout.<n>` beside the built-in drivers' own, by the
// task's `logs {}`. Detached, so a task's output keeps flowing (and its
// writes never fail) while no agent runs; found again from its pid file.

import { execFile, spawn } from 'node:child_process';
import { closeSync, constants, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { BerthError, describeError } from '../../lib/index.js';

const run = promisify(execFile);

export type LogMonitorErrorCode = 'LOGMON_FAILED';

/** The log monitor could not be started. */
export class LogMonitorError extends BerthError<LogMonitorErrorCode> {}

/** Where a task's logs go and how they rotate (the task's `logs {}`). */
export interface LogMonitorTarget {
  /** The allocation's alloc/logs. */
  dir: string;
  taskName: string;
  maxFiles: number;
  maxFileSizeMb: number;
}

/** The FIFOs a driver writes the task's output into. */
export interface LogFifos {
  stdoutPath: string;
  stderrPath: string;
}

interface PidFile {
  pid: number;
  startTicks: number;
}

function startTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  } catch {
    return undefined;
  }
}

/** Nomad's FIFO names: `<logs>/.<task>.stdout.fifo`. */
export function logFifos(t: Pick<LogMonitorTarget, 'dir' | 'taskName'>): LogFifos {
  return { stdoutPath: path.join(t.dir, `.${t.taskName}.stdout.fifo`), stderrPath: path.join(t.dir, `.${t.taskName}.stderr.fifo`) };
}

const pidFileOf = (t: Pick<LogMonitorTarget, 'dir' | 'taskName'>): string => path.join(t.dir, `.${t.taskName}.logmon.json`);

/** The task's running log monitor, if any (pid and start time checked, so a reused pid is not taken for it). */
function running(t: Pick<LogMonitorTarget, 'dir' | 'taskName'>): PidFile | undefined {
  try {
    const p = JSON.parse(readFileSync(pidFileOf(t), 'utf8')) as PidFile;
    return startTicks(p.pid) === p.startTicks ? p : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Makes the task's FIFOs and starts its log monitor, or reuses the one
 * already running (a restarted task, a restarted agent). Resolves as soon as
 * the FIFOs exist, with `ready`, which settles once the monitor holds them.
 * Until then the host holds them open itself (read-write, never blocking),
 * so a driver may open them for writing at once, without blocking, and its
 * first output waits in the pipe: the driver's StartTask runs while the
 * monitor starts. `script` is the executor script (drivers' EXECUTOR_PATH).
 * Throws (and `ready` rejects with) LogMonitorError.
 */
export async function startLogMonitor(t: LogMonitorTarget, script: string): Promise<LogFifos & { ready: Promise<void> }> {
  const fifos = logFifos(t);
  if (running(t) && existsSync(fifos.stdoutPath) && existsSync(fifos.stderrPath)) return { ...fifos, ready: Promise.resolve() };
  const fail = (err: unknown): LogMonitorError => new LogMonitorError('LOGMON_FAILED', `cannot start the log monitor of task ${t.taskName}: ${describeError(err)}`, { cause: err });
  let held: number[];
  try {
    mkdirSync(t.dir, { recursive: true });
    const missing = [fifos.stdoutPath, fifos.stderrPath].filter((f) => !existsSync(f));
    if (missing.length) await run('mkfifo', ['-m', '0666', ...missing]);
    held = [fifos.stdoutPath, fifos.stderrPath].map((f) => openSync(f, constants.O_RDWR | constants.O_NONBLOCK));
  } catch (err) {
    throw fail(err);
  }
  const ready = launch(t, fifos, script)
    .catch((err: unknown) => {
      throw fail(err);
    })
    .finally(() => {
      for (const fd of held) closeSync(fd);
    });
  return { ...fifos, ready };
}

async function launch(t: LogMonitorTarget, fifos: LogFifos, script: string): Promise<void> {
  const cfg = {
    mode: 'logmon',
    dir: t.dir,
    maxFiles: t.maxFiles,
    maxFileBytes: Math.round(t.maxFileSizeMb * 1024 * 1024),
    fifos: [
      { fifo: fifos.stdoutPath, base: `${t.taskName}.stdout` },
      { fifo: fifos.stderrPath, base: `${t.taskName}.stderr` },
    ],
  };
  const child = spawn(process.execPath, [script], { stdio: ['pipe', 'ignore', 'ignore', 'pipe'], detached: true });
  child.stdin?.end(JSON.stringify(cfg));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdio[3]?.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stdio[3]?.on('close', () => resolve(out));
    child.once('error', reject);
  });
  child.unref();
  const msg = JSON.parse(line || '{"ok":false,"error":"it exited without a word"}') as { ok: boolean; pid?: number; startTicks?: number; error?: string };
  if (!msg.ok || !msg.pid) throw new Error(msg.error ?? 'no pid');
  writeFileSync(pidFileOf(t), JSON.stringify({ pid: msg.pid, startTicks: msg.startTicks }));
}

/**
 * Stops the task's log monitor (it drains what is in the FIFOs first) and
 * resolves once it exited (at most `timeoutMs`). Safe to repeat; never throws.
 */
export async function stopLogMonitor(t: Pick<LogMonitorTarget, 'dir' | 'taskName'>, timeoutMs = 3000): Promise<void> {
  const p = running(t);
  rmSync(pidFileOf(t), { force: true });
  if (!p) return;
  try {
    process.kill(p.pid, 'SIGTERM');
  } catch {
    return;
  }
  const until = Date.now() + timeoutMs;
  while (startTicks(p.pid) === p.startTicks && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
}
