// The HTTP API: fastify, versioned `/v1/...` paths, camelCase JSON, bearer
// tokens with roles, `{ code, message, details }` errors, blocking queries on
// lists and an NDJSON event stream. Handlers translate HTTP to the services'
// calls and back; the decisions live in the services.

import websocket from '@fastify/websocket';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from '../../lib/index.js';
import type { NodeFingerprint } from '../../structs/index.js';
import type { JobService } from '../jobs/index.js';
import type { ServerMetrics } from '../metrics/index.js';
import type { NodeConnections } from '../noderpc/index.js';
import type { NodeService } from '../nodes/index.js';
import type { StateStore } from '../state/index.js';
import type { VolumeService } from '../volumes/index.js';
import { ApiError, toErrorResponse } from './api-error.js';
import { TokenTable, type Access, type ApiToken } from './auth.js';
import { registerEventRoutes } from './event-routes.js';
import { registerJobRoutes } from './job-routes.js';
import { registerNodeRoutes } from './node-routes.js';
import { registerVolumeRoutes } from './volume-routes.js';

export interface ApiDeps {
  store: StateStore;
  jobs: JobService;
  nodes: NodeService;
  volumes: VolumeService;
  connections: NodeConnections;
  tokens: readonly ApiToken[];
  logger: Logger;
  /** Served at GET /metrics (read access) when given. */
  metrics?: ServerMetrics;
  /** Largest accepted request body. Default 4 MiB. */
  bodyLimit?: number;
  /** How often the event stream sends a `{}` heartbeat line when idle. Default 10 s. */
  eventHeartbeatMs?: number;
  /** More routes on the same listener (the dev agent's /v1/client/...); each must declare `config.access`. */
  extraRoutes?: (app: FastifyInstance) => void | Promise<void>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifyRequest {
    /** The caller, set once the token is checked. */
    caller?: { name: string; role: string };
  }
}

/** What each route module gets. */
export interface RouteContext {
  deps: ApiDeps;
  /** An AbortSignal that fires when the client goes away (for blocking reads). */
  signalOf(req: FastifyRequest, reply: FastifyReply): AbortSignal;
}

export type { NodeFingerprint };

/**
 * Builds the API as a fastify instance, not yet listening. Every route
 * declares its access in `config.access`; routes without one are refused,
 * so a forgotten declaration fails closed. Nothing secret is logged: the
 * request log has method, route, status and the caller's token name only.
 */
export async function buildApi(deps: ApiDeps): Promise<FastifyInstance> {
  const log = deps.logger.child({ component: 'http' });
  const tokens = new TokenTable(deps.tokens);
  const app = Fastify({ logger: false, bodyLimit: deps.bodyLimit ?? 4 * 1024 * 1024, return503OnClosing: true });
  await app.register(websocket, { options: { maxPayload: 16 * 1024 * 1024 } });

  app.addHook('onRequest', async (req) => {
    const access = req.routeOptions.config.access;
    if (!access) {
      if (req.routeOptions.url === undefined) return; // 404s are answered by the not-found handler
      throw new ApiError('FORBIDDEN', 'this route declares no access');
    }
    req.caller = tokens.authorize(req.headers.authorization, access);
  });

  app.addHook('onResponse', async (req, reply) => {
    log.debug(
      { method: req.method, route: req.routeOptions.url ?? 'unknown', status: reply.statusCode, caller: req.caller?.name, ms: Math.round(reply.elapsedTime) },
      'request',
    );
  });

  app.setErrorHandler(async (err, req, reply) => {
    const { status, body } = toErrorResponse(err);
    if (status >= 500) log.error({ method: req.method, route: req.routeOptions.url, code: body.code, err: describe(err) }, 'request failed');
    return reply.status(status).send(body);
  });

  app.setNotFoundHandler(async (req, reply) => {
    return reply.status(404).send({ code: 'NOT_FOUND', message: `no route ${req.method} ${req.url.split('?')[0] ?? ''}`, details: {} });
  });

  // Closing the API ends blocking reads and event streams, so close() does not wait on them.
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort(new Error('server closing')));
  const ctx: RouteContext = {
    deps,
    signalOf(_req, reply) {
      const ac = new AbortController();
      const onClosing = (): void => ac.abort(closing.signal.reason);
      if (closing.signal.aborted) onClosing();
      else closing.signal.addEventListener('abort', onClosing, { once: true });
      reply.raw.once('close', () => {
        closing.signal.removeEventListener('abort', onClosing);
        if (!reply.raw.writableFinished) ac.abort(new Error('client went away'));
      });
      return ac.signal;
    },
  };
  registerJobRoutes(app, ctx);
  registerNodeRoutes(app, ctx);
  registerVolumeRoutes(app, ctx);
  registerEventRoutes(app, ctx);

  const metrics = deps.metrics;
  if (metrics) {
    app.get('/metrics', { config: { access: 'read' } }, async (_req, reply) => {
      const { contentType, body } = await metrics.scrape();
      return reply.header('Content-Type', contentType).send(body);
    });
  }

  await deps.extraRoutes?.(app);

  app.get('/v1/status', { config: { access: 'node-read' } }, async () => {
    return { index: deps.store.latestIndex(), connectedNodes: deps.connections.connectedNodes().length };
  });
  return app;
}

/** A log-safe description of an unexpected error: its class and message, never request data. */
function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** Reads a namespace query parameter: `default` when absent, `*` for all. */
export function namespaceOf(query: Record<string, unknown>): string {
  const ns = query['namespace'];
  return typeof ns === 'string' && ns !== '' ? ns : 'default';
}

/** Checks that a body is a JSON object. Throws ApiError INVALID otherwise. */
export function objectBody(body: unknown, what = 'request body'): Record<string, unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new ApiError('INVALID', `${what} must be a JSON object`);
  return body as Record<string, unknown>;
}
