// An answer as main's fastify writes it (status, headers with lowercased
// names in fastify's order, the body), written by the registration fast
// paths (main-fast-register.ts; carried from main to the API worker that
// writes it to its caller): a registration's JobRegisterResponse, or an
// error in Nomad's form (api.ts's sendError: plain text, or `{ code,
// message, details }` to a caller that accepts JSON).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorBody } from './api-error.js';

export const JSON_TYPE = 'application/json; charset=utf-8';

export interface Answer {
  status: number;
  /** Name, value, name, value... (content-type and content-length are added when written). */
  headers: string[];
  type: string;
  payload: string;
}

/** An error as api.ts's sendError answers it; `pre` are the headers set before (X-Berth-Stale). */
export function errorAnswer(accept: string | undefined, status: number, body: ErrorBody, pre: readonly string[] = []): Answer {
  const headers = [...pre, 'x-berth-error-code', body.code];
  if (accept !== undefined && /\bapplication\/json\b/i.test(accept)) return { status, headers, type: JSON_TYPE, payload: JSON.stringify(body) };
  return { status, headers, type: 'text/plain; charset=utf-8', payload: body.message };
}

export function writeAnswer(res: ServerResponse, a: Answer): void {
  const body = Buffer.from(a.payload);
  res.writeHead(a.status, [...a.headers, 'content-type', a.type, 'content-length', String(body.length)]);
  res.end(body);
}

/** The worker's own error answer (main did not answer). */
export function sendErrorAnswer(req: IncomingMessage, res: ServerResponse, status: number, body: ErrorBody): void {
  writeAnswer(res, errorAnswer(req.headers.accept, status, body));
}
