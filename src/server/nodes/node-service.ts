import { randomUUID } from 'node:crypto';
import {
  AbortedError,
  describeError,
  Lifecycle,
  silentLogger,
  systemClock,
  type Clock,
  type LifecycleState,
  type Logger,
} from '../../lib/index.js';
import type { CsiPluginReport, Node, NodeFingerprint } from '../../structs/index.js';
import { updatePlugins } from '../plugins/index.js';
import { rowKey, StateStoreError, type StateStore, type WriteTxn } from '../state/index.js';
import { NodeError } from './errors.js';

export interface NodeServiceOptions {
  store: StateStore;
  clock?: Clock;
  logger?: Logger;
  /** A node that has not heartbeated for this long is marked down. Default 30 s. */
  heartbeatTtlMs?: number;
}

export type NodeServiceState = LifecycleState;

const DEFAULT_TTL_MS = 30_000;

/** The fingerprint without the observation times that change on every heartbeat. */
function fingerprintKey(fp: NodeFingerprint): string {
  const strip = (reports: Record<string, CsiPluginReport>): Record<string, Omit<CsiPluginReport, 'updatedAt'>> =>
    Object.fromEntries(Object.entries(reports).map(([k, { updatedAt: _u, ...r }]) => [k, r]));
  return JSON.stringify({
    name: fp.name,
    datacenter: fp.datacenter,
    httpAddr: fp.httpAddr,
    drivers: fp.drivers,
    resources: fp.resources,
    attributes: fp.attributes,
    c: strip(fp.csiControllerPlugins),
    n: strip(fp.csiNodePlugins),
    f: fp.stopAfterDisconnectMs,
  });
}

function fingerprintOf(fp: NodeFingerprint): NodeFingerprint {
  return {
    name: fp.name,
    datacenter: fp.datacenter,
    httpAddr: fp.httpAddr,
    drivers: fp.drivers,
    resources: fp.resources,
    attributes: fp.attributes,
    csiControllerPlugins: fp.csiControllerPlugins,
    csiNodePlugins: fp.csiNodePlugins,
    ...(typeof fp.stopAfterDisconnectMs === 'number' && fp.stopAfterDisconnectMs > 0 ? { stopAfterDisconnectMs: fp.stopAfterDisconnectMs } : {}),
  };
}

/**
 * Node registration, heartbeats and the TTL watcher that marks silent nodes
 * down. Heartbeats are kept in memory and written only when something
 * changes (status or fingerprint), so a steady cluster does not churn the
 * store; `get`/`list` show the latest heartbeat time. Every node write
 * recomputes the plugins in the same transaction.
 *
 * Lifecycle: start() returns once the watcher runs (every node not down gets
 * a fresh TTL, since heartbeats before a server restart are not known);
 * a second start is a no-op, a start after stop rejects (LIFECYCLE_STOPPED).
 * stop() is safe twice and waits for the watcher.
 */
export class NodeService {
  readonly #store: StateStore;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #ttl: number;
  readonly #lastSeen = new Map<string, number>();
  readonly #life: Lifecycle;

  constructor(opts: NodeServiceOptions) {
    this.#store = opts.store;
    this.#clock = opts.clock ?? systemClock;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'nodes' });
    this.#ttl = opts.heartbeatTtlMs ?? DEFAULT_TTL_MS;
    this.#life = new Lifecycle({ logger: this.#logger });
  }

  get state(): NodeServiceState {
    return this.#life.state;
  }

  get heartbeatTtlMs(): number {
    return this.#ttl;
  }

  /**
   * Registers a node (or re-registers it after an agent restart): stores the
   * fingerprint, marks it ready, clears any volume exhaustion recorded for it.
   * Without `id` a new ID is made. Synchronous; safe to repeat.
   */
  register(fingerprint: NodeFingerprint, opts: { id?: string } = {}): Node {
    this.#check(fingerprint);
    const id = opts.id ?? randomUUID();
    const now = this.#clock.now();
    this.#lastSeen.set(id, now);
    const { result } = this.#store.write((txn) => {
      const node = txn.put('nodes', {
        id,
        ...fingerprintOf(fingerprint),
        status: 'ready',
        statusDescription: 'registered',
        lastHeartbeat: now,
      });
      updatePlugins(txn, { clearExhausted: [id] });
      return node;
    });
    this.#logger.info({ nodeId: id, name: fingerprint.name }, 'node registered');
    return result;
  }

  /**
   * Records a heartbeat, with the node's current fingerprint when it sends
   * one. A down node comes back ready. Writes only when something changed.
   * Throws NodeError NOT_FOUND for an unregistered node (the agent must
   * register again).
   */
  heartbeat(nodeId: string, fingerprint?: NodeFingerprint): Node {
    if (fingerprint) this.#check(fingerprint);
    const now = this.#clock.now();
    const { result } = this.#store.write((txn) => {
      const node = txn.get('nodes', rowKey(nodeId));
      if (!node) throw new NodeError('NOT_FOUND', `node ${nodeId} is not registered`);
      this.#lastSeen.set(nodeId, now);
      const changed = fingerprint !== undefined && fingerprintKey(fingerprint) !== fingerprintKey(node);
      if (node.status === 'ready' && !changed) return node;
      const next = txn.put('nodes', {
        ...node,
        ...(fingerprint ? fingerprintOf(fingerprint) : {}),
        status: 'ready',
        statusDescription: node.status === 'ready' ? node.statusDescription : 'heartbeat received',
        lastHeartbeat: now,
      });
      updatePlugins(txn);
      return next;
    });
    if (result.status === 'ready' && result.lastHeartbeat !== now) return { ...result, lastHeartbeat: now };
    return result;
  }

  /** Marks a node down (the TTL watcher does this; operators may too). Synchronous; safe to repeat. */
  markDown(nodeId: string, reason: string): void {
    this.#store.write((txn) => this.#markDown(txn, nodeId, reason));
  }

  #markDown(txn: WriteTxn, nodeId: string, reason: string): void {
    const node = txn.get('nodes', rowKey(nodeId));
    if (!node || node.status === 'down') return;
    txn.put('nodes', { ...node, status: 'down', statusDescription: reason, lastHeartbeat: this.#lastSeen.get(nodeId) ?? node.lastHeartbeat });
    updatePlugins(txn);
    this.#lastSeen.delete(nodeId);
    this.#logger.warn({ nodeId, reason }, 'node down');
  }

  get(nodeId: string): Node | undefined {
    const node = this.#store.snapshot().get('nodes', rowKey(nodeId));
    return node && this.#withHeartbeat(node);
  }

  list(): Node[] {
    return this.#store.snapshot().list('nodes').map((n) => this.#withHeartbeat(n));
  }

  #withHeartbeat(node: Node): Node {
    const seen = this.#lastSeen.get(node.id);
    return seen !== undefined && seen !== node.lastHeartbeat ? { ...node, lastHeartbeat: seen } : node;
  }

  /** Marks down every node whose TTL has passed; returns their IDs. Synchronous. */
  expire(): string[] {
    const now = this.#clock.now();
    const expired: string[] = [];
    this.#store.write((txn) => {
      for (const node of txn.list('nodes', { filter: (n) => n.status !== 'down' })) {
        const seen = this.#lastSeen.get(node.id);
        if (seen === undefined) {
          this.#lastSeen.set(node.id, now);
          continue;
        }
        if (now - seen > this.#ttl) {
          this.#markDown(txn, node.id, `missed heartbeats for ${Math.round((now - seen) / 1000)} s`);
          expired.push(node.id);
        }
      }
    });
    return expired;
  }

  start(): Promise<void> {
    return this.#life.start((signal) => this.#start(signal));
  }

  #start(signal: AbortSignal): void {
    const now = this.#clock.now();
    for (const node of this.#store.snapshot().list('nodes', { filter: (n) => n.status !== 'down' })) {
      if (!this.#lastSeen.has(node.id)) this.#lastSeen.set(node.id, now);
    }
    void this.#life.track((async () => {
      while (!signal.aborted) {
        let next = this.#ttl;
        const t = this.#clock.now();
        for (const seen of this.#lastSeen.values()) next = Math.min(next, seen + this.#ttl - t + 1);
        try {
          await this.#clock.sleep(Math.max(1, next), signal);
          this.expire();
        } catch (err) {
          if (err instanceof AbortedError || (err instanceof StateStoreError && err.code === 'STORE_CLOSED')) return;
          this.#logger.error({ err: describeError(err) }, 'heartbeat check failed');
        }
      }
    })());
  }

  /** Ends the TTL watcher and waits for it. Safe twice; never rejects. */
  stop(): Promise<void> {
    return this.#life.stop();
  }

  #check(fp: NodeFingerprint): void {
    if (!fp || typeof fp.name !== 'string' || !fp.name) throw new NodeError('INVALID', 'a node fingerprint needs a name');
    for (const [field, reports] of [
      ['csiControllerPlugins', fp.csiControllerPlugins],
      ['csiNodePlugins', fp.csiNodePlugins],
    ] as const) {
      if (!reports || typeof reports !== 'object') throw new NodeError('INVALID', `fingerprint.${field} must be an object`);
      for (const [id, r] of Object.entries(reports)) {
        if (r.pluginId !== id) throw new NodeError('INVALID', `fingerprint.${field}.${id}: pluginId "${r.pluginId}" does not match its key`);
      }
    }
  }
}
