// Small pieces of talking to dockerd: one plain GET of the Engine API (the
// fingerprint needs no client library), and docker's own words for a
// failed call.

import { statSync } from 'node:fs';
import { request, type RequestOptions } from 'node:http';

/**
 * One GET of the Engine API on its unix socket, as JSON; rejects on an error
 * status or after 5 s, and with connect's own error (`connect ENOENT <path>`)
 * when nothing is at the socket's path.
 */
export function engineGet<T>(socketPath: string, apiPath: string): Promise<T> {
  // No dockerd here (the usual host of an agent that runs no containers): the answer connecting would give, without
  // a request. A process's first HTTP requests cost ~25-40 ms of CPU (the docker fingerprint in a dev agent's start).
  if (statSync(socketPath, { throwIfNoEntry: false }) === undefined) return Promise.reject(connectNoEntry(socketPath));
  return new Promise((resolve, reject) => {
    // servername '' (TLS's name, unused over a unix socket; Node's agent reads it, its types do not list it): Node
    // would otherwise test the Host header with net.isIP, whose IPv6 expression costs ~15 ms of CPU the first time.
    const options: RequestOptions & { servername: string } = { socketPath, path: apiPath, timeout: 5_000, servername: '' };
    const req = request(options, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        if ((res.statusCode ?? 500) >= 300) return reject(new Error(`${apiPath}: HTTP ${res.statusCode}: ${body.trim()}`));
        try {
          resolve(JSON.parse(body) as T);
        } catch (err) {
          reject(err as Error);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', reject);
    req.end();
  });
}

/** The error a connect to a unix socket path that does not exist fails with (Node's words and fields). */
function connectNoEntry(socketPath: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`connect ENOENT ${socketPath}`), { errno: -2, code: 'ENOENT', syscall: 'connect', address: socketPath });
}

/** Docker's own words for a failed call (its JSON `message`), else the error's. */
export function dockerMessage(err: unknown): string {
  const e = err as { json?: { message?: string }; reason?: string; message?: string };
  return (e.json?.message ?? e.message ?? String(err)).trim();
}
