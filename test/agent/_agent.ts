// Runs the real `berth` binary: `berth agent ...` as a long-lived child
// process (its printed BERTH_ADDR / BERTH_TOKEN read back), and one-shot
// commands against it.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { until } from '../support/runtime-cluster.js';

export const REPO = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
export const BERTH = path.join(REPO, 'bin', 'berth.js');
export const EXAMPLES = path.join(REPO, 'examples');

export interface Result {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function env(extra: Record<string, string>): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete e['BERTH_LOG_LEVEL'];
  delete e['CSI_ENDPOINT'];
  if (!('BERTH_ADDR' in extra)) delete e['BERTH_ADDR'];
  if (!('BERTH_TOKEN' in extra)) delete e['BERTH_TOKEN'];
  return e;
}

/** A running berth process with its output so far. */
export class BerthProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<Result>;

  constructor(args: readonly string[], opts: { env?: Record<string, string>; stdin?: string } = {}) {
    this.child = spawn(process.execPath, [BERTH, ...args], { cwd: REPO, env: env(opts.env ?? {}), stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    if (opts.stdin !== undefined) this.child.stdin!.end(opts.stdin);
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => (this.stdout += d));
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.stderr += d));
    this.exited = new Promise((resolve, reject) => {
      this.child.on('error', reject);
      this.child.on('close', (code, signal) => resolve({ code, signal, stdout: this.stdout, stderr: this.stderr }));
    });
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Sends `signal` and waits for the exit; SIGKILLs after `ms`. */
  async stop(signal: NodeJS.Signals = 'SIGINT', ms = 60_000): Promise<Result> {
    if (this.running) this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), ms);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Runs `berth ...args` to completion; kills it after `timeoutMs`. */
export async function berth(args: readonly string[], opts: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<Result> {
  const p = new BerthProcess(args, opts);
  const timer = setTimeout(() => p.child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
  try {
    return await p.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** A berth agent as a child process, with what it printed once ready. */
export class AgentUnderTest extends BerthProcess {
  addr = '';
  token = '';

  /** Resolves once the agent printed BERTH_ADDR (and BERTH_TOKEN when `wantToken`). */
  async ready(wantToken: boolean, ms = 60_000): Promise<this> {
    await until(
      'the agent to print BERTH_ADDR',
      () => {
        if (!this.running) throw new Error(`the agent exited: ${this.stderr}${this.stdout}`);
        const addr = /^BERTH_ADDR=(\S+)$/m.exec(this.stdout)?.[1];
        const token = /^BERTH_TOKEN=(\S+)$/m.exec(this.stdout)?.[1];
        if (!addr || (wantToken && !token)) return false;
        this.addr = addr;
        this.token = token ?? '';
        return true;
      },
      ms,
    );
    return this;
  }

  /** `berth ...args` against this agent (BERTH_ADDR / BERTH_TOKEN set). */
  cli(args: readonly string[], opts: { token?: string; timeoutMs?: number } = {}): Promise<Result> {
    return berth(args, { env: { BERTH_ADDR: this.addr, BERTH_TOKEN: opts.token ?? this.token }, ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}) });
  }

  /** A GET on the agent's API, JSON-decoded. */
  async get<T>(p: string, token = this.token): Promise<T> {
    const res = await fetch(this.addr + p, { headers: { authorization: `Bearer ${token}` } });
    if (!res.ok) throw new Error(`GET ${p}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }
}

/** Starts `berth agent ...args`. */
export function startAgent(args: readonly string[]): AgentUnderTest {
  return new AgentUnderTest(['agent', ...args]);
}

/** A fresh directory with a short path (plugin sockets must fit in 107 bytes). */
export function tempDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(tmpdir(), prefix));
}
