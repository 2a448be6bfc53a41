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
import { withNodeEvent, type CsiPluginReport, type Node, type NodeFingerprint } from '../../structs/index.js';
import { updatePluginsForNode } from '../plugins/index.js';
import { rowKey, StateStoreError, type RowInput, type StateStore, type WriteTxn } from '../state/index.js';
import { portFingerprint } from './_port-fingerprint.js';
import { NodeError } from './errors.js';

export interface NodeServiceOptions {
  store: StateStore;
  clock?: Clock;
  logger?: Logger;
  /**
   * A node that has not heartbeated for this long is marked down. Default
   * 30 s. The least TTL: in a large cluster nodes are given a longer one
   * (see `maxHeartbeatsPerSecond`).
   */
  heartbeatTtlMs?: number;
  /**
   * The heartbeat rate the leader aims at, over all nodes. Nodes heartbeat
   * every third of their TTL, so the TTL given grows with the node count:
   * max(heartbeatTtlMs, 3 x nodes / rate). Default 100 (30 s at 1,000 nodes).
   */
  maxHeartbeatsPerSecond?: number;
  /**
   * Time a node's heartbeat may come late past its TTL before the node is
   * marked down (Nomad's heartbeat_grace): the TTL told the node is the
   * interval it keeps, the grace absorbs a slow network, a busy leader, a
   * heartbeat retried through another server. Default 10 s, as Nomad's.
   */
  heartbeatGraceMs?: number;
  /**
   * The deadline every node gets when this service starts (a new leader, a
   * restarted server): time for a whole cluster to find the new leader.
   * Default twice the TTL then given, plus the grace.
   */
  failoverTtlMs?: number;
}

export type NodeServiceState = LifecycleState;

const DEFAULT_TTL_MS = 30_000;
const DEFAULT_MAX_HEARTBEATS_PER_SECOND = 100;
const DEFAULT_HEARTBEAT_GRACE_MS = 10_000;

/**
 * The heartbeat TTL for `nodes` nodes: at least `minTtlMs`, and long enough
 * that the nodes, each heartbeating every third of it, send no more than
 * `maxPerSecond` heartbeats a second in all (Nomad scales its TTL the same
 * way). Pure.
 */
export function scaledHeartbeatTtl(minTtlMs: number, maxPerSecond: number, nodes: number): number {
  if (!(maxPerSecond > 0)) return minTtlMs;
  return Math.max(minTtlMs, Math.ceil((3 * nodes * 1000) / maxPerSecond));
}

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
    cl: fp.nodeClass,
    m: fp.meta,
    c: strip(fp.csiControllerPlugins),
    n: strip(fp.csiNodePlugins),
    s: fp.stopAfterDisconnectMs,
    k: fp.killTimeoutMs,
    p: portFingerprint(fp),
    hv: fp.hostVolumes,
  });
}

/** Keeps only string values (a node's meta as it reported it). */
function stringRecord(v: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

function fingerprintOf(fp: NodeFingerprint): NodeFingerprint {
  return {
    name: fp.name,
    datacenter: fp.datacenter,
    httpAddr: fp.httpAddr,
    drivers: fp.drivers,
    resources: fp.resources,
    attributes: fp.attributes,
    ...(typeof fp.nodeClass === 'string' && fp.nodeClass ? { nodeClass: fp.nodeClass } : {}),
    ...(fp.meta && typeof fp.meta === 'object' ? { meta: stringRecord(fp.meta) } : {}),
    csiControllerPlugins: fp.csiControllerPlugins,
    csiNodePlugins: fp.csiNodePlugins,
    ...(typeof fp.stopAfterDisconnectMs === 'number' && fp.stopAfterDisconnectMs >= 0 ? { stopAfterDisconnectMs: fp.stopAfterDisconnectMs } : {}),
    ...(typeof fp.killTimeoutMs === 'number' && fp.killTimeoutMs >= 0 ? { killTimeoutMs: fp.killTimeoutMs } : {}),
    ...(fp.hostVolumes && typeof fp.hostVolumes === 'object' ? { hostVolumes: hostVolumesOf(fp.hostVolumes) } : {}),
    ...portFingerprint(fp),
  };
}

/** The node's host volumes, each with the fields a host volume has (static ones with id ''). */
function hostVolumesOf(v: Record<string, unknown>): NonNullable<NodeFingerprint['hostVolumes']> {
  const out: NonNullable<NodeFingerprint['hostVolumes']> = {};
  for (const [name, raw] of Object.entries(v)) {
    const hv = raw as Record<string, unknown> | null;
    if (!hv || typeof hv.path !== 'string') continue;
    out[name] = { path: hv.path, readOnly: hv.readOnly === true, id: typeof hv.id === 'string' ? hv.id : '' };
  }
  return out;
}

/**
 * Node registration, heartbeats and the TTL watcher that marks silent nodes
 * down. Heartbeats are kept in memory and written only when something
 * changes (status or fingerprint), so a steady cluster does not churn the
 * store; `get`/`list` show the latest heartbeat time. Every node write
 * recomputes the plugins in the same transaction.
 *
 * Lifecycle: start() returns once the watcher runs (every node not down gets
 * a fresh TTL, since heartbeats before a server restart are not known; so
 * does every node when the watcher finds the server itself stalled, woken
 * more than half a TTL later than it asked);
 * a second start is a no-op, a start after stop rejects (LIFECYCLE_STOPPED).
 * stop() is safe twice and waits for the watcher.
 */
export class NodeService {
  readonly #store: StateStore;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #ttl: number;
  readonly #maxRate: number;
  readonly #grace: number;
  readonly #failoverTtl: number | undefined;
  /** When each node (not down) last heartbeated, as this server saw it. */
  readonly #lastSeen = new Map<string, number>();
  /** When each node (not down) is to be marked down unless it heartbeats. */
  readonly #deadline = new Map<string, number>();
  readonly #life: Lifecycle;

  constructor(opts: NodeServiceOptions) {
    this.#store = opts.store;
    this.#clock = opts.clock ?? systemClock;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'nodes' });
    this.#ttl = opts.heartbeatTtlMs ?? DEFAULT_TTL_MS;
    this.#maxRate = opts.maxHeartbeatsPerSecond ?? DEFAULT_MAX_HEARTBEATS_PER_SECOND;
    this.#grace = opts.heartbeatGraceMs ?? DEFAULT_HEARTBEAT_GRACE_MS;
    this.#failoverTtl = opts.failoverTtlMs;
    this.#life = new Lifecycle({ logger: this.#logger });
  }

  get state(): NodeServiceState {
    return this.#life.state;
  }

  /** The TTL given to a node now: the configured one, or longer in a large cluster. Cheap. */
  get heartbeatTtlMs(): number {
    return scaledHeartbeatTtl(this.#ttl, this.#maxRate, Math.max(this.#lastSeen.size, this.#deadline.size));
  }

  /** Records that `nodeId` was heard from at `now`: its TTL (and the grace after it) starts again. */
  #seen(nodeId: string, now: number): void {
    this.#lastSeen.set(nodeId, now);
    this.#deadline.set(nodeId, now + this.heartbeatTtlMs + this.#grace);
  }

  /**
   * Registers a node (or re-registers it after an agent restart): stores the
   * fingerprint, marks it ready, clears any volume exhaustion recorded for it.
   * Without `id` a new ID is made. Safe to repeat. The node's TTL starts when
   * the write is committed, as Nomad's Node.Register resets the heartbeat
   * timer after its Raft apply: the node starts its heartbeat clock when it
   * gets the answer, so time spent queued behind other writes (a registration
   * storm's group commits) must not count against it. A registration the
   * store refuses leaves no deadline behind.
   */
  async register(fingerprint: NodeFingerprint, opts: { id?: string } = {}): Promise<Node> {
    this.#check(fingerprint);
    const id = opts.id ?? randomUUID();
    const now = this.#clock.now();
    // A node this server already watches (an agent restarting) is alive: its old deadline must not pass while this write waits.
    if (this.#deadline.has(id)) this.#seen(id, now);
    const { result } = await this.#store.write((txn) => {
      // An agent restart keeps what the operator set: eligibility and a drain in progress.
      const prev = txn.get('nodes', rowKey(id));
      const registered: RowInput<'nodes'> = {
        id,
        ...fingerprintOf(fingerprint),
        ...(prev?.schedulingEligibility ? { schedulingEligibility: prev.schedulingEligibility } : {}),
        ...(prev?.drainStrategy ? { drainStrategy: prev.drainStrategy } : {}),
        ...(prev?.lastDrain ? { lastDrain: prev.lastDrain } : {}),
        ...(prev?.events ? { events: prev.events } : {}),
        status: 'ready',
        statusDescription: 'registered',
        statusUpdatedAt: prev?.status === 'ready' ? (prev.statusUpdatedAt ?? now) : now,
        lastHeartbeat: now,
        registerIndex: txn.writeIndex,
      };
      const event = { at: now, subsystem: 'Cluster', message: prev ? 'Node re-registered' : 'Node registered' };
      const node = txn.put('nodes', withNodeEvent(registered, event, txn.writeIndex));
      updatePluginsForNode(txn, prev, node, { clearExhausted: true });
      return node;
    });
    this.#seen(id, this.#clock.now());
    this.#logger.info({ nodeId: id, name: fingerprint.name }, 'node registered');
    return result;
  }

  /**
   * Records a heartbeat, with the node's current fingerprint when it sends
   * one. A down node comes back ready. Writes only when something changed.
   * Throws NodeError NOT_FOUND for an unregistered node (the agent must
   * register again).
   */
  async heartbeat(nodeId: string, fingerprint?: NodeFingerprint): Promise<Node> {
    if (fingerprint) this.#check(fingerprint);
    const now = this.#clock.now();
    // Seen, even if the write below fails (a store without quorum): the node is alive, and
    // once the store is back it must not be marked down for a silence it did not keep.
    const known = this.#store.snapshot().get('nodes', rowKey(nodeId));
    if (known) this.#seen(nodeId, now);
    // Nothing to write: answered without waiting behind the store's queue of writes.
    if (known?.status === 'ready' && (fingerprint === undefined || fingerprintKey(fingerprint) === fingerprintKey(known))) return { ...known, lastHeartbeat: now };
    const { result } = await this.#store.write((txn) => {
      const node = txn.get('nodes', rowKey(nodeId));
      if (!node) throw new NodeError('NOT_FOUND', `node ${nodeId} is not registered`);
      this.#seen(nodeId, now);
      const changed = fingerprint !== undefined && fingerprintKey(fingerprint) !== fingerprintKey(node);
      if (node.status === 'ready' && !changed) return node;
      const revived = node.status !== 'ready';
      const updated: Node = {
        ...node,
        ...(fingerprint ? fingerprintOf(fingerprint) : {}),
        status: 'ready',
        statusDescription: revived ? 'heartbeat received' : node.statusDescription,
        ...(revived ? { statusUpdatedAt: now } : {}),
        lastHeartbeat: now,
      };
      const next = txn.put('nodes', revived ? withNodeEvent(updated, { at: now, subsystem: 'Cluster', message: 'Node reregistered by heartbeat' }, txn.writeIndex) : updated);
      updatePluginsForNode(txn, node, next);
      return next;
    });
    if (result.status === 'ready' && result.lastHeartbeat !== now) return { ...result, lastHeartbeat: now };
    return result;
  }

  /** Marks a node down (the TTL watcher does this; operators may too). Safe to repeat. */
  async markDown(nodeId: string, reason: string): Promise<void> {
    await this.#store.write((txn) => this.#markDown(txn, nodeId, reason));
  }

  #markDown(txn: WriteTxn, nodeId: string, reason: string): void {
    const node = txn.get('nodes', rowKey(nodeId));
    if (!node || node.status === 'down') return;
    const now = this.#clock.now();
    const down: Node = { ...node, status: 'down', statusDescription: reason, statusUpdatedAt: now, lastHeartbeat: this.#lastSeen.get(nodeId) ?? node.lastHeartbeat };
    const written = txn.put('nodes', withNodeEvent(down, { at: now, subsystem: 'Cluster', message: 'Node heartbeat missed', details: { reason } }, txn.writeIndex));
    updatePluginsForNode(txn, node, written);
    this.#lastSeen.delete(nodeId);
    this.#deadline.delete(nodeId);
    this.#logger.warn({ nodeId, reason }, 'node down');
  }

  /**
   * Removes a node from the cluster's state (Nomad's node purge): its row
   * goes, and with it the node's place in the plugin counts and its dynamic
   * host volumes (their data stays on the machine); the evaluation
   * worker finds its allocations lost. A node agent still running
   * registers again at its next heartbeat. Resolves with the node as it was
   * and the index of the write. Throws NodeError NOT_FOUND for an unknown
   * node; not safe to repeat for that reason.
   */
  async purge(nodeId: string): Promise<{ node: Node; index: number }> {
    const { index, result } = await this.#store.write((txn) => {
      const node = txn.get('nodes', rowKey(nodeId));
      if (!node) throw new NodeError('NOT_FOUND', `node "${nodeId}" not found`);
      txn.delete('nodes', rowKey(nodeId));
      updatePluginsForNode(txn, node, undefined);
      // Its dynamic host volumes go with it, and their sticky claims (Nomad's deleteHostVolumesOnNode).
      for (const v of txn.list('hostVolumes', { filter: (v) => v.nodeId === nodeId })) {
        txn.delete('hostVolumes', rowKey(v.namespace, v.id));
        for (const c of txn.list('hostVolumeClaims', { filter: (c) => c.volumeId === v.id })) txn.delete('hostVolumeClaims', rowKey(c.namespace, c.jobId, c.taskGroup, c.volumeId));
      }
      return node;
    }, { freesSpace: true });
    this.#lastSeen.delete(nodeId);
    this.#deadline.delete(nodeId);
    this.#logger.info({ nodeId, name: result.name }, 'node purged');
    return { node: result, index };
  }

  /**
   * When this server last heard from the node (ms since the epoch), or
   * undefined when it has not since it started: heartbeats that change
   * nothing are not written, so the stored node's lastHeartbeat lags.
   */
  lastHeartbeat(nodeId: string): number | undefined {
    return this.#lastSeen.get(nodeId);
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

  /**
   * Marks down every node whose TTL has passed; returns their IDs. Reads only
   * the overdue nodes (none: no write at all), so a check costs a pass over
   * the deadlines, not a sorted list of every node inside a write; a deadline
   * whose node the store does not hold (or holds down) is dropped.
   */
  async expire(): Promise<string[]> {
    const now = this.#clock.now();
    const overdue: string[] = [];
    for (const [id, deadline] of this.#deadline) if (now > deadline) overdue.push(id);
    if (overdue.length === 0) return [];
    const { result } = await this.#store.write((txn) => {
      const expired: string[] = [];
      for (const id of overdue) {
        const node = txn.get('nodes', rowKey(id));
        if (!node || node.status === 'down') {
          this.#forget(id);
          continue;
        }
        // A heartbeat may have come in meanwhile.
        if (!(now > (this.#deadline.get(id) ?? Infinity))) continue;
        const seen = this.#lastSeen.get(id) ?? node.lastHeartbeat;
        this.#markDown(txn, id, `missed heartbeats for ${Math.round((now - seen) / 1000)} s`);
        expired.push(id);
      }
      return expired;
    });
    return result;
  }

  /** Drops what this server knows of a node's heartbeats (a node that is not, or no longer, registered). */
  #forget(nodeId: string): void {
    this.#lastSeen.delete(nodeId);
    this.#deadline.delete(nodeId);
  }

  start(): Promise<void> {
    return this.#life.start((signal) => this.#start(signal));
  }

  #start(signal: AbortSignal): void {
    const now = this.#clock.now();
    const live = this.#store.snapshot().list('nodes', { filter: (n) => n.status !== 'down' });
    for (const node of live) if (!this.#lastSeen.has(node.id)) this.#lastSeen.set(node.id, node.lastHeartbeat);
    // Heartbeats sent to the previous leader are not known here, and the whole cluster is finding
    // this server now: every node gets the failover TTL, at least twice the TTL it was given.
    const failoverTtl = this.#failoverTtl ?? 2 * scaledHeartbeatTtl(this.#ttl, this.#maxRate, live.length) + this.#grace;
    for (const node of live) if (!this.#deadline.has(node.id)) this.#deadline.set(node.id, now + failoverTtl);
    void this.#life.track((async () => {
      while (!signal.aborted) {
        let next = this.#ttl;
        const t = this.#clock.now();
        for (const deadline of this.#deadline.values()) next = Math.min(next, deadline - t + 1);
        try {
          const asked = Math.max(1, next);
          await this.#clock.sleep(asked, signal);
          // Woken far later than asked: this server itself stalled (paused, starved), so the
          // nodes' silence is ours. Every node gets a fresh deadline instead of being marked down.
          const late = this.#clock.now() - t - asked;
          if (late > this.heartbeatTtlMs / 2) {
            this.#refreshDeadlines(`the server stalled for ${Math.round(late / 1000)} s`);
            continue;
          }
          await this.expire();
        } catch (err) {
          if (err instanceof AbortedError || (err instanceof StateStoreError && err.code === 'STORE_CLOSED')) return;
          this.#logger.error({ err: describeError(err) }, 'heartbeat check failed');
        }
      }
    })());
  }

  /** Gives every node not down a fresh TTL from now (the server cannot know what it missed). */
  #refreshDeadlines(why: string): void {
    const now = this.#clock.now();
    const ids = this.#store.snapshot().list('nodes', { filter: (n) => n.status !== 'down' }).map((n) => n.id);
    const ttl = this.heartbeatTtlMs + this.#grace;
    for (const id of ids) this.#deadline.set(id, now + ttl);
    this.#logger.warn({ nodes: ids.length, reason: why }, 'fresh heartbeat deadline for every node');
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
