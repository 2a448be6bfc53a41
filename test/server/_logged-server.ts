// A real server whose request log a test reads: each request a test sends is
// matched to the log's line for it, which names the path that served it (a
// front worker, the main thread's fast path, fastify). Shared by the tests of
// the API's registration fast paths (api-workers, main-fast-register).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/lib/index.js';
import { Server, type ServerOptions } from '../../src/server/index.js';

export const TOKEN = 'management-secret';
export const READER = 'read-only-secret';
const tokens = [
  { name: 'ops', secret: TOKEN, role: 'management' as const },
  { name: 'reader', secret: READER, role: 'read-only' as const },
];

/** The fields of a request log line the tests read. */
export interface LogLine {
  msg?: string;
  method?: string;
  route?: string;
  status?: number;
  caller?: string;
  worker?: number;
  fastPath?: boolean;
}

/** An answer as the client saw it (headers without Date). */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A Nomad JSON registration of a one-task service job `id`, with `extra` beside `Job`. */
export const jobBody = (id: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({
    Job: { ID: id, Name: id, Type: 'service', Datacenters: ['dc1'], TaskGroups: [{ Name: 'g', Count: 1, Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: '/bin/sleep', args: ['60'] } }] }] },
    ...extra,
  });

/** A server (`apiWorkers` front workers) in a fresh data dir, logging at debug into `lines`. */
export class LoggedServer {
  readonly lines: LogLine[] = [];
  readonly dir: string;
  readonly server: Server;
  url = '';

  /** `more`: other server options (the API's readers). */
  constructor(apiWorkers: number, prefix: string, more: Partial<ServerOptions> = {}) {
    this.dir = mkdtempSync(join(tmpdir(), prefix));
    const logger = createLogger({ level: 'debug', destination: { write: (s: string) => void this.lines.push(JSON.parse(s) as LogLine) } });
    this.server = new Server({ ...more, dataDir: this.dir, tokens, apiWorkers, logger });
  }

  async start(): Promise<void> {
    this.url = (await this.server.start()).url;
    await this.server.apiWorkers?.whenReady(120_000);
  }

  async stop(): Promise<void> {
    await this.server.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  requests(): LogLine[] {
    return this.lines.filter((l) => l.msg === 'request');
  }

  /**
   * Sends a request on a connection of its own: with `chunked` its body as a
   * stream (no Content-Length), else with its length. Resolves with the
   * answer and the request's log line.
   */
  async send(method: string, path: string, opts: { token?: string; body?: string; accept?: string; chunked?: boolean } = {}): Promise<{ answer: Answer; line: LogLine }> {
    const before = this.requests().length;
    const headers = { connection: 'close', ...(opts.token ? { 'x-nomad-token': opts.token } : {}), ...(opts.accept ? { accept: opts.accept } : {}) };
    const body = opts.body;
    const res =
      body !== undefined && opts.chunked
        ? await fetch(`${this.url}${path}`, { method, headers, body: new Blob([body]).stream(), duplex: 'half' } as RequestInit)
        : await fetch(`${this.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    const out: Record<string, string> = {};
    for (const [k, v] of res.headers) if (k !== 'date') out[k] = v;
    const answer = { status: res.status, headers: out, body: await res.text() };
    // Other requests (a blocking read this one woke) may log first: take the first new line of this method.
    const mine = (): LogLine | undefined => this.requests().slice(before).find((l) => l.method === method);
    const deadline = Date.now() + 30_000;
    while (!mine()) {
      if (Date.now() > deadline) throw new Error(`no request log line for ${method} ${path}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    return { answer, line: mine() as LogLine };
  }
}

/** A registration a server refuses, and whether a fast path answers the refusal itself (`fast`) or gives it to fastify. */
export interface RefusedRegistration {
  what: string;
  /** The route's path when not /v1/jobs. */
  path?: string;
  token?: string;
  body: string;
  accept?: string;
  fast: boolean;
  /** What the refusal's message must say, beyond being the same both ways. */
  says?: RegExp;
}

/** The refusals both fast paths (a front worker's, the main thread's) must answer word for word as fastify does. */
export const REFUSED_REGISTRATIONS: readonly RefusedRegistration[] = [
  { what: 'no token', body: jobBody('x'), fast: false },
  { what: 'a read-only token', token: READER, body: jobBody('x'), fast: false },
  { what: 'bad JSON', token: TOKEN, body: '{"Job": ', fast: false },
  { what: 'bad JSON, as JSON', token: TOKEN, body: '{"Job": ', accept: 'application/json', fast: false },
  { what: 'a Nomad validation error', token: TOKEN, body: jobBody('bad').replace('"Count":1', '"Count":-3'), accept: 'application/json', fast: false },
  { what: 'a field Berth lacks', token: TOKEN, body: jobBody('bad').replace('"Count":1', '"Count":1,"Spreads":7'), fast: false },
  // Read and checked on the fast path, refused by the state: given to fastify, which places the problem at its Nomad path.
  {
    what: 'a volume the state does not have',
    token: TOKEN,
    body: jobBody('novol').replace('"Count":1', '"Count":1,"Volumes":{"data":{"Type":"csi","Source":"missing-vol","AccessMode":"single-node-writer","AttachmentMode":"file-system"}}'),
    fast: false,
    says: /Job\.TaskGroups\[0\]\.Volumes\.data\.Source: volume "missing-vol" is not registered/,
  },
  { what: 'an EnforceIndex conflict', token: TOKEN, body: jobBody('enforced', { EnforceIndex: true, JobModifyIndex: 7 }), fast: true },
  { what: 'an EnforceIndex conflict, as JSON', token: TOKEN, body: jobBody('enforced', { EnforceIndex: true, JobModifyIndex: 7 }), accept: 'application/json', fast: true },
];
