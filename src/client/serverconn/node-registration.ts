// Registers the node with the server and keeps it alive with heartbeats.
// The fingerprint goes with the registration and, whenever it changed (a
// plugin became healthy, a driver broke), with the next heartbeat, which
// `pushFingerprint()` sends at once. A server that forgot the node (404)
// gets a new registration under the same node ID.

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
import type { NodeFingerprint } from '../../structs/index.js';
import { ServerConnError, type ServerApi } from './server-api.js';

export interface NodeRegistrationOptions {
  api: ServerApi;
  /** The node's ID, kept by the agent across restarts. */
  nodeId: string;
  /** The node's fingerprint now; called before every registration and heartbeat. */
  fingerprint: () => NodeFingerprint | Promise<NodeFingerprint>;
  /**
   * Between heartbeats; capped at a third of the TTL the server gave.
   * Default: a third of that TTL (10 s for the server's default 30 s; a
   * server in a large cluster gives a longer one). Each wait is shortened
   * by up to a quarter at random, so that nodes that registered together
   * do not heartbeat together.
   */
  heartbeatIntervalMs?: number;
  /**
   * Called after every registration or heartbeat a server answered, past its
   * token check, with anything but "this node is unknown" (fencing leases
   * are renewed here): an acceptance, and also a refusal such as 503
   * STORE_UNAVAILABLE or SERVER_LEADER_UNAVAILABLE. docs/csi-rules.md
   * ("The fencing lease") says why a refusal renews too. Must not throw.
   */
  onContact?: () => void;
  clock?: Clock;
  logger?: Logger;
  backoff?: BackoffPolicy;
  random?: () => number;
}

export type NodeRegistrationState = LifecycleState;

/**
 * Lifecycle (lib Lifecycle): `start()` begins registering in the background
 * and returns at once (a second start, or one after stop, does nothing);
 * `registered` says whether the server accepted the node, `waitRegistered()`
 * resolves once it has; `stop()` ends the loop and waits for it (safe
 * twice). Never throws for a server that is down: it retries with backoff
 * and logs.
 */
export class NodeRegistration {
  readonly #opts: NodeRegistrationOptions;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #life: Lifecycle;
  readonly #waiters = new Set<() => void>();
  #wake: AbortController | undefined;
  #registered = false;
  #lastSent = '';
  #ttlMs = 30_000;
  #heartbeats = 0;
  #registrations = 0;

  constructor(opts: NodeRegistrationOptions) {
    this.#opts = opts;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'node-registration', nodeId: opts.nodeId });
    this.#clock = opts.clock ?? systemClock;
    this.#life = new Lifecycle({ logger: this.#logger });
  }

  get nodeId(): string {
    return this.#opts.nodeId;
  }

  get state(): NodeRegistrationState {
    return this.#life.state;
  }

  /** Whether the server has accepted the node (it stays true across heartbeats). */
  get registered(): boolean {
    return this.#registered;
  }

  /** The heartbeat TTL the server gave (30 s until it says). */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** Successful heartbeats and registrations so far (for tests and status). */
  get counts(): { heartbeats: number; registrations: number } {
    return { heartbeats: this.#heartbeats, registrations: this.#registrations };
  }

  start(): void {
    this.#life.startLoop((signal) => this.#run(signal));
  }

  /** Resolves once registered (at once if it is); on stop too. */
  waitRegistered(): Promise<void> {
    if (this.#registered || this.#life.stopRequested) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.add(resolve));
  }

  /** Sends the fingerprint with a heartbeat now instead of at the next interval. Does not block. */
  pushFingerprint(): void {
    this.#wake?.abort();
  }

  stop(): Promise<void> {
    const stopped = this.#life.stop();
    this.#wakeWaiters();
    return stopped;
  }

  #wakeWaiters(): void {
    for (const w of this.#waiters) w();
    this.#waiters.clear();
  }

  #interval(): number {
    const third = Math.floor(this.#ttlMs / 3);
    return Math.max(10, Math.min(this.#opts.heartbeatIntervalMs ?? third, third));
  }

  /** The wait before the next heartbeat: the interval less up to a quarter of it, at random. */
  #nextHeartbeat(): number {
    const interval = this.#interval();
    return Math.max(10, Math.round(interval * (1 - 0.25 * (this.#opts.random ?? Math.random)())));
  }

  async #run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    let registered = false;
    while (!signal.aborted) {
      let delay: number;
      this.#wake = new AbortController();
      try {
        const fp = await this.#opts.fingerprint();
        const text = JSON.stringify(fp);
        if (!registered) {
          const { heartbeatTtlMs } = await this.#opts.api.register(fp, { id: this.#opts.nodeId, signal });
          this.#ttlMs = heartbeatTtlMs || this.#ttlMs;
          this.#lastSent = text;
          registered = true;
          this.#registrations++;
          if (!signal.aborted) this.#registered = true;
          this.#logger.info({ ttlMs: this.#ttlMs }, 'node registered');
          this.#wakeWaiters();
        } else {
          const changed = text !== this.#lastSent;
          // A server that hangs (paused, overloaded) must not cost the node its TTL: give up on it in time to try another.
          const timeoutMs = Math.max(1_000, Math.floor(this.#ttlMs / 3));
          const { heartbeatTtlMs } = await this.#opts.api.heartbeat(this.#opts.nodeId, changed ? fp : undefined, { signal, timeoutMs });
          this.#ttlMs = heartbeatTtlMs || this.#ttlMs;
          if (changed) this.#lastSent = text;
          this.#heartbeats++;
        }
        failures = 0;
        this.#opts.onContact?.();
        delay = this.#nextHeartbeat();
      } catch (err) {
        if (signal.aborted) break;
        if (err instanceof ServerConnError && err.apiCode === 'NOT_FOUND' && registered) {
          this.#logger.warn('the server does not know this node any more; registering again');
          registered = false;
          failures = 0;
          continue;
        }
        failures++;
        // A server answered (it cannot commit, or no leader is known): no claim can move while it
        // answers so, so the node's tasks keep their lease. The heartbeat is retried as usual.
        const vouched = err instanceof ServerConnError && err.answered;
        if (vouched) this.#opts.onContact?.();
        delay = backoffDelay(this.#opts.backoff ?? BACKOFF.reconnect, failures, this.#opts.random);
        if (vouched) delay = Math.min(delay, this.#interval());
        this.#logger.warn(
          { err: describeError(err), failures, delayMs: delay, leaseRenewed: vouched },
          registered ? 'heartbeat failed' : 'registration failed',
        );
      }
      try {
        await this.#clock.sleep(delay, AbortSignal.any([signal, this.#wake.signal]));
      } catch {
        // Woken early: a fingerprint push, or stop.
      }
    }
  }
}
