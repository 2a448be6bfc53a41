// What the API's route modules share: the services they call (ApiDeps), the
// context buildApi hands each of them, and small request helpers. Kept apart
// from api.ts so the route modules and the builder do not import each other.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock, Logger } from '../../lib/index.js';
import type { DeploymentService } from '../deployments/index.js';
import type { GarbageCollector, JobService } from '../jobs/index.js';
import type { Leadership } from '../leader/index.js';
import type { ServerMetrics } from '../metrics/index.js';
import type { NodeConnections } from '../noderpc/index.js';
import type { NamespaceService } from '../namespaces/index.js';
import type { NodeService } from '../nodes/index.js';
import type { StateStore } from '../state/index.js';
import type { VolumeService } from '../volumes/index.js';
import type { HostVolumeService } from '../hostvolumes/index.js';
import type { WorkloadIdentities } from '../identity/index.js';
import type { VolumeDoctor, VolumeHealthService } from '../volumehealth/index.js';
import { ApiError } from './api-error.js';
import type { ApiToken } from './auth.js';
import type { RequestsInFlight } from './requests-in-flight.js';
import type { JobSpec } from '../../structs/index.js';

/** Reads a registration's body off the main thread (api-workers/readers.ts): see ApiReaders.read. */
export interface RegistrationReader {
  read(body: string, url: string, jobId: string | undefined): Promise<{ spec: JobSpec; checkIndex?: number } | undefined> | undefined;
}

export interface ApiDeps {
  store: StateStore;
  jobs: JobService;
  /** Counts the write requests being served (the scheduler waits until none is) when given. */
  inFlight?: RequestsInFlight;
  /** The readers main's registration fast path hands a burst's bodies to (api-workers/readers.ts's ApiReaders), once started; read at every registration. */
  readers?: () => RegistrationReader | undefined;
  /** Serves deployment promote/fail/pause and job revert/scale when given. */
  deployments?: DeploymentService;
  /** Serves PUT /v1/system/gc when given. */
  gc?: GarbageCollector;
  nodes: NodeService;
  /** Serves the namespace writes; without it the routes make their own on `store`. */
  namespaces?: NamespaceService;
  volumes: VolumeService;
  /** Dynamic host volumes: serves /v1/volume/host/* and GET /v1/volumes?type=host when given. */
  hostVolumes?: HostVolumeService;
  /** Volume usage and conditions: serves the node's stats reports and adds `usage`/`condition` to volume reads when given. */
  health?: VolumeHealthService;
  /** Serves /v1/volumes/doctor when given. */
  doctor?: VolumeDoctor;
  connections: NodeConnections;
  /** Workload identities: serves /.well-known/jwks.json, /.well-known/openid-configuration and the node's signing requests when given. */
  identities?: WorkloadIdentities;
  tokens: readonly ApiToken[];
  logger: Logger;
  /** The server's clock (drain deadlines); default the system clock. */
  clock?: Clock;
  /** Served at GET /v1/metrics (read access: JSON, or the Prometheus text with `?format=prometheus`) when given. */
  metrics?: ServerMetrics;
  /** Largest accepted request body. Default 4 MiB. */
  bodyLimit?: number;
  /** How often the event stream sends a `{}` heartbeat line when idle. Default 10 s. */
  eventHeartbeatMs?: number;
  /**
   * Who leads (read at every request; undefined before the election). On a
   * follower, writes are forwarded to the leader and node connections are
   * refused with the leader's address. Without it the server always leads.
   */
  leadership?: () => Leadership | undefined;
  /** What /v1/agent/self and /v1/agent/health tell of the agent running this server; without it, a bare server's defaults. */
  agent?: AgentInfo;
  /**
   * The agent's own client when it serves /v1/client/... itself (a dev
   * agent): its node's allocations are answered there, the others' forwarded.
   * Without it the server forwards every allocation's client routes to its node.
   */
  localClient?: { nodeId(): string | undefined };
  /** More routes on the same listener (the dev agent's /v1/client/...); each must declare `config.access`. */
  extraRoutes?: (app: FastifyInstance) => void | Promise<void>;
}

/**
 * The agent that runs the server, as Nomad's agent endpoints describe it.
 * The agent layer fills it in (it knows its config and its client); every
 * field has a default for a server run alone (tests).
 */
export interface AgentInfo {
  /** Berth's release (package.json's version). Default `unknown`. */
  version?: string;
  /** The datacenter the agent names (its client's). Default `dc1`. */
  datacenter?: string;
  /** The agent's name. Default the host name. */
  nodeName?: string;
  /** The agent's data dir. Default ''. */
  dataDir?: string;
  /** Whether it is a dev agent (server and client in one process, throwaway state). */
  devMode?: boolean;
  /**
   * The agent's own client (a dev agent's), read at every request:
   * Nomad's `client` stats (`node_id`, `known_servers`, `num_allocations`)
   * and its health. Undefined when the agent runs no client.
   */
  client?: () => { stats: Record<string, string>; ok: boolean; message: string } | undefined;
}

/** What each route module gets. */
export interface RouteContext {
  deps: ApiDeps;
  /** An AbortSignal that fires when the client goes away (for blocking reads). */
  signalOf(req: FastifyRequest, reply: FastifyReply): AbortSignal;
}

/** Reads a namespace query parameter: `default` when absent, `*` for all. */
export function namespaceOf(query: Record<string, unknown>): string {
  const ns = query['namespace'];
  return typeof ns === 'string' && ns !== '' ? ns : 'default';
}

/** Checks that a body is a JSON object. Throws ApiError INVALID otherwise. */
export function objectBody(body: unknown, what = 'request body'): Record<string, unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new ApiError('INVALID', `${what} must be a JSON object`);
  return body as Record<string, unknown>;
}
