// The driver's side of the executor's control socket: one JSON line per
// connection, one JSON line back.

import { connect, type Socket } from 'node:net';
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
  return ask(socketPath, req, signal).answer;
}

/**
 * As askExecutor, for a request the executor may answer twice on the same
 * connection (a shared executor's `start` with `follow`: the start report,
 * then the task's exit once it is recorded). `exit` resolves with the
 * second answer's exit, or undefined when the connection ends without one
 * (an executor that does not follow, one that died, an abort); never
 * rejects. Once answered, the connection keeps the process alive only
 * while held: `hold(true)` for each who waits on `exit`, `hold(false)` when
 * they stop.
 */
export function askExecutorFollowing(socketPath: string, req: Record<string, unknown>, signal?: AbortSignal): FollowedAsk {
  return ask(socketPath, req, signal, true);
}

/** A request answered twice (askExecutorFollowing). */
export interface FollowedAsk {
  answer: Promise<ExecutorAnswer>;
  exit: Promise<ExecutorAnswer['exit'] | undefined>;
  hold: (alive: boolean) => void;
}

function ask(
  socketPath: string,
  req: Record<string, unknown>,
  signal: AbortSignal | undefined,
  follow = false,
): FollowedAsk {
  let exitSeen: (exit: ExecutorAnswer['exit'] | undefined) => void = () => undefined;
  let sock: Socket | undefined;
  const exit = new Promise<ExecutorAnswer['exit'] | undefined>((resolve) => (exitSeen = resolve));
  const answer = new Promise<ExecutorAnswer>((resolve, reject) => {
    if (signal?.aborted) {
      exitSeen(undefined);
      reject(new AbortedError('executor request aborted', { cause: signal.reason }));
      return;
    }
    const conn = connect(socketPath);
    sock = conn;
    let buf = '';
    let settled = false;
    const onAbort = (): void => {
      settle(() => reject(new AbortedError('executor request aborted', { cause: signal?.reason })));
    };
    const settle = (fn: () => void, keepOpen = false): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      if (keepOpen) {
        conn.unref();
      } else {
        conn.destroy();
        exitSeen(undefined);
      }
      fn();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    conn.setEncoding('utf8');
    conn.on('connect', () => conn.write(`${JSON.stringify(req)}\n`));
    conn.on('data', (d: string) => {
      buf += d;
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let msg: ExecutorAnswer | undefined;
        let bad: unknown;
        try {
          msg = JSON.parse(line) as ExecutorAnswer;
        } catch (err) {
          bad = err;
        }
        if (settled) {
          // The second answer of a followed request: the task's exit.
          exitSeen(msg?.exit ?? undefined);
          conn.destroy();
          return;
        }
        settle(() => (msg ? resolve(msg) : reject(new ExecutorUnavailable('executor sent a malformed answer', { cause: bad }))), follow && msg?.ok === true);
        nl = buf.indexOf('\n');
      }
    });
    conn.on('error', (err) => {
      exitSeen(undefined);
      settle(() => reject(new ExecutorUnavailable(`executor socket: ${err.message}`, { cause: err })));
    });
    conn.on('close', () => {
      exitSeen(undefined);
      settle(() => reject(new ExecutorUnavailable('executor closed the connection without answering')));
    });
  });
  let holds = 0;
  const hold = (alive: boolean): void => {
    holds = Math.max(0, holds + (alive ? 1 : -1));
    if (holds > 0) sock?.ref();
    else sock?.unref();
  };
  return { answer, exit, hold };
}
