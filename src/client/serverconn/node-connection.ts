// The connection the node opens to the server (GET /v1/node/connect, a
// WebSocket) so that the server can call the node even behind NAT. The node
// answers each request through a NodeRpcHandler; when the socket closes it
// reconnects with backoff, forever, until stopped.

import WebSocket from 'ws';
import { BACKOFF,
  backoffDelay, describeError, silentLogger, systemClock, type BackoffPolicy, type Clock, type Logger } from '../../lib/index.js';
import type { NodeRpcRequest, NodeRpcResponse } from '../../structs/index.js';

export interface NodeConnectionOptions {
  /** The server's HTTP base URL; `http` becomes `ws`. */
  address: string;
  /** `Bearer <token>`; never logged. */
  authHeader: string;
  /** Read at every (re)connect: the node must be registered first. */
  nodeId: () => string;
  /** Answers one request; must never reject. */
  handle: (req: NodeRpcRequest, opts: { signal: AbortSignal }) => Promise<NodeRpcResponse>;
  logger?: Logger;
  clock?: Clock;
  backoff?: BackoffPolicy;
  random?: () => number;
}

export type NodeConnectionState = 'new' | 'connecting' | 'connected' | 'stopped';


/**
 * Lifecycle: `start()` begins connecting in the background and returns at
 * once; `stop()` closes the socket, aborts the calls being answered and
 * waits for the loop to end (safe twice). `waitConnected()` resolves once a
 * socket is open. Never throws on a server that is down or refuses: it logs
 * and retries.
 */
export class NodeConnection {
  readonly #opts: NodeConnectionOptions;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #stopping = new AbortController();
  readonly #waiters = new Set<() => void>();
  #state: NodeConnectionState = 'new';
  #socket: WebSocket | undefined;
  #loop: Promise<void> | undefined;
  #connects = 0;

  constructor(opts: NodeConnectionOptions) {
    this.#opts = opts;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'node-connection' });
    this.#clock = opts.clock ?? systemClock;
  }

  get state(): NodeConnectionState {
    return this.#state;
  }

  /** How many times a socket opened so far (a reconnect counts). */
  get connects(): number {
    return this.#connects;
  }

  start(): void {
    if (this.#state !== 'new') return;
    this.#state = 'connecting';
    this.#loop = this.#run(this.#stopping.signal);
  }

  /** Resolves once a socket is open (at once if one is). Rejects never; resolves on stop too. */
  waitConnected(): Promise<void> {
    if (this.#state === 'connected' || this.#state === 'stopped') return Promise.resolve();
    return new Promise((resolve) => this.#waiters.add(resolve));
  }

  async stop(): Promise<void> {
    if (this.#state === 'stopped') return this.#loop;
    this.#state = 'stopped';
    this.#stopping.abort();
    this.#socket?.terminate();
    this.#wake();
    await this.#loop;
  }

  #wake(): void {
    for (const w of this.#waiters) w();
    this.#waiters.clear();
  }

  async #run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      const opened = await this.#session(signal);
      if (signal.aborted) break;
      failures = opened ? 1 : failures + 1;
      const delay = backoffDelay(this.#opts.backoff ?? BACKOFF.reconnect, failures, this.#opts.random);
      try {
        await this.#clock.sleep(delay, signal);
      } catch {
        break;
      }
    }
  }

  /** One socket's life; resolves when it closes, with whether it had opened. */
  #session(signal: AbortSignal): Promise<boolean> {
    const url = `${this.#opts.address.replace(/^http/, 'ws')}/v1/node/connect?nodeId=${encodeURIComponent(this.#opts.nodeId())}`;
    const calls = new AbortController();
    return new Promise<boolean>((resolve) => {
      let opened = false;
      const ws = new WebSocket(url, { headers: { authorization: this.#opts.authHeader } });
      this.#socket = ws;
      const onStop = (): void => ws.terminate();
      signal.addEventListener('abort', onStop, { once: true });
      ws.on('open', () => {
        opened = true;
        this.#connects++;
        if (this.#state !== 'stopped') this.#state = 'connected';
        this.#logger.info({ connects: this.#connects }, 'connected to the server');
        this.#wake();
      });
      ws.on('message', (data) => {
        let req: NodeRpcRequest;
        try {
          req = JSON.parse(String(data)) as NodeRpcRequest;
        } catch (err) {
          this.#logger.warn({ err: describeError(err) }, 'unreadable message from the server');
          return;
        }
        if (!req || typeof req.id !== 'string' || typeof req.method !== 'string') {
          this.#logger.warn('a message from the server that is no call');
          return;
        }
        void this.#opts.handle(req, { signal: calls.signal }).then((answer) => {
          if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(answer));
        });
      });
      ws.on('unexpected-response', (_req, res) => {
        this.#logger.warn({ status: res.statusCode }, 'the server refused the node connection');
        ws.terminate();
      });
      ws.on('error', (err) => {
        this.#logger.debug({ err: describeError(err) }, 'node connection error');
      });
      ws.on('close', (code, reason) => {
        signal.removeEventListener('abort', onStop);
        calls.abort();
        if (this.#socket === ws) this.#socket = undefined;
        if (this.#state === 'connected') this.#state = 'connecting';
        if (opened) this.#logger.info({ code, reason: String(reason) }, 'node connection closed');
        resolve(opened);
      });
    });
  }
}
