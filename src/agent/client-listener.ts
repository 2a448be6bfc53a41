// A client agent's own HTTP listener: the /v1/client/... routes (logs, fs,
// exec, stats, restart, signal) and /v1/metrics (the agent's CSI calls and
// allocations), behind the same tokens as the server's API (X-Nomad-Token or
// a bearer token; a WebSocket may send its token in a handshake message),
// with its errors worded as the server's are.

import { createHash, timingSafeEqual } from 'node:crypto';
import websocket from '@fastify/websocket';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import { describeError, Lifecycle, type LifecycleState, type Logger } from '../lib/index.js';
import { NO_SCHEMA_COMPILERS, registerMetricsRoute } from '../server/index.js';
import { ClientRouteError } from './client-route-error.js';
import type { ClientRoutesDeps } from './client-route-deps.js';
import { registerClientRoutes } from './client-routes.js';

/** The server's word on a token: may it use `access` ('write' needs the management role)? */
export type TokenVerdict = 'ok' | 'unauthenticated' | 'forbidden' | 'unreachable';

export interface ClientListenerOptions extends ClientRoutesDeps {
  /** Management tokens may use every route; read-only tokens only /v1/metrics. */
  tokens: { management: readonly string[]; readOnly: readonly string[] };
  /**
   * Asks the server about a token this listener does not know, so that the
   * cluster's tokens work here without copying them into every client's
   * config. Positive answers are remembered for a minute.
   */
  verifyWithServer?: (token: string, access: 'read' | 'write', signal: AbortSignal) => Promise<TokenVerdict>;
  registry: Registry;
  bindAddress: string;
  port: number;
  logger: Logger;
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** The request's token: Nomad's X-Nomad-Token header, else an `Authorization: Bearer` one. */
function requestToken(req: FastifyRequest): string | undefined {
  const nomad = req.headers['x-nomad-token'];
  if (typeof nomad === 'string' && nomad.trim()) return nomad.trim();
  return /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
}

/** A WebSocket upgrade that says its token comes in its first message (`ws_handshake=true`). */
export function isHandshakeUpgrade(req: FastifyRequest): boolean {
  const q = (req.query ?? {}) as Record<string, unknown>;
  return String(req.headers.upgrade ?? '').toLowerCase() === 'websocket' && ['1', 't', 'true', 'TRUE', 'True'].includes(String(q['ws_handshake'] ?? ''));
}

/**
 * Answers an error as the server's API does: the message as plain text
 * (Nomad's), or `{ code, message, details }` to a caller whose Accept names
 * JSON; the code in X-Berth-Error-Code either way.
 */
function sendError(req: FastifyRequest, reply: FastifyReply, status: number, code: string, message: string): FastifyReply {
  void reply.header('X-Berth-Error-Code', code);
  if (/\bapplication\/json\b/i.test(req.headers.accept ?? '')) return reply.status(status).send({ code, message, details: {} });
  return reply.status(status).type('text/plain; charset=utf-8').send(message);
}

/**
 * The listener. `start()` resolves with its URL once listening (throws on
 * a port in use, having closed what it opened; a second start shares the
 * first); `stop()` closes it, ending followed logs and exec sessions; safe
 * twice. The state is a lib Lifecycle's.
 */
export class ClientListener {
  readonly #opts: ClientListenerOptions;
  readonly #logger: Logger;
  readonly #life: Lifecycle;
  #app: FastifyInstance | undefined;
  #url = '';

  constructor(opts: ClientListenerOptions) {
    this.#opts = opts;
    this.#logger = opts.logger.child({ component: 'client-http' });
    this.#life = new Lifecycle({ logger: this.#logger });
  }

  get url(): string {
    return this.#url;
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  async start(): Promise<string> {
    await this.#life.start(async () => {
      try {
        await this.#start();
      } catch (err) {
        await this.#close();
        throw err;
      }
    });
    return this.#url;
  }

  async #start(): Promise<void> {
    const opts = this.#opts;
    const management = opts.tokens.management.map(digest);
    const readers = opts.tokens.readOnly.map(digest);
    const app = Fastify({ logger: false, schemaController: NO_SCHEMA_COMPILERS });
    this.#app = app;
    await app.register(websocket);
    const remembered = new Map<string, number>();
    /** Checks a token for `access`; throws ClientRouteError 401, 403 or 503 (the server could not be asked). */
    const check = async (secret: string | undefined, access: 'read' | 'write'): Promise<void> => {
      if (!secret) throw new ClientRouteError(401, 'UNAUTHENTICATED', 'a token is required (X-Nomad-Token: <token>, or Authorization: Bearer <token>)');
      const d = digest(secret);
      const isManagement = management.some((t) => timingSafeEqual(t, d));
      const isReader = readers.some((t) => timingSafeEqual(t, d));
      if (isManagement || (isReader && access === 'read')) return;
      if (isReader) throw new ClientRouteError(403, 'FORBIDDEN', 'this needs a management token');
      const key = `${access}:${d.toString('hex')}`;
      if ((remembered.get(key) ?? 0) > Date.now()) return;
      const verdict = opts.verifyWithServer ? await opts.verifyWithServer(secret, access, AbortSignal.timeout(10_000)) : 'unauthenticated';
      if (verdict === 'ok') {
        remembered.set(key, Date.now() + 60_000);
        return;
      }
      if (verdict === 'forbidden') throw new ClientRouteError(403, 'FORBIDDEN', 'this needs a management token');
      if (verdict === 'unreachable') throw new ClientRouteError(503, 'SERVER_UNREACHABLE', 'cannot check the token: the server does not answer');
      throw new ClientRouteError(401, 'UNAUTHENTICATED', 'unknown token');
    };
    app.addHook('onRequest', async (req) => {
      if (req.routeOptions.url === undefined) return;
      const access = (req.routeOptions.config as { access?: string }).access === 'read' ? 'read' : 'write';
      const secret = requestToken(req);
      // A browser's WebSocket cannot carry the header: with ws_handshake the token comes in its first message.
      if (!secret && (req.routeOptions.config as { wsHandshake?: boolean }).wsHandshake && isHandshakeUpgrade(req)) {
        req.authorizeHandshake = (token) => check(token, access);
        return;
      }
      await check(secret, access);
    });
    app.setErrorHandler(async (err: unknown, req, reply) => {
      if (err instanceof ClientRouteError) return sendError(req, reply, err.httpStatus, err.code, err.message);
      // fastify's own client errors (a malformed body) keep their status and message; anything else is ours, logged.
      const fastifyStatus = (err as { statusCode?: unknown }).statusCode;
      if (typeof fastifyStatus === 'number' && fastifyStatus >= 400 && fastifyStatus < 500) return sendError(req, reply, fastifyStatus, 'INVALID', (err as Error).message);
      this.#logger.error({ method: req.method, route: req.routeOptions.url, err: describeError(err) }, 'request failed');
      return sendError(req, reply, 500, 'INTERNAL', 'internal error');
    });
    app.setNotFoundHandler(async (req, reply) => sendError(req, reply, 404, 'NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0] ?? ''}`));
    registerClientRoutes(app, opts);
    registerMetricsRoute(app, opts.registry);
    await app.listen({ host: opts.bindAddress, port: opts.port });
    const addr = app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : opts.port;
    const host = opts.bindAddress.includes(':') ? `[${opts.bindAddress}]` : opts.bindAddress;
    this.#url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
    this.#logger.info({ address: this.#url }, 'client listener started');
  }

  /** Closes the listener. Safe twice; never rejects. */
  stop(): Promise<void> {
    return this.#life.stop(() => this.#close());
  }

  async #close(): Promise<void> {
    const app = this.#app;
    this.#app = undefined;
    await app?.close();
  }
}
