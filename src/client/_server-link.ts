// The node's link to the servers (Nomad's client registerAndHeartbeat, its
// RPC and watchAllocations): the NodeRegistration that registers the node,
// heartbeats and pushes fingerprints; the NodeConnection that answers the
// servers' calls; the AllocWatcher on the node's allocation list; and the
// node's own record in the client state (its ID, the index of the last
// allocation list acted on). Private to src/client (Client composes it).

import { randomUUID } from 'node:crypto';
import type { Clock, Logger } from '../lib/index.js';
import type { ClientOptions } from './_client-types.js';
import { heartbeatIntervalMs } from './_alloc-runner-options.js';
import { AllocWatcher, connectionLivenessMs, NodeConnection, NodeRegistration, type AllocUpdate, type NodeRpcHandler, type ServerApi } from './serverconn/index.js';
import type { ClientStateStore } from './state/index.js';

/** The node's own record in the client state. */
export interface NodeRecord {
  id: string;
  /** Index of the last allocation list acted on: a list older than this is stale. */
  allocIndex: number;
}

const AGENT_BUCKET = 'agent';

/** The node's record, made (a new node ID) and written on the first start. Throws when the client state cannot be written. */
export function loadNode(store: ClientStateStore): NodeRecord {
  const bucket = store.bucket<NodeRecord>(AGENT_BUCKET);
  const rec = bucket.get('node');
  if (rec) return rec;
  const fresh: NodeRecord = { id: randomUUID(), allocIndex: 0 };
  bucket.put('node', fresh);
  return fresh;
}

/** Records that the allocation list at `index` was acted on. Throws when the client state cannot be written. */
export function noteAllocIndex(store: ClientStateStore, node: NodeRecord, index: number): void {
  node.allocIndex = index;
  store.bucket<NodeRecord>(AGENT_BUCKET).put('node', node);
}

/** The three parts of the link, built and not started. */
export interface ServerLink {
  registration: NodeRegistration;
  connection: NodeConnection;
  watcher: AllocWatcher;
}

/** Builds the link (nothing is sent yet). */
export function serverLink(deps: {
  opts: ClientOptions;
  api: ServerApi;
  nodeId: string;
  /** The index of the last allocation list acted on (NodeRecord.allocIndex). */
  minIndex: number;
  fingerprint: ConstructorParameters<typeof NodeRegistration>[0]['fingerprint'];
  /** A server answered a heartbeat. Must not throw. */
  onContact: () => void;
  handler: NodeRpcHandler;
  /** A change of the server's list, one at a time. */
  onAllocations: (update: AllocUpdate, index: number) => Promise<void>;
  clock: Clock;
  logger: Logger;
}): ServerLink {
  const { opts, api, nodeId, clock, logger } = deps;
  const heartbeat = heartbeatIntervalMs(opts);
  const registration = new NodeRegistration({
    api,
    nodeId,
    fingerprint: deps.fingerprint,
    clock,
    logger,
    ...(heartbeat !== undefined ? { heartbeatIntervalMs: heartbeat } : {}),
    onContact: deps.onContact,
  });
  const connection = new NodeConnection({
    address: opts.servers,
    authHeader: api.authHeader(),
    nodeId: () => nodeId,
    handle: (req, o) => deps.handler.handle(req, o),
    // A silent leader is left well within the node's heartbeat TTL, so that controller calls move with it.
    livenessMs: () => connectionLivenessMs(registration.ttlMs),
    clock,
    logger,
  });
  const watcher = new AllocWatcher({
    api,
    nodeId,
    minIndex: deps.minIndex,
    onAllocations: (_allocs, index, update) => deps.onAllocations(update, index),
    clock,
    logger,
    ...(opts.allocWaitMs !== undefined ? { waitMs: opts.allocWaitMs } : {}),
  });
  return { registration, connection, watcher };
}

/**
 * Starts the registration at once, and the connection, the watch and then
 * `afterRegistered` once the node is registered (the server refuses unknown
 * nodes); nothing more once `signal` fired. Resolves when all started.
 */
export async function startServerLink(link: ServerLink, signal: AbortSignal, afterRegistered: () => Promise<void> | undefined): Promise<void> {
  link.registration.start();
  await link.registration.waitRegistered();
  if (signal.aborted) return;
  link.connection.start();
  link.watcher.start();
  await afterRegistered();
}
