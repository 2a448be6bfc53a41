// The node agent's own HTTP endpoints, served by a client agent's listener
// (or, in dev mode, by the server's), in Nomad's paths and shapes: the
// allocation operations (alloc-ops-routes.ts: restart, signal, stats), the
// allocation directory and logs (alloc-fs-routes.ts), exec over a WebSocket
// (alloc-exec-route.ts), and the node's own: garbage collection, its meta,
// and which node it is. Errors are thrown as ClientRouteError (its status)
// and worded by the listener.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Client, TaskDriver } from '../client/index.js';
import type { Logger } from '../lib/index.js';
import { registerAllocExecRoute } from './alloc-exec-route.js';
import { registerAllocFsRoutes } from './alloc-fs-routes.js';
import { registerAllocOpsRoutes } from './alloc-ops-routes.js';
import { ClientRouteError, readyClient } from './client-route-error.js';

/** What the routes read: the running Client (undefined until it started) and its drivers. */
export interface ClientRoutesDeps {
  client(): Client | undefined;
  drivers: ReadonlyMap<string, TaskDriver>;
  logger: Logger;
}

const META_KEY = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/** A node meta change from a request body (`meta` or Nomad's `Meta`, and `unset`); ClientRouteError 400 when malformed. */
function metaChange(body: unknown): { set: Record<string, string | null>; unset: string[] } {
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const raw = b['meta'] ?? b['Meta'] ?? {};
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new ClientRouteError(400, 'INVALID', 'meta must be an object of key -> string (or null)');
  const set: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (!META_KEY.test(k)) throw new ClientRouteError(400, 'INVALID', `meta key "${k}" must be letters, digits, "_", "." or "-"`);
    if (v !== null && typeof v !== 'string') throw new ClientRouteError(400, 'INVALID', `meta "${k}" must be a string (or null to remove it)`);
    set[k] = v;
  }
  const unset = b['unset'] ?? [];
  if (!Array.isArray(unset) || !unset.every((k) => typeof k === 'string')) throw new ClientRouteError(400, 'INVALID', 'unset must be a list of meta keys');
  return { set, unset: unset as string[] };
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

  // The node's meta (Nomad 1.3+'s /v1/client/metadata): GET shows merged, dynamic and static meta;
  // PUT/POST { meta: { key: "value" | null }, unset?: [keys] } applies dynamic meta, kept across restarts.
  app.get('/v1/client/metadata', { config: { access: 'read' } }, async () => {
    const client = readyClient(deps);
    return { nodeId: client.nodeId, ...client.nodeMeta() };
  });
  const applyMeta = async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const client = readyClient(deps);
    const { set, unset } = metaChange(req.body);
    const view = client.applyNodeMeta(set, unset);
    log.info({ set: Object.keys(set), unset }, 'node meta applied');
    return reply.send({ nodeId: client.nodeId, ...view });
  };
  app.put('/v1/client/metadata', { config: { access: 'write' } }, applyMeta);
  app.post('/v1/client/metadata', { config: { access: 'write' } }, applyMeta);

  // Which node this agent runs (`node drain -self`).
  app.get('/v1/client/self', { config: { access: 'read' } }, async () => ({ nodeId: readyClient(deps).nodeId }));
}
