// Nomad's servers answer the allocation-scoped client routes (/v1/client/fs/...,
// /v1/client/allocation/:id/{stats,checks,restart,signal,exec}) for any allocation by
// sending them to the node that runs it; Nomad does it over its RPC, Berth over
// HTTP, to the node agent's HTTPAddr (where `berth alloc logs` reaches it). The
// caller's token goes along (the node agent checks it again, as it does for a
// direct call), streams are piped as they come, exec's WebSocket is relayed
// both ways. A request forwarded once is never forwarded again (the header of
// leader-forward.ts). A dev agent serves its own allocations itself
// (`deps.localClient`) and forwards the others' too: the HTTP routes here, exec
// through `execRelay`, which its own exec route calls first.

import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WebSocket } from 'ws';
import { describeError } from '../../lib/index.js';
import type { Allocation, Node } from '../../structs/index.js';
import { rowKey } from '../state/index.js';
import { ApiError } from './api-error.js';
import { FORWARDED_HEADER } from './leader-forward.js';
import type { ApiDeps, RouteContext } from './route-context.js';

/** What finding an allocation's node and relaying to it read. */
type ForwardDeps = Pick<ApiDeps, 'store' | 'localClient' | 'logger'>;

/** The HTTP routes forwarded (each as the node agent declares it); exec is the WebSocket one below. */
const HTTP_ROUTES: ReadonlyArray<{ method: 'GET' | 'POST' | 'PUT'; url: string; access: 'read' | 'write' }> = [
  ...['ls', 'stat', 'cat', 'readat', 'stream', 'logs'].map((k) => ({ method: 'GET' as const, url: `/v1/client/fs/${k}/:id`, access: 'read' as const })),
  ...['stats', 'checks'].map((k) => ({ method: 'GET' as const, url: `/v1/client/allocation/:id/${k}`, access: 'read' as const })),
  ...(['POST', 'PUT'] as const).flatMap((method) => ['restart', 'signal'].map((op) => ({ method, url: `/v1/client/allocation/:id/${op}`, access: 'write' as const }))),
];
const EXEC_ROUTE = '/v1/client/allocation/:id/exec';
const FORWARDED_URLS = new Set(HTTP_ROUTES.map((r) => r.url));

/** Request headers sent on: the caller's token in either header, and how it reads answers. */
const REQUEST_HEADERS = ['authorization', 'x-nomad-token', 'content-type', 'accept'];
/** Answer headers not copied back: hop-by-hop ones, and the length (the body is streamed on, chunked). */
const SKIPPED_ANSWER_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding']);
/** How long the node agent has to answer (a followed stream then runs as long as the caller stays). */
const CONNECT_TIMEOUT_MS = 15_000;

/** Where an allocation runs: its node's name, ID and agent URL. */
interface Target {
  nodeName: string;
  nodeId: string;
  url: string;
}

/** The node agent's URL from Nomad's HTTPAddr (`host:port`, or a URL). */
function agentUrl(node: Pick<Node, 'httpAddr'>): string {
  return /^https?:\/\//.test(node.httpAddr) ? node.httpAddr.replace(/\/+$/, '') : `http://${node.httpAddr}`;
}

/** A node named as the CLI names it: its name and short ID. */
function nodeLabel(node: Pick<Node, 'name' | 'id'>): string {
  return `node ${node.name} (${node.id.slice(0, 8)})`;
}

/** The error a caller gets when the allocation's node agent cannot be reached: 502, the node named. */
function unreachable(target: Pick<Target, 'nodeName' | 'nodeId'>, why: string): ApiError {
  return new ApiError('NODE_AGENT_UNREACHABLE', `${nodeLabel({ name: target.nodeName, id: target.nodeId })} runs this allocation, but ${why}`, {
    node: target.nodeId,
    nodeName: target.nodeName,
  });
}

/**
 * Where the allocation runs, or undefined when this agent runs it itself.
 * Throws ApiError 404 (Nomad's "Unknown allocation"), or 502 when its node
 * is gone, down or has no HTTP address, or the request was forwarded already.
 */
function targetOf(deps: ForwardDeps, req: FastifyRequest, allocId: string): Target | undefined {
  const snap = deps.store.snapshot();
  const alloc = snap.get('allocations', rowKey(allocId)) as Allocation | undefined;
  if (!alloc) throw new ApiError('NOT_FOUND', `Unknown allocation "${allocId}"`);
  if (alloc.nodeId === deps.localClient?.nodeId()) return undefined;
  const node = snap.get('nodes', rowKey(alloc.nodeId)) as Node | undefined;
  const target = { nodeName: node?.name ?? alloc.nodeId, nodeId: alloc.nodeId, url: node ? agentUrl(node) : '' };
  if (!node) throw unreachable(target, 'the node is no longer registered');
  if (req.headers[FORWARDED_HEADER]) throw unreachable(target, `its agent's address (${node.httpAddr}) leads to a server that does not run it either (a forwarded request is not forwarded again)`);
  if (node.status === 'down') throw unreachable(target, 'the node is down: its agent does not heartbeat');
  if (!node.httpAddr) throw unreachable(target, 'the node reports no HTTP address (is its agent running?)');
  return target;
}

/** The headers sent to the node agent. */
function forwardHeaders(req: FastifyRequest): Record<string, string> {
  const headers: Record<string, string> = { [FORWARDED_HEADER]: '1' };
  for (const h of REQUEST_HEADERS) {
    const v = req.headers[h];
    if (typeof v === 'string') headers[h] = v;
  }
  return headers;
}

/**
 * Sends an HTTP request on to the node agent and answers with its answer, the
 * body piped as it comes. node:http, not fetch: a followed stream may stay
 * idle for long (plain logs have no heartbeat), and fetch cuts a body idle 5 minutes.
 */
async function forwardHttp(ctx: RouteContext, req: FastifyRequest, reply: FastifyReply, target: Target): Promise<FastifyReply> {
  const gone = ctx.signalOf(req, reply);
  const body = req.body === undefined || req.body === null ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
  const url = new URL(req.url, target.url);
  let timedOut = false;
  let res: IncomingMessage;
  // node:https (with TLS) loads with the first https node address, not at every agent's start: a node's HTTPAddr is plain http unless its operator put TLS in front.
  const send = url.protocol === 'https:' ? (await import('node:https')).request : httpRequest;
  try {
    res = await new Promise<IncomingMessage>((resolve, reject) => {
      const headers = { ...forwardHeaders(req), ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) };
      const out = send(url, { method: req.method, headers, signal: gone });
      const timer = setTimeout(() => {
        timedOut = true;
        out.destroy(new Error('no answer'));
      }, CONNECT_TIMEOUT_MS);
      out.once('response', (r) => {
        clearTimeout(timer);
        resolve(r);
      });
      out.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      out.end(body);
    });
  } catch (err) {
    if (gone.aborted) return reply;
    const why = timedOut ? `its agent at ${target.url} did not answer within ${CONNECT_TIMEOUT_MS / 1000} s` : `its agent at ${target.url} cannot be reached: ${describeError(err)}`;
    throw unreachable(target, why);
  }
  reply.status(res.statusCode ?? 502);
  for (const [k, v] of Object.entries(res.headers)) {
    if (v !== undefined && !SKIPPED_ANSWER_HEADERS.has(k)) void reply.header(k, v);
  }
  // The node going away mid-stream ends the answer; the caller sees the stream end.
  res.on('error', () => reply.raw.destroy());
  return reply.send(res);
}

/** A WebSocket close reason fits in 123 bytes. */
function closeReason(message: string): string {
  let out = message;
  while (Buffer.byteLength(out) > 123) out = out.slice(0, -2);
  return out;
}

/**
 * Relays an exec WebSocket to the node agent: the caller's frames to the
 * node, the node's frames and close (code and reason) back. With Nomad's
 * `ws_handshake` the token is in the first frame: it is checked here first,
 * then sent on as the node's first frame (the node checks it too).
 */
function relayExec(deps: ForwardDeps, socket: WebSocket, req: FastifyRequest<{ Params: { id: string } }>): void {
  const log = deps.logger.child({ component: 'http-client-forward' });
  const fail = (code: number, message: string): void => {
    if (socket.readyState === socket.OPEN) socket.close(code, closeReason(message));
  };
  const pending: Buffer[] = [];
  let upstream: WebSocket | undefined;
  let handshake = Boolean(req.authorizeHandshake);
  const open = (): void => {
    let target: Target | undefined;
    try {
      target = targetOf(deps, req, req.params.id);
    } catch (err) {
      return fail(err instanceof ApiError && err.code === 'NOT_FOUND' ? 1008 : 1011, (err as Error).message);
    }
    if (!target) return fail(1011, 'this agent runs the allocation: its own exec route answers it');
    const t = target;
    const up = new WebSocket(`${t.url.replace(/^http/, 'ws')}${req.url}`, { headers: forwardHeaders(req), handshakeTimeout: CONNECT_TIMEOUT_MS });
    upstream = up;
    up.on('open', () => {
      for (const frame of pending.splice(0)) up.send(frame);
    });
    up.on('message', (data: Buffer, isBinary: boolean) => {
      if (socket.readyState === socket.OPEN) socket.send(isBinary ? data : data.toString('utf8'));
    });
    up.on('close', (code: number, reason: Buffer) => {
      // 1005/1006 (no status, abnormal) cannot be sent: the node went away without a close frame.
      if (code === 1005) fail(1000, '');
      else if (code === 1006) fail(1011, unreachable(t, 'its agent closed the exec session without a word').message);
      else fail(code, reason.toString('utf8'));
    });
    // The node refused the upgrade (a bad token, an unknown allocation): its words, as its own close would say.
    up.on('unexpected-response', (_r, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        fail(res.statusCode !== undefined && res.statusCode < 500 ? 1008 : 1011, text.trim() || `the node agent answered ${res.statusCode}`);
        up.terminate();
      });
    });
    up.on('error', (err) => {
      log.debug({ node: t.nodeId, err: describeError(err) }, 'exec relay to the node agent failed');
      // A close reason holds 123 bytes: the system's code (ECONNREFUSED) rather than its sentence.
      const code = (err as { code?: unknown }).code;
      fail(1011, unreachable(t, `its agent at ${t.url} cannot be reached (${typeof code === 'string' ? code : describeError(err)})`).message);
    });
  };
  socket.on('message', (data: Buffer) => {
    if (handshake) {
      handshake = false;
      let token = '';
      try {
        token = String((JSON.parse(data.toString('utf8')) as { auth_token?: unknown }).auth_token ?? '');
      } catch {
        return fail(1008, 'the first message must be the handshake {"version":1,"auth_token":"..."}');
      }
      pending.push(data);
      (req.authorizeHandshake as (t: string) => Promise<void>)(token).then(open, (err: unknown) => fail(1008, (err as Error).message));
      return;
    }
    if (upstream?.readyState === WebSocket.OPEN) upstream.send(data);
    else pending.push(data);
  });
  socket.on('close', () => {
    if (upstream && upstream.readyState !== WebSocket.CLOSED) upstream.close();
  });
  if (!req.authorizeHandshake) open();
}

/**
 * For a dev agent's own exec route: a function that takes the session (and
 * answers true) when the allocation runs on another node, relaying it to
 * that node's agent; false when it runs here (or is unknown: the route says so).
 */
export function execRelay(deps: ForwardDeps): (socket: WebSocket, req: FastifyRequest<{ Params: { id: string } }>) => boolean {
  return (socket, req) => {
    const alloc = deps.store.snapshot().get('allocations', rowKey(req.params.id));
    if (!alloc || alloc.nodeId === deps.localClient?.nodeId()) return false;
    relayExec(deps, socket, req);
    return true;
  };
}

/**
 * Registers the forwarding. Without `deps.localClient` (a server agent) it
 * declares the routes themselves; with one (a dev agent, whose own client
 * routes are on this listener) a hook sends on the HTTP requests naming an
 * allocation of another node (its exec route calls `execRelay`).
 */
export function registerClientForwarding(app: FastifyInstance, ctx: RouteContext): void {
  const local = ctx.deps.localClient;
  if (local) {
    app.addHook('preHandler', async (req, reply) => {
      const url = req.routeOptions.url;
      if (url === undefined || !FORWARDED_URLS.has(url)) return;
      const target = targetOf(ctx.deps, req, (req.params as { id: string }).id);
      if (target) await forwardHttp(ctx, req, reply, target);
    });
    return;
  }
  for (const r of HTTP_ROUTES) {
    app.route<{ Params: { id: string } }>({
      method: r.method,
      url: r.url,
      config: { access: r.access },
      handler: async (req, reply) => forwardHttp(ctx, req, reply, targetOf(ctx.deps, req, req.params.id) as Target),
    });
  }
  app.route<{ Params: { id: string } }>({
    method: 'GET',
    url: EXEC_ROUTE,
    config: { access: 'write', wsHandshake: true },
    handler: async () => {
      throw new ApiError('INVALID', "websocket: the client is not using the websocket protocol: 'upgrade' token not found in 'Connection' header (exec runs over a WebSocket)");
    },
    wsHandler: (socket, req) => relayExec(ctx.deps, socket, req),
    // fastify's HEAD route for it, which never upgrades (head-twins.ts).
    exposeHeadRoute: true,
  });
}
