// The node agent's client routes answer errors as the server's API does
// (Nomad's plain-text message, `{ code, message, details }` to a caller that
// accepts JSON): they throw a ClientRouteError carrying its HTTP status, and
// whichever listener serves them (the client listener, or the server's in
// dev mode) words it. Errors of the parts the routes call become one here.

import { AllocRunner, LogsError, type Client } from '../client/index.js';
import { BerthError } from '../lib/index.js';
import { AllocFsError } from './alloc-fs.js';
import type { ClientRoutesDeps } from './client-routes.js';

/** A refused client call: `httpStatus` is the answer's status, `code` Berth's stable code. */
export class ClientRouteError extends BerthError<string> {
  readonly httpStatus: number;
  constructor(httpStatus: number, code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.httpStatus = httpStatus;
  }
}

const FS_STATUS: Record<string, number> = { ALLOC_FS_ESCAPE: 403, ALLOC_FS_SECRET: 403, ALLOC_FS_NOT_FOUND: 404, ALLOC_FS_NOT_A_FILE: 400, ALLOC_FS_NOT_A_DIRECTORY: 400 };

/**
 * `err` as a ClientRouteError when it is one the routes expect (a path
 * refused or missing, logs disabled, a driver refusing a signal); anything
 * else is returned as it is (a 500).
 */
export function asRouteError(err: unknown): unknown {
  if (err instanceof ClientRouteError) return err;
  if (err instanceof AllocFsError) return new ClientRouteError(FS_STATUS[err.code] ?? 400, err.code, err.message, { cause: err });
  if (err instanceof LogsError) return new ClientRouteError(err.code === 'LOGS_DISABLED' ? 400 : 404, err.code, err.message, { cause: err });
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && code.startsWith('DRIVER_')) return new ClientRouteError(400, code, (err as Error).message, { cause: err });
  return err;
}

/** The running Client. Throws ClientRouteError 503 CLIENT_NOT_READY before it runs. */
export function readyClient(deps: ClientRoutesDeps): Client {
  const client = deps.client();
  if (!client || client.state !== 'running') throw new ClientRouteError(503, 'CLIENT_NOT_READY', 'the node agent is not running yet');
  return client;
}

/** The runner of an allocation on this node. Throws ClientRouteError 404 (Nomad's "Unknown allocation") or 503. */
export function runnerOf(deps: ClientRoutesDeps, allocId: string): AllocRunner {
  const runner = readyClient(deps).runner(allocId);
  if (!(runner instanceof AllocRunner)) throw new ClientRouteError(404, 'NOT_FOUND', `Unknown allocation "${allocId}"`);
  return runner;
}

/**
 * The task a request names, or the allocation's only task when it names
 * none. Throws ClientRouteError 400 for an unknown task (Nomad's words) or a
 * missing name when there are several.
 */
export function taskOf(runner: AllocRunner, allocId: string, task: string | undefined): string {
  const names = Object.keys(runner.taskIds());
  if (task) {
    if (!names.includes(task)) throw new ClientRouteError(400, 'INVALID', `unknown task name "${task}" (allocation ${allocId} runs: ${names.join(', ')})`);
    return task;
  }
  if (names.length !== 1) throw new ClientRouteError(400, 'INVALID', `must provide task name: allocation ${allocId} runs several tasks (${names.join(', ')})`);
  return names[0] as string;
}
