// Which front worker relayed a request to main's fastify: the worker names
// its thread in RELAYED_BY_HEADER, believed only on a connection that came
// through main's internal socket (a caller cannot make its own request look
// relayed). The request log names the worker.

import type { Socket } from 'node:net';

export const RELAYED_BY_HEADER = 'x-berth-relayed-by';

const internal = new WeakSet<Socket>();

/** A connection main's internal socket took (from a worker). */
export function markInternal(socket: Socket): void {
  internal.add(socket);
}

/** The worker thread that relayed a request, or undefined when its caller reached main directly. */
export function relayedBy(socket: Socket, headers: Record<string, string | string[] | undefined>): number | undefined {
  if (!internal.has(socket)) return undefined;
  const v = Number(headers[RELAYED_BY_HEADER]);
  return Number.isSafeInteger(v) ? v : undefined;
}
