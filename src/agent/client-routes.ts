// The node agent's own HTTP endpoints, served by a client agent's listener
// (or, in dev mode, by the server's), in Nomad's paths and shapes: the
// allocation operations (alloc-ops-routes.ts: restart, signal, stats), the
// allocation directory and logs (alloc-fs-routes.ts), exec over a WebSocket
// (alloc-exec-route.ts), and the node's own: garbage collection, its meta,
// and which node it is. Errors are thrown as ClientRouteError (its status)
// and worded by the listener.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Client } from '../client/index.js';
import { NodeMetaApplyRequest, type NodeMetaResponse } from '../api/index.js';
import { registerAllocExecRoute } from './alloc-exec-route.js';
import { registerAllocFsRoutes } from './alloc-fs-routes.js';
import { registerAllocOpsRoutes } from './alloc-ops-routes.js';
import { readyClient, type ClientRoutesDeps } from './client-route-deps.js';
import { ClientRouteError } from './client-route-error.js';

const META_KEY = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/**
 * A node meta change from Nomad's NodeMetaApplyRequest body (`Meta`: key ->
 * value, null removes the key; Berth's `BerthUnset`: dynamic keys to forget).
 * ClientRouteError 400 when malformed.
 */
function metaChange(body: unknown): { set: Record<string, string | null>; unset: string[] } {
  const parsed = NodeMetaApplyRequest.safeParse(body ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ClientRouteError(400, 'INVALID', `${issue?.path.join('.') || 'request body'}: ${issue?.message ?? 'malformed'} (Meta is an object of key -> string, or null to remove it)`);
  }
  for (const k of [...Object.keys(parsed.data.Meta), ...(parsed.data.BerthUnset ?? [])]) {
    if (!META_KEY.test(k)) throw new ClientRouteError(400, 'INVALID', `meta key "${k}" must be letters, digits, "_", "." or "-"`);
  }
  return { set: { ...parsed.data.Meta }, unset: parsed.data.BerthUnset ?? [] };
}

/** Nomad's NodeMetaResponse from the client's view of its meta. */
function metaResponse(view: { meta: Record<string, string>; dynamic: Record<string, string | null>; static: Record<string, string> }): NodeMetaResponse {
  return { Meta: view.meta, Dynamic: view.dynamic, Static: view.static };
}

/** The running Client, refusing a `nodeId` other than its own: Berth does not relay to another node's agent. */
function thisNode(deps: ClientRoutesDeps, nodeId: string | undefined): Client {
  const client = readyClient(deps);
  if (nodeId && nodeId !== client.nodeId) {
    throw new ClientRouteError(404, 'NOT_FOUND', `node ${nodeId} is not this agent's node (${client.nodeId}); ask the agent of that node, at its HTTPAddr`);
  }
  return client;
}

/**
 * Registers the client routes. Each declares `config.access` ('read' or
 * 'write', the management role), which the listener's auth hook enforces.
 * The app must have @fastify/websocket registered. Followed streams and
 * exec sessions end when the app closes.
 */
export function registerClientRoutes(app: FastifyInstance, deps: ClientRoutesDeps): void {
  const log = deps.logger.child({ component: 'client-http' });
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort(new Error('agent closing')));
  registerAllocOpsRoutes(app, deps);
  registerAllocFsRoutes(app, deps, closing.signal);
  registerAllocExecRoute(app, deps, closing.signal);

  // Garbage-collects every finished allocation on this node now (their directories, secrets and the
  // agent's memory of them); running ones and ones with volumes still mounted are kept. `berth system gc`
  // calls it. Answers { collected: [allocation IDs] }.
  app.post('/v1/client/gc', { config: { access: 'write' } }, async () => {
    const collected = await readyClient(deps).collectGarbage();
    log.info({ collected: collected.length }, 'garbage collection requested');
    return { collected };
  });

  // The node's meta (Nomad 1.5+'s /v1/client/metadata): GET answers Nomad's NodeMetaResponse (merged,
  // dynamic and static meta); POST (and PUT) takes a NodeMetaApplyRequest and applies dynamic meta, kept
  // across restarts. `node_id` (the query, or NodeID in the body) may name only this agent's node: Berth
  // does not relay to another node's agent (ask that agent, at its node's HTTPAddr).
  app.get<{ Querystring: { node_id?: string } }>('/v1/client/metadata', { config: { access: 'read' } }, async (req) =>
    metaResponse(thisNode(deps, req.query.node_id).nodeMeta()),
  );
  const applyMeta = async (req: FastifyRequest<{ Querystring: { node_id?: string } }>, reply: FastifyReply): Promise<FastifyReply> => {
    const bodyNode = (req.body as { NodeID?: unknown } | undefined)?.NodeID;
    const client = thisNode(deps, req.query.node_id || (typeof bodyNode === 'string' ? bodyNode : undefined));
    const { set, unset } = metaChange(req.body);
    const view = client.applyNodeMeta(set, unset);
    log.info({ set: Object.keys(set), unset }, 'node meta applied');
    return reply.send(metaResponse(view));
  };
  app.put<{ Querystring: { node_id?: string } }>('/v1/client/metadata', { config: { access: 'write' } }, applyMeta);
  app.post<{ Querystring: { node_id?: string } }>('/v1/client/metadata', { config: { access: 'write' } }, applyMeta);

  // Which node this agent runs (`node drain -self`).
  app.get('/v1/client/self', { config: { access: 'read' } }, async () => ({ nodeId: readyClient(deps).nodeId }));
}
