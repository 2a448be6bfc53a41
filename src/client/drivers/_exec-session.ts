// Running a command inside a task for `alloc exec`: on a terminal (node-pty)
// or over pipes. Private to src/client/drivers (ExecutorDriver uses it).

import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type * as NodePty from 'node-pty';
import { AbortedError } from '../../lib/index.js';
import { DriverError } from './driver-error.js';
import type { ExecOptions } from './task-driver.js';

/** The sessions running now: each is killed when the driver shuts down. */
export type ExecSessions = Set<{ kill(): void }>;

// node-pty (a native addon) loads with the first terminal session, not with the agent. It is CommonJS marked
// __esModule: whether its functions are on `default` depends on who imports it (Node, tsx, the CommonJS bundle).
let loaded: Promise<typeof NodePty> | undefined;
const nodePty = (): Promise<typeof NodePty> => (loaded ??= import('node-pty').then((m): typeof NodePty => (m as { default?: typeof NodePty }).default ?? m));

/** Runs the command on a new terminal of the caller's size, following its resizes; resolves with its exit code. */
export async function execTty(sessions: ExecSessions, file: string, args: string[], env: Record<string, string>, cwd: string, opts: ExecOptions): Promise<{ exitCode: number }> {
  const pty = await nodePty();
  if (opts.signal?.aborted) throw new AbortedError('exec aborted', { cause: opts.signal.reason });
  return new Promise((resolve, reject) => {
    const term = pty.spawn(file, args, { name: 'xterm-256color', cols: opts.size?.cols ?? 80, rows: opts.size?.rows ?? 24, cwd, env });
    const session = { kill: () => term.kill('SIGKILL') };
    sessions.add(session);
    let closed = false;
    const onAbort = (): void => {
      session.kill();
      reject(new AbortedError('exec aborted', { cause: opts.signal?.reason }));
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    term.onData((d) => opts.stdout.write(d));
    term.onExit(({ exitCode, signal }) => {
      closed = true;
      sessions.delete(session);
      opts.signal?.removeEventListener('abort', onAbort);
      resolve({ exitCode: signal ? 128 + signal : exitCode });
    });
    void (async () => {
      for await (const chunk of opts.stdin ?? []) {
        if (closed) break;
        term.write(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      }
    })().catch(() => undefined);
    void (async () => {
      for await (const size of opts.resize ?? []) {
        if (closed) break;
        term.resize(Math.max(1, size.cols), Math.max(1, size.rows));
      }
    })().catch(() => undefined);
  });
}

/** Runs the command over pipes (stdin, stdout, stderr); resolves with its exit code. */
export function execPipes(sessions: ExecSessions, file: string, args: string[], env: Record<string, string>, cwd: string, opts: ExecOptions): Promise<{ exitCode: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const session = { kill: () => child.kill('SIGKILL') };
    sessions.add(session);
    const onAbort = (): void => {
      session.kill();
      reject(new AbortedError('exec aborted', { cause: opts.signal?.reason }));
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (d: Buffer) => opts.stdout.write(d));
    child.stderr.on('data', (d: Buffer) => (opts.stderr ?? opts.stdout).write(d));
    child.stdin.on('error', () => undefined);
    child.on('error', (err) => {
      sessions.delete(session);
      reject(new DriverError('DRIVER_START_FAILED', `exec failed: ${err.message}`, { cause: err }));
    });
    child.on('close', (code, sig) => {
      sessions.delete(session);
      opts.signal?.removeEventListener('abort', onAbort);
      resolve({ exitCode: sig ? 128 + (constants.signals[sig] ?? 0) : (code ?? -1) });
    });
    void (async () => {
      for await (const chunk of opts.stdin ?? []) child.stdin.write(chunk);
      child.stdin.end();
    })().catch(() => child.stdin.destroy());
  });
}
