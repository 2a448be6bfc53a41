// The connection the node opens to the server (GET /v1/node/connect, a
// WebSocket) so that the server can call the node even behind NAT. The node
// answers each request through a NodeRpcHandler; when the socket closes it
// reconnects with backoff, forever, until stopped.
//
// In a cluster the connection must end on the leader (it alone calls
// nodes). A follower refuses the upgrade with the leader's address in
// `x-berth-leader`: the next attempt goes there at once. A server that
// cannot be reached, or stops answering pings (a paused process keeps its
// sockets open), sends the next attempt to the next address given.

import WebSocket from 'ws';
import {
  BACKOFF,
  backoffDelay,
  describeError,
  Lifecycle,
  silentLogger,
  systemClock,
  type BackoffPolicy,
  type Clock,
  type LifecycleState,
  type Logger,
} from '../../lib/index.js';
import type { NodeRpcRequest, NodeRpcResponse } from '../../structs/index.js';

export interface NodeConnectionOptions {
  /** The server's HTTP base URL (`http` becomes `ws`), or the cluster's servers' URLs. */
  address: string | readonly string[];
  /** `Bearer <token>`; never logged. */
  authHeader: string;
  /** Read at every (re)connect: the node must be registered first. */
  nodeId: () => string;
  /** Answers one request; must never reject. */
  handle: (req: NodeRpcRequest, opts: { signal: AbortSignal }) => Promise<NodeRpcResponse>;
  /**
   * Liveness of an open socket: a ping goes out this often, and a socket
   * whose server sent nothing (no pong, no call) since the previous ping is
   * closed and the next server tried; the upgrade itself must answer within
   * it too. A paused server keeps its sockets open, so only this notices it.
   * Read at every ping (the client derives it from the heartbeat TTL).
   * Default 5 s.
   */
  livenessMs?: () => number;
  logger?: Logger;
  clock?: Clock;
  backoff?: BackoffPolicy;
  random?: () => number;
}

export type NodeConnectionState = LifecycleState;

const DEFAULT_LIVENESS_MS = 5_000;

/**
 * How often a node pings the server on its node connection, for a heartbeat
 * TTL: a quarter of it up to 5 s, and a tenth of it beyond 50 s. The servers
 * give a large cluster a TTL that grows with its size (max_heartbeats_per_second),
 * so the pings reaching the leader stay bounded as the heartbeats do (about
 * 3.3 times the heartbeat rate) instead of growing with the node count, and
 * a silent server is still left within a fifth of the TTL. Pure.
 */
export function connectionLivenessMs(heartbeatTtlMs: number): number {
  return Math.max(Math.min(DEFAULT_LIVENESS_MS, Math.floor(heartbeatTtlMs / 4)), Math.floor(heartbeatTtlMs / 10));
}
/**
 * After an open socket closes (the leader died or stepped down), the next
 * attempt waits a random time up to this: a thousand nodes that lost the
 * same leader reach the next one spread over a second, not all at once.
 */
const RECONNECT_SPREAD_MS = 1_000;
/**
 * A server that answered the upgrade with a refusal and no leader to go to
 * (an election under way) is asked again soon: the backoff stays under 2 s,
 * so that nodes find a new leader within a couple of seconds of its election.
 */
const REFUSED_BACKOFF = { initialDelayMs: 500, maxDelayMs: 2_000, multiplier: 2, jitter: 0.5 };

/** How a socket's life ended: it had opened; a follower named the leader; a server answered with a refusal; or no answer. */
type SessionOutcome = 'opened' | 'redirected' | 'refused' | 'failed';

/**
 * Lifecycle (lib Lifecycle): `start()` begins connecting in the background
 * and returns at once (a second start, or one after stop, does nothing);
 * `stop()` closes the socket, aborts the calls being answered and waits for
 * the loop to end (safe twice). `connected` says whether a socket is open
 * now; `waitConnected()` resolves once one is. Never throws on a server
 * that is down or refuses: it logs and retries.
 */
export class NodeConnection {
  readonly #opts: NodeConnectionOptions;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #life: Lifecycle;
  readonly #waiters = new Set<() => void>();
  #connected = false;
  #socket: WebSocket | undefined;
  #connects = 0;
  readonly #addresses: readonly string[];
  #current = 0;
  /** The leader a follower named when it refused us; tried next, once. */
  #hint: string | undefined;
  #target = '';

  constructor(opts: NodeConnectionOptions) {
    this.#opts = opts;
    this.#addresses = typeof opts.address === 'string' ? [opts.address] : [...opts.address];
    if (!this.#addresses.length) throw new TypeError('NodeConnection needs at least one server address');
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'node-connection' });
    this.#clock = opts.clock ?? systemClock;
    this.#life = new Lifecycle({ logger: this.#logger });
  }

  get state(): NodeConnectionState {
    return this.#life.state;
  }

  /** Whether a socket to the server is open now. */
  get connected(): boolean {
    return this.#connected;
  }

  /** The server the socket is open to, or the last one tried. */
  get server(): string {
    return this.#target;
  }

  /** How many times a socket opened so far (a reconnect counts). */
  get connects(): number {
    return this.#connects;
  }

  start(): void {
    this.#life.startLoop((signal) => this.#run(signal));
  }

  /** Resolves once a socket is open (at once if one is). Rejects never; resolves on stop too. */
  waitConnected(): Promise<void> {
    if (this.#connected || this.#life.stopRequested) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.add(resolve));
  }

  stop(): Promise<void> {
    const stopped = this.#life.stop(() => this.#socket?.terminate());
    this.#wake();
    return stopped;
  }

  #wake(): void {
    for (const w of this.#waiters) w();
    this.#waiters.clear();
  }

  async #run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    let redirected = false;
    /** The server that last gave no answer: a follower that still names it leader (its lease has not run out yet) is not followed there. */
    let unreachable: string | undefined;
    while (!signal.aborted) {
      const hinted = this.#hint;
      this.#hint = undefined;
      const target = hinted ?? (this.#addresses[this.#current] as string);
      const outcome = await this.#session(target, signal, unreachable);
      if (outcome === 'failed') unreachable = target;
      else if (outcome === 'opened') unreachable = undefined;
      if (signal.aborted) break;
      if (outcome === 'redirected' && !redirected) {
        // A follower named the leader: go there at once (once; a second refusal in a row backs off).
        redirected = true;
        continue;
      }
      redirected = false;
      if (outcome !== 'opened' && !hinted) this.#current = (this.#current + 1) % this.#addresses.length;
      failures = outcome === 'opened' ? 0 : failures + 1;
      // With several servers, a round of them all counts as one failure for the backoff: the next server is tried soon.
      const rounds = Math.ceil(failures / this.#addresses.length);
      const random = this.#opts.random ?? Math.random;
      const policy = this.#opts.backoff ?? BACKOFF.reconnect;
      const delay =
        outcome === 'opened'
          ? Math.round(random() * Math.min(RECONNECT_SPREAD_MS, policy.maxDelayMs))
          : outcome === 'refused'
            ? backoffDelay({ ...policy, ...REFUSED_BACKOFF, maxDelayMs: Math.min(REFUSED_BACKOFF.maxDelayMs, policy.maxDelayMs) }, failures, random)
            : backoffDelay(policy, rounds, random);
      try {
        await this.#clock.sleep(delay, signal);
      } catch {
        break;
      }
    }
  }

  /** One socket's life; resolves when it closes, with how it ended. */
  #session(target: string, signal: AbortSignal, unreachable: string | undefined): Promise<SessionOutcome> {
    this.#target = target;
    const url = `${target.replace(/\/+$/, '').replace(/^http/, 'ws')}/v1/node/connect?nodeId=${encodeURIComponent(this.#opts.nodeId())}`;
    const calls = new AbortController();
    const livenessMs = (): number => Math.max(100, this.#opts.livenessMs?.() ?? DEFAULT_LIVENESS_MS);
    return new Promise((resolve) => {
      let opened = false;
      let refused = false;
      let redirect: string | undefined;
      let heard = true;
      let silent = false;
      let pinger: ReturnType<typeof setTimeout> | undefined;
      const ws = new WebSocket(url, { headers: { authorization: this.#opts.authHeader }, handshakeTimeout: livenessMs() });
      this.#socket = ws;
      const onStop = (): void => ws.terminate();
      signal.addEventListener('abort', onStop, { once: true });
      const ping = (): void => {
        if (!heard) {
          this.#logger.warn({ server: target, silentMs: 2 * livenessMs() }, 'the server stopped answering on the node connection: trying the next one');
          silent = true;
          ws.terminate();
          return;
        }
        heard = false;
        ws.ping();
        pinger = setTimeout(ping, livenessMs());
      };
      ws.on('pong', () => {
        heard = true;
      });
      ws.on('open', () => {
        opened = true;
        this.#connects++;
        if (!signal.aborted) this.#connected = true;
        this.#logger.info({ connects: this.#connects, server: target }, 'connected to the server');
        this.#wake();
        pinger = setTimeout(ping, livenessMs());
      });
      ws.on('message', (data) => {
        heard = true;
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
        const leader = res.headers['x-berth-leader'];
        if (res.statusCode === 503 && typeof leader === 'string' && /^https?:\/\//.test(leader) && leader !== target && leader !== unreachable) {
          this.#logger.info({ server: target, leader }, 'the server is not the leader: connecting to the leader');
          redirect = leader;
        } else {
          refused = true;
          this.#logger.warn({ status: res.statusCode, server: target }, 'the server refused the node connection');
        }
        res.resume();
        ws.terminate();
      });
      ws.on('error', (err) => {
        this.#logger.debug({ err: describeError(err) }, 'node connection error');
      });
      ws.on('close', (code, reason) => {
        clearTimeout(pinger);
        signal.removeEventListener('abort', onStop);
        calls.abort();
        if (this.#socket === ws) this.#socket = undefined;
        this.#connected = false;
        if (opened) this.#logger.info({ code, reason: String(reason) }, 'node connection closed');
        if (redirect) this.#hint = redirect;
        // A server that went silent is left like one that refused: the next attempt goes to the next address.
        resolve(opened && !silent ? 'opened' : redirect ? 'redirected' : refused ? 'refused' : 'failed');
      });
    });
  }
}
