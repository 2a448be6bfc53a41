// One run of a check: a plain HTTP request (a new connection each time, no
// keep-alive, the body discarded) or a TCP connect, bounded by the check's
// timeout. Never throws: every outcome is a status and an output line.

import http from 'node:http';
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

function httpProbe({ address, port, check }: ProbeTarget): Promise<ProbeResult> {
  const method = check.method ?? 'GET';
  const path = check.path ?? '/';
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: ProbeResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    const headers: Record<string, string | string[]> = { 'user-agent': 'Berth check', ...(check.header ?? {}) };
    const req = http.request({ host: address, port, method, path, headers, agent: false }, (res) => {
      const code = res.statusCode ?? 0;
      res.resume();
      req.destroy();
      finish({ status: httpStatusResult(code, check.expectedStatus), output: `HTTP ${method} http://${hostPort(address, port)}${path}: ${code} ${res.statusMessage ?? ''}`.trimEnd() });
    });
    const timer = setTimeout(() => {
      req.destroy();
      finish({ status: 'critical', output: `HTTP ${method} http://${hostPort(address, port)}${path}: timed out after ${check.timeoutMs} ms` });
    }, check.timeoutMs);
    req.on('error', (err) => finish({ status: 'critical', output: `HTTP ${method} http://${hostPort(address, port)}${path}: ${err.message}` }));
    req.end();
  });
}

function tcpProbe({ address, port, check }: ProbeTarget): Promise<ProbeResult> {
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
    const timer = setTimeout(() => finish({ status: 'critical', output: `TCP connect ${hostPort(address, port)}: timed out after ${check.timeoutMs} ms` }), check.timeoutMs);
    sock.once('connect', () => finish({ status: 'passing', output: `TCP connect ${hostPort(address, port)}: Success` }));
    sock.once('error', (err) => finish({ status: 'critical', output: `TCP connect ${hostPort(address, port)}: ${err.message}` }));
  });
}

const hostPort = (address: string, port: number): string => (address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`);
