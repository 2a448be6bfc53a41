// End-to-end helpers for `berth agent` as a user runs it: the real
// bin/berth.js in its own process (dev, server or client mode), the lines it
// prints once ready, the real CLI against it, and checks that nothing of it
// is left mounted or running.

import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { eventually, type NotYet } from './eventually.js';

export const REPO = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
export const BERTH = `${REPO}/bin/berth.js`;

export interface BerthResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `cmd ...args` to completion (no TTY; stdin closed, or fed `input`)
 * and resolves with its exit code and output; SIGKILLs it after
 * `timeoutMs`. Rejects only when it cannot be started.
 */
export function runProcess(
  cmd: string,
  args: readonly string[],
  opts: { env: Record<string, string>; cwd?: string; timeoutMs?: number; input?: string },
): Promise<BerthResult> {
  const child = spawn(cmd, args, { env: opts.env, ...(opts.cwd ? { cwd: opts.cwd } : {}), stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  if (opts.input !== undefined) child.stdin?.end(opts.input);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs `berth ...args` to completion with `env` (no TTY), killing it after `timeoutMs`. */
export function berth(args: readonly string[], opts: { env: Record<string, string>; timeoutMs?: number; cwd?: string; input?: string }): Promise<BerthResult> {
  return runProcess(process.execPath, [BERTH, ...args], opts);
}

/** A TCP port that was free a moment ago (bound to 127.0.0.1:0, then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** The environment an agent or the CLI runs with: ours without BERTH_* and CSI_ENDPOINT. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k.startsWith('BERTH_') || k === 'CSI_ENDPOINT') continue;
    env[k] = v;
  }
  return { ...env, NO_COLOR: '1', ...extra };
}

/**
 * `berth agent ...args` as its own process. start() resolves once it printed
 * `BERTH_ADDR=...` (and, in dev mode, `BERTH_TOKEN=...`); the agent's stdout
 * and stderr are kept for failure messages and secret checks.
 */
export class AgentRun {
  readonly args: readonly string[];
  child: ChildProcess | undefined;
  stdout = '';
  stderr = '';
  addr = '';
  token = '';
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> = Promise.resolve({ code: null, signal: null });

  /** Flags for node itself, before the berth script (e.g. `--cpu-prof`, which NODE_OPTIONS does not take). */
  readonly nodeArgs: readonly string[];

  /** Variables added to the agent's (clean) environment. */
  readonly env: Record<string, string>;

  /** The agent runs in a session of its own (see ClusterOptions.ownSessions in process-cluster.ts). */
  readonly ownSession: boolean;

  /** The `berth` script run (another build's bin/berth.js, for a bench comparing two builds); this checkout's by default. */
  readonly berth: string;

  constructor(args: readonly string[], opts: { nodeArgs?: readonly string[]; env?: Record<string, string>; ownSession?: boolean; berth?: string } = {}) {
    this.args = args;
    this.berth = opts.berth ?? BERTH;
    this.nodeArgs = opts.nodeArgs ?? [];
    this.env = opts.env ?? {};
    this.ownSession = opts.ownSession ?? false;
  }

  async start(opts: { needToken?: boolean; timeoutMs?: number } = {}): Promise<this> {
    this.stdout = '';
    this.stderr = '';
    this.addr = '';
    const child = spawn(process.execPath, [...this.nodeArgs, this.berth, 'agent', ...this.args], { env: cleanEnv(this.env), stdio: ['ignore', 'pipe', 'pipe'], detached: this.ownSession });
    this.child = child;
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (this.stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.stderr += d));
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const gone = new AbortController();
    void this.exited.then(() => gone.abort(new Error('it exited before it was ready')));
    const needToken = opts.needToken ?? this.args.includes('--dev');
    try {
      await eventually(
        `berth agent ${this.args.join(' ')} to print BERTH_ADDR${needToken ? ' and BERTH_TOKEN' : ''}`,
        () => {
          const addr = /^BERTH_ADDR=(\S+)$/m.exec(this.stdout)?.[1];
          const token = /^BERTH_TOKEN=(\S+)$/m.exec(this.stdout)?.[1];
          if (!addr || (needToken && !token)) return false;
          this.addr = addr;
          if (token) this.token = token;
          return true;
        },
        { timeoutMs: opts.timeoutMs ?? 60_000, intervalMs: 50, signal: gone.signal },
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}\nstdout:\n${this.stdout}\nstderr:\n${this.stderr.slice(-4000)}`, { cause: err });
    }
    return this;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Sends `signal` and waits for the exit (SIGKILL after `timeoutMs`). */
  async stop(signal: NodeJS.Signals = 'SIGINT', timeoutMs = 90_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.running) return this.exited;
    this.child!.kill(signal);
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs the CLI against this agent (its address; `token` or the agent's own). */
  cli(args: readonly string[], opts: { token?: string; timeoutMs?: number; addr?: string } = {}): Promise<BerthResult> {
    return berth(args, { env: cleanEnv({ BERTH_ADDR: opts.addr ?? this.addr, BERTH_TOKEN: opts.token ?? this.token }), timeoutMs: opts.timeoutMs ?? 60_000 });
  }
}

/** Fails with the command's output unless it exited 0; returns its stdout. */
export function ok(r: BerthResult, what: string): string {
  if (r.code !== 0) throw new Error(`${what}: exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  return r.stdout;
}

export { killProcessesUnder, mountsUnder } from './procs.js';

/** The one wait of the tests (test/support/eventually.ts), polling every 200 ms for up to `ms` (60 s). */
export function until<T>(what: string, fn: () => T | Promise<T>, ms = 60_000): Promise<Exclude<T, NotYet>> {
  return eventually(what, fn, { timeoutMs: ms, intervalMs: 200 });
}
