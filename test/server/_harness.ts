// A real server on a temporary directory and an ephemeral port, with one
// token per role, and a small HTTP client for the tests.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock, type Clock, type Logger } from '../../src/lib/index.js';
import { Server, type ApiToken } from '../../src/server/index.js';
import type * as api from '../../src/api/index.js';
import type { Evaluation } from '../../src/api/index.js';
import { registration } from '../support/nomad-jobs.js';

export const TOKENS = {
  management: 'mgmt-token-0123456789',
  readOnly: 'read-token-0123456789',
  node: 'node-token-0123456789',
} as const;

export const API_TOKENS: ApiToken[] = [
  { name: 'ops', secret: TOKENS.management, role: 'management' },
  { name: 'viewer', secret: TOKENS.readOnly, role: 'read-only' },
  { name: 'agents', secret: TOKENS.node, role: 'node' },
];

export interface Answer<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export interface Harness {
  server: Server;
  url: string;
  dir: string;
  clock: Clock;
  /** An API call; errors come as `{ code, message, details }` (the harness accepts JSON) unless `accept` says otherwise. */
  call<T = unknown>(method: string, path: string, opts?: { body?: unknown; token?: string | null; accept?: string | null }): Promise<Answer<T>>;
  /**
   * Registers a job given as a canonical spec (`{ job: spec }`, as Nomad's
   * Job JSON: PUT /v1/jobs, or `path`) and, when it was accepted, follows
   * its evaluation with blocking reads until the scheduler ran it (as `job
   * run` does: the API answers before scheduling). The answer is the
   * JobRegisterResponse with `evaluation`, the evaluation as it ended.
   */
  submit(body: { job: Record<string, unknown> }, opts?: { path?: string; token?: string | null }): Promise<Answer<api.JobRegisterResponse & { evaluation?: Evaluation }>>;
  /** The evaluation once it left `pending`, waited for with blocking reads. */
  settled(evalId: string): Promise<Evaluation>;
  close(): Promise<void>;
}

export async function startServer(opts: { clock?: Clock; dir?: string; heartbeatTtlMs?: number; maxHeartbeatsPerSecond?: number; logger?: Logger } = {}): Promise<Harness> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'berth-srv-'));
  const clock = opts.clock ?? new ManualClock(1_700_000_000_000);
  const server = new Server({
    dataDir: dir,
    clock,
    tokens: API_TOKENS,
    heartbeatTtlMs: opts.heartbeatTtlMs ?? 30_000,
    ...(opts.maxHeartbeatsPerSecond !== undefined ? { maxHeartbeatsPerSecond: opts.maxHeartbeatsPerSecond } : {}),
    eventHeartbeatMs: 200,
    nodeCallTimeoutMs: 10_000,
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  const { url } = await server.start();
  const h: Harness = {
    server,
    url,
    dir,
    clock,
    async call<T>(method: string, path: string, o: { body?: unknown; token?: string | null; accept?: string | null } = {}): Promise<Answer<T>> {
      const headers: Record<string, string> = {};
      const accept = o.accept === undefined ? 'application/json' : o.accept;
      if (accept !== null) headers['accept'] = accept;
      const token = o.token === undefined ? TOKENS.management : o.token;
      if (token !== null) headers['authorization'] = `Bearer ${token}`;
      if (o.body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(url + path, { method, headers, ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}) });
      const text = await res.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      return { status: res.status, body: body as T, headers: res.headers, text };
    },
    async submit(body: { job: Record<string, unknown> }, o: { path?: string; token?: string | null } = {}) {
      const res = await h.call<api.JobRegisterResponse>('PUT', o.path ?? '/v1/jobs', { body: registration(body.job), ...(o.token !== undefined ? { token: o.token } : {}) });
      if (res.status !== 200 || !res.body.EvalID) return res;
      return { ...res, body: { ...res.body, evaluation: await h.settled(res.body.EvalID) } };
    },
    async settled(evalId: string): Promise<Evaluation> {
      let index = 0;
      for (;;) {
        const res = await h.call<Evaluation>('GET', `/v1/evaluation/${evalId}${index ? `?index=${index}&wait=30s` : ''}`);
        if (res.status !== 200) throw new Error(`evaluation ${evalId}: ${res.status} ${res.text}`);
        if (res.body.Status !== 'pending') return res.body;
        index = Number(res.headers.get('x-nomad-index'));
      }
    },
    async close() {
      await server.stop();
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
  return h;
}

/** A node fingerprint with the exec driver and, optionally, CSI plugin reports (test/support/server-rows.ts). */
export { testFingerprint as fingerprint } from '../support/server-rows.js';
