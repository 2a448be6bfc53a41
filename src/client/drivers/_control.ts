// The driver's side of the executor's control socket: one JSON line per
// connection, one JSON line back.

import { connect } from 'node:net';
import { AbortedError } from '../../lib/index.js';

/** The executor is not answering (gone, or its socket removed after the task exited). */
export class ExecutorUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ExecutorUnavailable';
  }
}

export interface ExecutorAnswer {
  ok?: boolean;
  error?: string;
  running?: boolean;
  taskPid?: number;
  exit?: { exitCode: number; signal: string | null; oomKilled: boolean; message: string; finishedAt: number } | null;
}

/** Sends one request and waits for its answer. Rejects with ExecutorUnavailable or AbortedError. */
export function askExecutor(socketPath: string, req: Record<string, unknown>, signal?: AbortSignal): Promise<ExecutorAnswer> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new AbortedError('executor request aborted', { cause: signal.reason }));
      return;
    }
    const sock = connect(socketPath);
    let buf = '';
    let settled = false;
    const onAbort = (): void => {
      settle(() => reject(new AbortedError('executor request aborted', { cause: signal?.reason })));
    };
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      sock.destroy();
      fn();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    sock.setEncoding('utf8');
    sock.on('connect', () => sock.write(`${JSON.stringify(req)}\n`));
    sock.on('data', (d: string) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        const line = buf.slice(0, nl);
        settle(() => {
          try {
            resolve(JSON.parse(line) as ExecutorAnswer);
          } catch (err) {
            reject(new ExecutorUnavailable('executor sent a malformed answer', { cause: err }));
          }
        });
      }
    });
    sock.on('error', (err) => settle(() => reject(new ExecutorUnavailable(`executor socket: ${err.message}`, { cause: err }))));
    sock.on('close', () => settle(() => reject(new ExecutorUnavailable('executor closed the connection without answering'))));
  });
}
