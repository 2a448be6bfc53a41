// The node agent's client routes answer errors as the server's API does
// (Nomad's plain-text message, `{ code, message, details }` to a caller that
// accepts JSON): they throw a ClientRouteError carrying its HTTP status, and
// whichever listener serves them (the client listener, or the server's in
// dev mode) words it. Errors of the parts the routes call become one here;
// client-route-deps.ts finds what a route names or answers 404/503.

import { LogsError } from '../client/index.js';
import { BerthError } from '../lib/index.js';
import { AllocFsError } from './alloc-fs.js';

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
