// Connecting to main's internal socket when main is busy. A unix socket's
// listen backlog fills while main's event loop runs something long (a large
// placement): a TCP client would then wait for the kernel to retry its SYN,
// but a unix socket's connect fails at once with EAGAIN. Relayed at once as
// an error, that turned a busy leader's few seconds into nodes' failed
// heartbeats and nodes marked down (a three-server cluster placing 300
// allocations at load 20, test/cluster/node-sim.test.ts). So a worker
// retries the connect, as TCP would, backing off, until main takes it or
// CONNECT_GIVE_UP_MS passed.

import http from 'node:http';
import net, { type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** The first wait after EAGAIN; doubled after each, up to RETRY_MAX_MS. */
const RETRY_MIN_MS = 5;
const RETRY_MAX_MS = 250;
/** How long a connect keeps trying while main's backlog stays full (TCP gives up on SYNs after about as long). */
export const CONNECT_GIVE_UP_MS = 60_000;

/** Is `err` a unix socket's "backlog full"? */
function backlogFull(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'EAGAIN' || code === 'EWOULDBLOCK';
}

/**
 * Connects to the unix socket at `path`; calls `done` with the connected
 * socket, or with the error that ended the tries (any but a full backlog, or
 * a full backlog for CONNECT_GIVE_UP_MS). `now` is for tests.
 */
export function connectUnix(path: string, done: (err: Error | null, socket?: Socket) => void, now: () => number = Date.now): void {
  const began = now();
  let wait = RETRY_MIN_MS;
  const attempt = (): void => {
    const socket = net.connect(path);
    const failed = (err: Error): void => {
      socket.off('connect', connected);
      socket.destroy();
      if (backlogFull(err) && now() - began + wait < CONNECT_GIVE_UP_MS) {
        setTimeout(attempt, wait).unref();
        wait = Math.min(RETRY_MAX_MS, wait * 2);
        return;
      }
      done(err);
    };
    const connected = (): void => {
      socket.off('error', failed);
      done(null, socket);
    };
    socket.once('error', failed);
    socket.once('connect', connected);
  };
  attempt();
}

/** A keep-alive agent to main's internal socket whose new connections retry a full backlog (connectUnix). */
export class UnixRelayAgent extends http.Agent {
  readonly #path: string;

  constructor(path: string) {
    super({ keepAlive: true, maxFreeSockets: 8 });
    this.#path = path;
  }

  // Node's Agent takes a socket from the callback when createConnection returns none.
  override createConnection(_options: http.ClientRequestArgs, callback?: (err: Error | null, stream: Duplex) => void): undefined {
    connectUnix(this.#path, (err, socket) => callback?.(err, socket as Duplex));
    return undefined;
  }
}
