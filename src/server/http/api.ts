// The HTTP API, Nomad's `/v1` API: fastify, Nomad's paths and PascalCase
// shapes (src/api), tokens with roles (`X-Nomad-Token` or a bearer token),
// Nomad's plain-text errors (`{ code, message, details }` to a caller that
// accepts JSON), blocking queries and filters on reads (nomad-read.ts) and
// an NDJSON event stream. Handlers translate HTTP to the services'
// calls and back; the decisions live in the services.

import websocket from '@fastify/websocket';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { AbortedError } from '../../lib/index.js';
import { MAX_REQUEST_BODY_BYTES, nestingProblem, type NodeFingerprint } from '../../structs/index.js';
import { ApiError, toErrorResponse, type ErrorBody } from './api-error.js';
import { errorAnswer } from './answers.js';
import { relayedBy } from './api-workers/index.js';
import { TokenTable, type Access } from './auth.js';
import { registerAgentRoutes } from './agent-routes.js';
import { answerHeadWithGet } from './head-twins.js';
import { registerAllocRoutes } from './alloc-routes.js';
import { registerClientForwarding } from './client-forward.js';
import { registerClusterRoutes } from './cluster-routes.js';
import { registerDeploymentRoutes } from './deployment-routes.js';
import { registerDrainRoutes } from './drain-routes.js';
import { registerEvalRoutes } from './eval-routes.js';
import { registerEventRoutes } from './event-routes.js';
import { registerLeaderForwarding } from './leader-forward.js';
import { registerJobRoutes } from './job-routes.js';
import { countedByFastPath, MainFastRegister } from './main-fast-register.js';
import { MainFastNode } from './main-fast-node.js';
import { registerMetricsRoute } from './metrics-routes.js';
import { registerNamespaceRoutes } from './namespace-routes.js';
import { registerNodeRoutes } from './node-routes.js';
import { registerCsiSnapshotRoutes } from './csi-snapshot-routes.js';
import { registerPluginRoutes } from './plugin-routes.js';
import { registerOperatorRoutes } from './operator-routes.js';
import { registerVolumeRoutes } from './volume-routes.js';
import { registerHostVolumeRoutes } from './host-volume-routes.js';
import { registerIdentityRoutes } from './identity-routes.js';
import { registerVolumeClaimRoutes } from './volume-claim-routes.js';
import { registerScalingRoutes } from './scaling-routes.js';
import { registerSearchRoutes } from './search-routes.js';
import { registerServiceRoutes } from './service-routes.js';
import { registerVolumeHealthRoutes } from './volume-health-routes.js';
import { NO_SCHEMA_COMPILERS } from './schema-compilers.js';
import type { ApiDeps, RouteContext } from './route-context.js';

export type { ApiDeps };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route; `public` needs no token (only the web UI's static files, which hold no cluster data). */
    access?: Access | 'public';
    /** A WebSocket route that reads Nomad's handshake message (`ws_handshake=true`) and calls `req.authorizeHandshake` before anything else. */
    wsHandshake?: boolean;
  }
  interface FastifyRequest {
    /** The caller, set once the token is checked. */
    caller?: { name: string; role: string };
    /**
     * Set instead of `caller` on a WebSocket opened with `ws_handshake=true`
     * and no token header: checks the token of its handshake message for the
     * route's access and sets `caller`. Rejects as a bad token does.
     */
    authorizeHandshake?: (token: string) => Promise<void>;
  }
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
  const bodyLimit = deps.bodyLimit ?? MAX_REQUEST_BODY_BYTES;
  // HEAD routes: one route for GET and HEAD, not fastify's twin for each GET (head-twins.ts).
  const app = Fastify({ logger: false, bodyLimit, return503OnClosing: true, exposeHeadRoutes: false, schemaController: NO_SCHEMA_COMPILERS });
  answerHeadWithGet(app);
  // JSON bodies nested deeper than MAX_NESTING_DEPTH are refused with the
  // place, before parsing (the validators and the store's serializer recurse).
  // The default parser still refuses `__proto__` and `constructor.prototype` keys.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  // Every body is JSON, whatever its Content-Type says, as Nomad's server takes it: Nomad's Go
  // api package (its CLI, the Terraform provider, nomad-pack) sends none, and `curl -d @job.json`
  // sends application/x-www-form-urlencoded. '*' is also the parser of a body without the header.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(['application/json', '*'], { parseAs: 'string' }, (req, body, done) => {
    // No body with the header (many HTTP clients always send it, on DELETE too): no body, as Nomad takes it.
    if ((body as string).trim() === '') return done(null, undefined);
    const deep = nestingProblem(body as string);
    if (deep) return done(new ApiError('INVALID', `request body: ${deep.message}`, { line: deep.line, column: deep.column }), undefined);
    return parseJson(req, body as string, (err, parsed) => {
      // secure-json-parse refuses prototype keys with a bare SyntaxError, which fastify words
      // as "not valid JSON"; name the key instead, as for any other field nobody accepts.
      if (err && /(?<!\\)"(__proto__|prototype)"\s*:/.test(body as string)) {
        const key = /(?<!\\)"__proto__"\s*:/.test(body as string) ? '__proto__' : 'constructor.prototype';
        return done(new ApiError('INVALID', `request body: the key "${key}" is not allowed`, { field: key }), undefined);
      }
      return done(err, parsed);
    });
  });
  await app.register(websocket, { options: { maxPayload: 16 * 1024 * 1024 } });

  const inFlight = deps.inFlight;
  // Each connection counts as a request on its way from its accept to its first request (FRESH_CONNECTION_MS),
  // where the agent runs its own client on this event loop (a dev agent): there a gap in a burst lets the
  // scheduler and the node's task starts in, and the rest of the burst waits behind both. Not on a server of
  // a cluster: its nodes open connections all the time, and the timer each one took cost its followers a third
  // more CPU an allocation in a 10,000-allocation job (0.59 -> 0.79-0.88 ms), for no burst of users it serves.
  const fresh = new WeakMap<Socket, () => void>();
  if (inFlight && deps.agent?.client) {
    app.server.on('connection', (socket: Socket) => {
      const settle = inFlight.connectionOpened();
      fresh.set(socket, settle);
      socket.once('close', settle);
    });
  }
  // A callback hook (an async one costs every request a promise and a turn of microtasks).
  app.addHook('onRequest', (req, reply, done) => {
    try {
      admit(req, reply);
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  });
  const admit = (req: FastifyRequest, reply: FastifyReply): void => {
    const access = req.routeOptions.config.access;
    // A registration the fast path gave to fastify was counted there, and its connection settled.
    if (!countedByFastPath(req.raw)) count(req, reply, access);
    // Reads come from the store's last view; when it lost etcd that view may be behind.
    if (deps.store.stale) reply.header('X-Berth-Stale', 'true');
    if (!access) {
      if (req.routeOptions.url === undefined) return; // 404s are answered by the not-found handler
      throw new ApiError('FORBIDDEN', 'this route declares no access');
    }
    if (access === 'public') return;
    const nomadToken = req.headers['x-nomad-token'];
    // A browser's WebSocket cannot carry a token header: with ws_handshake its first message does (the route checks it).
    if (req.routeOptions.config.wsHandshake && !nomadToken && !req.headers.authorization && isHandshakeUpgrade(req)) {
      req.authorizeHandshake = async (token) => {
        req.caller = tokens.authorize(undefined, access, token);
      };
      return;
    }
    req.caller = tokens.authorize(req.headers.authorization, access, typeof nomadToken === 'string' ? nomadToken : undefined);
  };

  const count = (req: FastifyRequest, reply: FastifyReply, access: string | undefined): void => {
    inFlight?.began();
    // Users' writes only: a node's own (heartbeats, status reports, claims) are a steady stream in a large
    // cluster, and the scheduler waiting for a gap in it held each part of a 10,000-allocation plan a second.
    // A node's reads sent as POST (its allocation pull, `node-read`) are a node's too: counted as a user's write, the
    // pull that follows every placement made a lone submission look like a burst to what waits for quiet.
    if (inFlight && req.method !== 'GET' && req.method !== 'HEAD' && access !== 'node' && access !== 'node-read') {
      inFlight.enter();
      reply.raw.once('close', () => inFlight.leave());
    }
    settleConnection(req.raw);
  };
  const settleConnection = (raw: IncomingMessage): void => {
    const settle = fresh.get(raw.socket);
    if (settle) {
      fresh.delete(raw.socket);
      settle();
    }
  };
  const fastRegister = new MainFastRegister({ deps, tokens, bodyLimit, log, settleConnection });
  const fastNode = new MainFastNode({ deps, tokens, bodyLimit, log, settleConnection });

  // A callback hook, and the line's fields made only when it is written: every answer passes here.
  app.addHook('onResponse', (req, reply, done) => {
    if (log.isLevelEnabled('debug')) {
      log.debug(
        { method: req.method, route: req.routeOptions.url ?? 'unknown', status: reply.statusCode, caller: req.caller?.name, ms: Math.round(reply.elapsedTime), worker: relayedBy(req.raw.socket, req.headers) },
        'request',
      );
    }
    done();
  });

  // Closing the API ends blocking reads and event streams, so close() does not wait on them.
  const closing = new AbortController();
  app.addHook('preClose', async () => {
    fastRegister.close();
    fastNode.close();
    closing.abort(new Error('server closing'));
  });
  app.setErrorHandler(async (err, req, reply) => {
    const { status, body } = toErrorResponse(err);
    if (status === 413) {
      body.message = `request body too large (limit ${bodyLimit} bytes)`;
      body.details = { ...body.details, limit: bodyLimit };
      await drainRefusedBody(req.raw, REFUSED_BODY_LINGER_MS);
      void reply.header('connection', 'close');
    }
    // A blocking read or stream is aborted only by its client going away or the server closing: no failure.
    if (err instanceof AbortedError) {
      log.debug({ method: req.method, route: req.routeOptions.url }, 'request ended: the client went away or the server is closing');
    } else if (status >= 500) {
      const fields = { method: req.method, route: req.routeOptions.url, code: body.code, err: describe(err) };
      // A follower sending a node on to the leader is a redirect, not a failure: after each election
      // every node is sent on once, and a thousand nodes made a thousand error lines.
      if (req.routeOptions.url === '/v1/node/connect' && body.code === 'UNAVAILABLE') log.debug(fields, 'node connection sent to the leader');
      else log.error(fields, 'request failed');
    }
    return sendError(req, reply, status, body);
  });

  app.setNotFoundHandler(async (req, reply) => {
    return sendError(req, reply, 404, { code: 'NOT_FOUND', message: `no route ${req.method} ${req.url.split('?')[0] ?? ''}`, details: {} });
  });

  // The requests in flight, aborted when the server closes: one listener on `closing` for all of them.
  // A listener each made every request's add and remove walk the signal's list of listeners (EventTarget
  // looks for a duplicate), a thousand nodes' blocked reads long: some 0.35 s of a leader's CPU while a
  // 10,000-allocation job ran.
  const abortable = new Set<AbortController>();
  closing.signal.addEventListener('abort', () => {
    for (const ac of abortable) ac.abort(closing.signal.reason);
    abortable.clear();
  }, { once: true });
  const ctx: RouteContext = {
    deps,
    signalOf(_req, reply) {
      const ac = new AbortController();
      if (closing.signal.aborted) ac.abort(closing.signal.reason);
      else abortable.add(ac);
      reply.raw.once('close', () => {
        abortable.delete(ac);
        if (!reply.raw.writableFinished) ac.abort(new Error('client went away'));
      });
      return ac.signal;
    },
  };
  registerLeaderForwarding(app, ctx);
  registerClusterRoutes(app, ctx);
  registerNamespaceRoutes(app, ctx);
  registerAgentRoutes(app, ctx);
  registerOperatorRoutes(app, ctx);
  registerJobRoutes(app, ctx);
  registerEvalRoutes(app, ctx);
  registerAllocRoutes(app, ctx);
  registerDeploymentRoutes(app, ctx);
  registerNodeRoutes(app, ctx);
  registerDrainRoutes(app, ctx);
  registerVolumeRoutes(app, ctx);
  registerHostVolumeRoutes(app, ctx);
  registerVolumeClaimRoutes(app, ctx);
  registerCsiSnapshotRoutes(app, ctx);
  registerPluginRoutes(app, ctx);
  registerVolumeHealthRoutes(app, ctx);
  registerServiceRoutes(app, ctx);
  registerScalingRoutes(app, ctx);
  registerSearchRoutes(app, ctx);
  if (deps.identities) registerIdentityRoutes(app, ctx, deps.identities);
  registerEventRoutes(app, ctx);
  registerClientForwarding(app, ctx);

  if (deps.metrics) registerMetricsRoute(app, deps.metrics.registry);

  await deps.extraRoutes?.(app);

  // Registrations are served before fastify's routing; it answers the rest (and every refusal).
  fastRegister.install(app.server);
  fastNode.install(app.server);

  return app;
}

/**
 * Answers an error as Nomad does, its message as the plain-text body (what
 * Nomad's clients print after the status), unless the caller asks for JSON
 * (`Accept: application/json`, as Berth's CLI and web UI do): then the body
 * is `{ code, message, details }`, the stable code and the fields (the
 * problem's line, the node) a client needs to say more.
 */
function sendError(req: FastifyRequest, reply: FastifyReply, status: number, body: ErrorBody): FastifyReply {
  const a = errorAnswer(req.headers.accept, status, body);
  for (let i = 0; i + 1 < a.headers.length; i += 2) void reply.header(a.headers[i] as string, a.headers[i + 1]);
  return reply.status(status).type(a.type).send(a.payload);
}

/** A WebSocket upgrade whose token comes in its first message (Nomad's `ws_handshake=true`). */
function isHandshakeUpgrade(req: FastifyRequest): boolean {
  const q = (req.query ?? {}) as Record<string, unknown>;
  return String(req.headers.upgrade ?? '').toLowerCase() === 'websocket' && ['1', 't', 'true', 'TRUE', 'True'].includes(String(q['ws_handshake'] ?? ''));
}

/** A log-safe description of an unexpected error: its class and message, never request data. */
function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** How long a refused body is read and discarded before its connection is cut. */
const REFUSED_BODY_LINGER_MS = 30_000;

/**
 * Reads and discards the rest of a body refused as too large and resolves
 * once it is read: the 413 goes out after the whole body arrived, so a
 * client still writing it reads the answer instead of a connection reset
 * (the connection closes after the answer, and the kernel resets a socket
 * closed with unread data). Nothing read is kept, so a body of any size
 * costs no memory; the refusal is bounded in time instead (`lingerMs`, as a
 * web server's lingering close is): past it the socket is destroyed.
 */
function drainRefusedBody(raw: IncomingMessage, lingerMs: number): Promise<void> {
  if (raw.complete || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const cut = setTimeout(() => raw.socket.destroy(), lingerMs);
    cut.unref();
    const done = (): void => {
      clearTimeout(cut);
      resolve();
    };
    raw.on('data', () => undefined);
    raw.once('end', done);
    raw.once('close', done);
    raw.once('error', done);
    raw.resume();
  });
}
