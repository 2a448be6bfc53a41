// The main thread's fast path for a node's two steady POSTs on the leader:
// its heartbeat (`/v1/node/:id/heartbeat`) and its allocations' status
// reports (`/v1/internal/node/:id/allocations`), served on the HTTP server's
// request event without fastify's request and reply objects, hooks,
// content-type parser and serializer. Every node of a cluster sends them to
// the leader, so they are most of its requests: in a 10,000-allocation job
// on 1,000 nodes some 0.4 a placed allocation, and all of a large cluster's
// traffic at rest. It does what the routes and api.ts's hooks do for a
// request that checks: counts the request begun (a node's POST is no user's
// write: not in flight), authenticates the node, reads the body (up to the
// body limit), checks it as the route does, calls the service, answers as
// the route answers (the heartbeat's time in `berth_node_heartbeat_seconds`).
// Everything else goes to fastify, word for word its own: a request it
// would refuse before its body (a bad token, no or too large a
// Content-Length, a follower's, a store gone stale), and after its body
// (not JSON, a body the route refuses) with the body it read, which the
// routes' preParsing hook (replayReadBody) hands to fastify's parser: fastify
// then serves it from the start, as it would have. A refusal of the service
// (an unknown node, the store unavailable) is answered here as api.ts's
// error handler answers it, so nothing is done twice.

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { describeError, type Logger } from '../../lib/index.js';
import { nestingProblem, type NodeFingerprint } from '../../structs/index.js';
import type { AllocationUpdate } from '../jobs/index.js';
import type { TokenTable } from './auth.js';
import { toErrorResponse } from './api-error.js';
import { errorAnswer, JSON_TYPE, writeAnswer, type Answer } from './answers.js';
import { markTaken, putInFront, type RequestListener } from './main-fast-register.js';
import { indexHeaders } from './nomad-read.js';
import type { ApiDeps } from './route-context.js';

/** What secure-json-parse (fastify's JSON parser) may refuse or treat apart: such a body goes to fastify. */
const MAYBE_PROTO = /__proto__|constructor|prototype|\\u00[5-7]|^\uFEFF/i;

export interface MainFastNodeOptions {
  deps: Pick<ApiDeps, 'jobs' | 'nodes' | 'store' | 'leadership' | 'inFlight' | 'metrics'>;
  tokens: TokenTable;
  bodyLimit: number;
  /** The request log (component http). */
  log: Logger;
  /** The connection's first request began (api.ts's fresh connections). */
  settleConnection: (req: IncomingMessage) => void;
}

/** The fast path's routes: which one `url` is and its node ID, or undefined (fastify's). */
export function nodeFastRoute(method: string | undefined, url: string | undefined): { route: 'heartbeat' | 'allocations'; nodeId: string } | undefined {
  if (method !== 'POST' || url === undefined) return undefined;
  let rest: string;
  let route: 'heartbeat' | 'allocations';
  if (url.startsWith('/v1/node/') && url.endsWith('/heartbeat')) {
    rest = url.slice('/v1/node/'.length, -'/heartbeat'.length);
    route = 'heartbeat';
  } else if (url.startsWith('/v1/internal/node/') && url.endsWith('/allocations')) {
    rest = url.slice('/v1/internal/node/'.length, -'/allocations'.length);
    route = 'allocations';
  } else return undefined;
  // A plain ID only (the router decodes escapes and would refuse a slash); a query string goes to fastify.
  if (rest === '' || /[/?%#]/.test(rest)) return undefined;
  return { route, nodeId: rest };
}

/**
 * The request's body as the route reads it, or undefined when fastify must
 * read it (its own words for a refusal): JSON within the nesting limit that
 * secure-json-parse takes as JSON.parse does, and the route's checks.
 */
function readBody(route: 'heartbeat' | 'allocations', text: string): { fingerprint?: NodeFingerprint; updates?: AllocationUpdate[] } | undefined {
  if (MAYBE_PROTO.test(text) || nestingProblem(text)) return undefined;
  const blank = text.trim() === '';
  let body: unknown;
  try {
    body = blank ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (route === 'heartbeat') {
    if (body === undefined || body === null) return {};
    if (!isObject(body)) return undefined;
    const fp = body['fingerprint'];
    if (!fp) return {};
    return isObject(fp) ? { fingerprint: fp as unknown as NodeFingerprint } : undefined;
  }
  if (!isObject(body) || !Array.isArray(body['allocations'])) return undefined;
  const updates: AllocationUpdate[] = [];
  for (const u of body['allocations'] as unknown[]) {
    if (!isObject(u) || typeof u['id'] !== 'string' || typeof u['clientStatus'] !== 'string') return undefined;
    updates.push(u as unknown as AllocationUpdate);
  }
  return { updates };
}

export class MainFastNode {
  readonly #opts: MainFastNodeOptions;
  #open = true;

  constructor(opts: MainFastNodeOptions) {
    this.#opts = opts;
  }

  /**
   * Puts the fast path in front of `server`'s one request listener (what
   * serves every other request): call once, before the server listens;
   * throws when the server has not exactly one request listener.
   */
  install(server: Server): void {
    putInFront(server, (req) => (this.#open ? nodeFastRoute(req.method, req.url) : undefined), (req, res, at, next) => this.#serve(req, res, at, next));
  }

  /** Sends every request on from now on (the API is closing: fastify answers 503). Safe to repeat. */
  close(): void {
    this.#open = false;
  }

  #serve(req: IncomingMessage, res: ServerResponse, at: { route: 'heartbeat' | 'allocations'; nodeId: string }, fastify: RequestListener): void {
    const { deps, tokens, bodyLimit, log } = this.#opts;
    const began = performance.now();
    // As api.ts's admit counts a node's request: begun, not a user's write in flight.
    deps.inFlight?.began();
    markTaken(req);
    this.#opts.settleConnection(req);
    let caller: string;
    try {
      const token = req.headers['x-nomad-token'];
      caller = tokens.authorize(req.headers.authorization, 'node', typeof token === 'string' ? token : undefined).name;
    } catch {
      return fastify(req, res);
    }
    const length = req.headers['content-length'];
    if (length === undefined || !(Number(length) <= bodyLimit) || req.headers['transfer-encoding'] !== undefined) return fastify(req, res);
    const leadership = deps.leadership?.();
    // A follower forwards to the leader; a stale store's answers carry X-Berth-Stale: fastify's.
    if ((leadership && !leadership.isLeader) || deps.store.stale) return fastify(req, res);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      const toFastify = (): void => {
        markTaken(req, body);
        fastify(req, res);
      };
      const read = readBody(at.route, body.toString('utf8'));
      if (!read) return toFastify();
      const served = at.route === 'heartbeat' ? this.#heartbeat(at.nodeId, read.fingerprint, began) : this.#reports(at.nodeId, read.updates ?? []);
      const route = at.route === 'heartbeat' ? '/v1/node/:id/heartbeat' : '/v1/internal/node/:id/allocations';
      // A refusal (an unknown node, the store unavailable) is answered here as api.ts's error handler answers
      // it: given to fastify, the request would be served again (a write waiting up to its deadline twice).
      const refused = (err: unknown): Answer => {
        const { status, body: error } = toErrorResponse(err);
        if (status >= 500) log.error({ method: 'POST', route, code: error.code, err: describeError(err) }, 'request failed');
        return errorAnswer(req.headers.accept, status, error);
      };
      served.then((answer) => answer, refused).then((answer) => {
        writeAnswer(res, answer);
        if (log.isLevelEnabled('debug')) {
          res.once('close', () => log.debug({ method: 'POST', route, status: res.statusCode, caller, ms: Math.round(performance.now() - began), fastPath: true }, 'request'));
        }
      }, toFastify);
    });
  }

  async #heartbeat(nodeId: string, fingerprint: NodeFingerprint | undefined, began: number): Promise<Answer> {
    const nodes = this.#opts.deps.nodes;
    await nodes.heartbeat(nodeId, fingerprint);
    const answer: Answer = { status: 200, headers: [], type: JSON_TYPE, payload: JSON.stringify({ heartbeatTtlMs: nodes.heartbeatTtlMs }) };
    this.#opts.deps.metrics?.heartbeatSeconds.observe((performance.now() - began) / 1000);
    return answer;
  }

  async #reports(nodeId: string, updates: AllocationUpdate[]): Promise<Answer> {
    const { index } = await this.#opts.deps.jobs.updateAllocations(nodeId, updates);
    return { status: 200, headers: indexHeaders(this.#opts.deps, index), type: JSON_TYPE, payload: JSON.stringify({ index }) };
  }
}
