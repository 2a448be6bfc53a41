// The host's log collector for tasks of external driver plugins (Nomad's
// client/logmon): the driver is given two FIFOs as StdoutPath/StderrPath and
// one detached process per node (the executor script in logmon mode) reads
// them into rotated files `<task>.stdout.<n>` beside the built-in drivers'
// own, by the task's `logs {}`. Detached, so a task's output keeps flowing
// (and its writes never fail) while no agent runs; the next agent finds it
// at the same control socket. One per node, not per task: adding a task is
// a message, not a process start.

import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { BerthError, describeError, helperProcessEnv } from '../../lib/index.js';

const run = promisify(execFile);

export type LogMonitorErrorCode = 'LOGMON_FAILED';

/** The log monitor could not be reached or started. */
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

/** Nomad's FIFO names: `<logs>/.<task>.stdout.fifo`. */
export function logFifos(t: Pick<LogMonitorTarget, 'dir' | 'taskName'>): LogFifos {
  return { stdoutPath: path.join(t.dir, `.${t.taskName}.stdout.fifo`), stderrPath: path.join(t.dir, `.${t.taskName}.stderr.fifo`) };
}

/**
 * The node's log monitor, seen from the host. `add` and `remove` start the
 * monitor process when it is not running (one start, shared by concurrent
 * callers). It outlives an agent whose tasks keep running, lets go of a
 * task whose FIFOs are removed, and exits once idle for a minute; stop()
 * ends it at once, for an agent that leaves no task behind (a dev agent's
 * Ctrl-C).
 */
export class LogMonitor {
  readonly socketPath: string;
  readonly #script: string;
  #starting?: Promise<void>;

  /** `socketPath`: the control socket (keep it under 107 bytes); `script`: the executor script (drivers' EXECUTOR_PATH). */
  constructor(opts: { socketPath: string; script: string }) {
    this.socketPath = opts.socketPath;
    this.#script = opts.script;
  }

  /**
   * Makes the task's FIFOs and has the monitor hold and read them (a repeat,
   * a restarted task or agent, is a no-op). Resolves once they are held, so
   * a driver opening them for writing never blocks. Throws LogMonitorError.
   */
  async add(t: LogMonitorTarget): Promise<LogFifos> {
    const fifos = logFifos(t);
    try {
      mkdirSync(t.dir, { recursive: true });
      const missing = [fifos.stdoutPath, fifos.stderrPath].filter((f) => !existsSync(f));
      if (missing.length) await run('mkfifo', ['-m', '0666', ...missing]);
      const target = {
        dir: t.dir,
        maxFiles: t.maxFiles,
        maxFileBytes: Math.round(t.maxFileSizeMb * 1024 * 1024),
        fifos: [
          { fifo: fifos.stdoutPath, base: `${t.taskName}.stdout` },
          { fifo: fifos.stderrPath, base: `${t.taskName}.stderr` },
        ],
      };
      await this.#request({ op: 'add', target });
      return fifos;
    } catch (err) {
      throw new LogMonitorError('LOGMON_FAILED', `cannot hand the output of task ${t.taskName} to the log monitor: ${describeError(err)}`, { cause: err });
    }
  }

  /** The monitor drains the task's FIFOs and lets go of them. Safe to repeat; never throws. */
  async remove(t: Pick<LogMonitorTarget, 'dir' | 'taskName'>): Promise<void> {
    if (!existsSync(this.socketPath)) return;
    await this.#request({ op: 'remove', fifo: logFifos(t).stdoutPath }, false).catch(() => undefined);
  }

  /**
   * Ends the monitor process, whichever agent started it: its socket is
   * removed and the process serving it (found by its command line, which
   * names the socket) gets SIGTERM. Only for when no task's output flows
   * through it any more. Never throws.
   */
  stop(): void {
    const pids = processesServing(this.#script, this.socketPath);
    rmSync(this.socketPath, { force: true });
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
  }

  async #request(msg: unknown, start = true): Promise<void> {
    try {
      return await this.#send(msg);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (!start || (code !== 'ENOENT' && code !== 'ECONNREFUSED')) throw err;
    }
    await this.#start();
    return this.#send(msg);
  }

  #send(msg: unknown): Promise<void> {
    return new Promise((resolve, reject) => {
      const conn = net.createConnection(this.socketPath);
      let out = '';
      conn.setEncoding('utf8');
      conn.setTimeout(30_000, () => conn.destroy(new Error('the log monitor did not answer')));
      conn.on('connect', () => conn.write(`${JSON.stringify(msg)}\n`));
      conn.on('data', (d: string) => (out += d));
      conn.on('error', reject);
      conn.on('close', () => {
        try {
          const r = JSON.parse(out) as { ok: boolean; error?: string };
          if (r.ok) resolve();
          else reject(new Error(r.error ?? 'refused'));
        } catch {
          reject(new Error('the log monitor closed the connection without an answer'));
        }
      });
    });
  }

  #start(): Promise<void> {
    this.#starting ??= (async () => {
      mkdirSync(path.dirname(this.socketPath), { recursive: true });
      // The socket path is on the command line, so whoever cleans a data dir finds the monitor by it.
      const child = spawn(process.execPath, [this.#script, this.socketPath], { stdio: ['pipe', 'ignore', 'ignore', 'pipe'], detached: true, env: helperProcessEnv() });
      child.stdin?.end(JSON.stringify({ mode: 'logmon', socketPath: this.socketPath }));
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdio[3]?.on('data', (c: Buffer) => (out += c.toString('utf8')));
        child.stdio[3]?.on('close', () => resolve(out));
        child.once('error', reject);
      });
      child.unref();
      const r = JSON.parse(line || '{"ok":false,"error":"it exited without a word"}') as { ok: boolean; error?: string };
      if (!r.ok) throw new Error(`the log monitor did not start: ${r.error ?? 'unknown'}`);
    })().finally(() => {
      this.#starting = undefined;
    });
    return this.#starting;
  }
}

/**
 * The pids of processes started as `node <script> <socketPath>` (the log monitor of that socket), from /proc.
 * A build's `executor.cjs` and an older build's `executor.mjs` in the same place are the same script: a
 * monitor started before an upgrade is still found.
 */
function processesServing(script: string, socketPath: string): number[] {
  const out: number[] = [];
  const sameScript = (file: string | undefined): boolean => file !== undefined && file.replace(/\.[cm]js$/, '') === script.replace(/\.[cm]js$/, '');
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const argv = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (argv.length === 3 && sameScript(argv[1]) && argv[2] === socketPath) out.push(Number(e));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}
