// A client agent's own HTTP listener: the /v1/client/... routes (logs, exec)
// and /v1/metrics (the agent's CSI calls and allocations), behind the same
// bearer tokens as the server's API.

import { createHash, timingSafeEqual } from 'node:crypto';
import websocket from '@fastify/websocket';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { Lifecycle, type LifecycleState, type Logger } from '../lib/index.js';
import { registerMetricsRoute } from '../server/index.js';
import { registerClientRoutes, type ClientRoutesDeps } from './client-routes.js';

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
    const app = Fastify({ logger: false });
    this.#app = app;
    await app.register(websocket);
    const remembered = new Map<string, number>();
    app.addHook('onRequest', async (req, reply) => {
      if (req.routeOptions.url === undefined) return;
      const access = (req.routeOptions.config as { access?: string }).access === 'read' ? 'read' : 'write';
      const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
      if (!m) return reply.status(401).send({ code: 'UNAUTHENTICATED', message: 'a bearer token is required (Authorization: Bearer <token>)', details: {} });
      const d = digest(m[1] as string);
      const isManagement = management.some((t) => timingSafeEqual(t, d));
      const isReader = readers.some((t) => timingSafeEqual(t, d));
      if (isManagement || (isReader && access === 'read')) return;
      if (isReader) return reply.status(403).send({ code: 'FORBIDDEN', message: 'this needs a management token', details: {} });
      const key = `${access}:${d.toString('hex')}`;
      if ((remembered.get(key) ?? 0) > Date.now()) return;
      const verdict = opts.verifyWithServer ? await opts.verifyWithServer(m[1] as string, access, AbortSignal.timeout(10_000)) : 'unauthenticated';
      if (verdict === 'ok') {
        remembered.set(key, Date.now() + 60_000);
        return;
      }
      if (verdict === 'forbidden') return reply.status(403).send({ code: 'FORBIDDEN', message: 'this needs a management token', details: {} });
      if (verdict === 'unreachable') return reply.status(503).send({ code: 'SERVER_UNREACHABLE', message: 'cannot check the token: the server does not answer', details: {} });
      return reply.status(401).send({ code: 'UNAUTHENTICATED', message: 'unknown token', details: {} });
    });
    app.setNotFoundHandler(async (req, reply) =>
      reply.status(404).send({ code: 'NOT_FOUND', message: `no route ${req.method} ${req.url.split('?')[0] ?? ''}`, details: {} }),
    );
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
