// One run of a check: a plain HTTP request (a new connection each time, no
// keep-alive, only the status line read) or a TCP connect, bounded by the check's
// timeout. Never throws: every outcome is a status and an output line.

import net from 'node:net';
import type { CheckSpec, CheckStatus } from '../../structs/index.js';

export interface ProbeTarget {
  address: string;
  port: number;
  check: Pick<CheckSpec, 'type' | 'path' | 'method' | 'header' | 'expectedStatus' | 'timeoutMs'>;
}

export interface ProbeResult {
  status: Exclude<CheckStatus, 'pending'>;
  output: string;
}

export type Probe = (target: ProbeTarget) => Promise<ProbeResult>;

/** Nomad's reading of an HTTP status: 2xx passing, 429 warning, anything else critical; `expected` overrides. */
export function httpStatusResult(code: number, expected?: readonly number[]): ProbeResult['status'] {
  if (expected?.length) return expected.includes(code) ? 'passing' : 'critical';
  if (code >= 200 && code < 300) return 'passing';
  if (code === 429) return 'warning';
  return 'critical';
}

/** Runs an http or tcp check once. */
export const runProbe: Probe = (target) => (target.check.type === 'http' ? httpProbe(target) : tcpProbe(target));

/**
 * A plain HTTP/1.1 request on a new socket (`Connection: close`), read only
 * as far as its status line: much cheaper than node:http's client per check,
 * which matters at a thousand checks a second.
 */
function httpProbe({ address, port, check }: ProbeTarget): Promise<ProbeResult> {
  const method = check.method ?? 'GET';
  const path = check.path ?? '/';
  const what = `HTTP ${method} http://${hostPort(address, port)}${path}`;
  let head = `${method} ${path} HTTP/1.1\r\nHost: ${hostPort(address, port)}\r\nUser-Agent: Berth check\r\nConnection: close\r\n`;
  for (const [k, values] of Object.entries(check.header ?? {})) for (const v of values) head += `${k}: ${v.replace(/[\r\n]/g, '')}\r\n`;
  head += '\r\n';
  return onSocket(address, port, check.timeoutMs, what, (sock, finish) => {
    let got = '';
    sock.setNoDelay(true);
    sock.once('connect', () => sock.write(head));
    sock.on('data', (chunk: Buffer) => {
      got += chunk.toString('latin1');
      if (!got.includes('\r\n') && got.length < 1024) return;
      const m = /^HTTP\/\d(?:\.\d)? (\d{3})(?: ([^\r\n]*))?/.exec(got);
      if (!m) return finish({ status: 'critical', output: `${what}: not an HTTP answer` });
      const code = Number(m[1]);
      finish({ status: httpStatusResult(code, check.expectedStatus), output: `${what}: ${code}${m[2] ? ` ${m[2]}` : ''}` });
    });
    sock.once('end', () => finish({ status: 'critical', output: `${what}: connection closed before an answer` }));
  });
}

function tcpProbe({ address, port, check }: ProbeTarget): Promise<ProbeResult> {
  const what = `TCP connect ${hostPort(address, port)}`;
  return onSocket(address, port, check.timeoutMs, what, (sock, finish) => {
    sock.once('connect', () => finish({ status: 'passing', output: `${what}: Success` }));
  });
}

/** Opens a socket and settles once: by `use`'s verdict, a socket error, or the timeout; the socket is destroyed then. */
function onSocket(address: string, port: number, timeoutMs: number, what: string, use: (sock: net.Socket, finish: (r: ProbeResult) => void) => void): Promise<ProbeResult> {
  return new Promise((resolve) => {
    let done = false;
    const sock = net.connect({ host: address, port });
    const finish = (r: ProbeResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish({ status: 'critical', output: `${what}: timed out after ${timeoutMs} ms` }), timeoutMs);
    sock.once('error', (err) => finish({ status: 'critical', output: `${what}: ${err.message}` }));
    use(sock, finish);
  });
}

const hostPort = (address: string, port: number): string => (address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`);
