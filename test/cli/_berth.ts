// Runs the real `bin/berth.js` as a child process, the way a user or a script
// does: no TTY, output captured, exit code returned.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '../support/eventually.js';

export const BERTH = fileURLToPath(new URL('../../bin/berth.js', import.meta.url));

export interface BerthResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The environment berth runs with: ours, minus anything that would change its behaviour. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  if (!('CSI_ENDPOINT' in extra)) delete env['CSI_ENDPOINT'];
  delete env['BERTH_LOG_LEVEL'];
  return env;
}

/** A running berth process with its output so far. */
export interface BerthProcess {
  child: ChildProcess;
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves when the process has exited. */
  exited: Promise<BerthResult>;
}

/** Starts `berth ...args` and returns at once. */
export function startBerth(args: readonly string[], opts: { env?: Record<string, string> } = {}): BerthProcess {
  const child = spawn(process.execPath, [BERTH, ...args], { env: cleanEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<BerthResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    exited,
  };
}

/**
 * Runs `berth ...args` to completion (asynchronously, so that an in-process
 * fake plugin keeps answering) and kills it if it outlives `timeoutMs`.
 */
export async function berth(args: readonly string[], opts: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<BerthResult> {
  const proc = startBerth(args, opts);
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), opts.timeoutMs ?? 20_000);
  try {
    return await proc.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** A fresh directory with a short path (unix socket paths must stay under 108 bytes). */
export function shortTempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** Resolves once `path` is a socket; throws after `timeoutMs` or when `proc` exits first. */
export async function waitForSocket(path: string, proc: BerthProcess, timeoutMs = 15_000): Promise<void> {
  const gone = new AbortController();
  void proc.exited.then(() => gone.abort(new Error('berth exited before its socket appeared')));
  try {
    await eventually(`a unix socket at ${path}`, async () => (await stat(path).catch(() => undefined))?.isSocket(), { timeoutMs, intervalMs: 50, signal: gone.signal });
  } catch (err) {
    throw new Error(`${(err as Error).message}; stderr:\n${proc.stderr}`, { cause: err });
  }
}

/** Parses stdout as the single JSON document `--json` promises. */
export function json<T = Record<string, unknown>>(result: BerthResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON document:\n${result.stdout}\nstderr:\n${result.stderr}`);
  }
}
