// What a server is built from and what it hands back: its options (the store,
// the API listener, the cluster's election, volume health), its state and the
// address it listens on. Apart from server.ts, which builds and runs the
// services from them: the agent and the tests read this shape alone.

import type { FastifyInstance } from 'fastify';
import type { Clock, LifecycleState, Logger } from '../lib/index.js';
import type { AgentInfo, ApiToken } from './http/index.js';
import type { EtcdStateStoreOptions, StateStore } from './state/index.js';

export interface ServerOptions {
  /** Directory for the state file (`state.db`); created when missing. One of this, `etcd` or `store`. */
  dataDir?: string;
  /** Keep the state in etcd (several servers share it) instead of a file in `dataDir`. */
  etcd?: Omit<EtcdStateStoreOptions, 'logger'>;
  /** A store to use instead of opening one (the server then does not close it). */
  store?: StateStore;
  clock?: Clock;
  logger?: Logger;
  /** Accepted bearer tokens with their roles. At least one is required. */
  tokens: readonly ApiToken[];
  /** Default 127.0.0.1. */
  bindAddress?: string;
  /** Default 0: an ephemeral port (see the address start() returns). */
  port?: number;
  /**
   * HTTP front workers (worker threads) accepting on the API's address
   * beside the main thread: they serve job registrations up to the store
   * write and relay every other request to the main thread's API
   * (src/server/http/api-workers). Default 0: the main thread alone.
   */
  apiWorkers?: number;
  /**
   * Reader threads (src/server/http/api-workers/readers.ts) that read a
   * burst's job registrations for the main thread, which keeps every
   * connection. Started `apiReadersAfterMs` (default 1 s) after the API
   * listens, off the agent's start; none beside front workers (those read
   * their own). Default 0.
   */
  apiReaders?: number;
  apiReadersAfterMs?: number;
  /** A node silent for this long is marked down. Default 30 s. */
  heartbeatTtlMs?: number;
  /** Time a heartbeat may come late past the TTL before its node is marked down (Nomad's heartbeat_grace). Default 10 s. */
  heartbeatGraceMs?: number;
  /** The heartbeat rate the leader aims at over all nodes (their TTL grows with their number). Default 100. */
  maxHeartbeatsPerSecond?: number;
  /** Deadline of one server-to-node call (controller publish, node detach...). Default 60 s. */
  nodeCallTimeoutMs?: number;
  /** Idle event streams send a `{}` line this often. Default 10 s. */
  eventHeartbeatMs?: number;
  /** The `iss` of workload identities and the issuer of /.well-known/openid-configuration (Nomad's oidc_issuer); without it that endpoint answers 404. */
  oidcIssuer?: string;
  /**
   * More routes served by the API listener (an agent running server and
   * client in one process serves the client's /v1/client/... there). Each
   * route declares `config: { access }` ('read' | 'write' | 'node' |
   * 'node-read'), checked against `tokens` like the API's own routes, or
   * 'public' for files that need no token (the web UI's).
   */
  routes?: (app: FastifyInstance) => void | Promise<void>;
  /** The agent's own client, when `routes` serve its /v1/client/... (see ApiDeps.localClient). */
  localClient?: { nodeId(): string | undefined };
  /**
   * How this server takes part in the election of a cluster's leader. A
   * server on etcd (`etcd`) always elects, with these settings or the
   * defaults; one on SQLite leads alone. Only the leader runs the
   * evaluation worker, the claim watcher, node TTLs and controller calls,
   * and holds the node connections; followers serve reads and forward
   * writes to it.
   */
  cluster?: ServerClusterOptions;
  /** Volume health and drift (src/server/volumehealth). */
  volumeHealth?: ServerVolumeHealthOptions;
  /** What /v1/agent/self and /v1/agent/health say of the agent running this server (its version, datacenter, client). */
  agent?: AgentInfo;
}

export interface ServerVolumeHealthOptions {
  /** How often the leader asks controllers (GET_VOLUME + VOLUME_CONDITION) about unpublished volumes. Default 60 s. */
  controllerIntervalMs?: number;
  /** How often the leader compares the books (volume doctor, reporting only). Default 5 min. */
  driftIntervalMs?: number;
  /** Usage samples kept per volume. Default 60. */
  usageHistory?: number;
}

export interface ServerClusterOptions {
  /** etcd client URLs of the election. Default: `etcd.endpoints`. */
  endpoints?: readonly string[];
  /** This server's ID in `berth server members`. Default: a random UUID per start. */
  serverId?: string;
  /** The URL other servers and clients reach this one at. Default: the listening address. */
  advertiseAddress?: string;
  /** How long a dead leader keeps the cluster leaderless, in seconds. Default 3. */
  leaseTtlSeconds?: number;
}

export type ServerState = LifecycleState;

export interface ServerAddress {
  host: string;
  port: number;
  /** `http://host:port`. */
  url: string;
}
