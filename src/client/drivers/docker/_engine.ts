// Small pieces of talking to dockerd: one plain GET of the Engine API (the
// fingerprint needs no client library), and docker's own words for a
// failed call.

import { request } from 'node:http';

/** One GET of the Engine API on its unix socket, as JSON; rejects on an error status or after 5 s. */
export function engineGet<T>(socketPath: string, apiPath: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: apiPath, timeout: 5_000 }, (res) => {
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

/** Docker's own words for a failed call (its JSON `message`), else the error's. */
export function dockerMessage(err: unknown): string {
  const e = err as { json?: { message?: string }; reason?: string; message?: string };
  return (e.json?.message ?? e.message ?? String(err)).trim();
}
