// The server's composition root: builds every service from options, starts
// them in order, serves the HTTP API, and stops them in reverse. Its options,
// state and address are in server-options.ts.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import {
  BerthError,
  describeError,
  Lifecycle,
  silentLogger,
  systemClock,
  type Clock,
  type Logger,
} from '../lib/index.js';
import { ApiReaders, ApiWorkers, buildApi, RequestsInFlight, warmJobPath, type ApiDeps } from './http/index.js';
import { DeploymentService, DeploymentWatcher } from './deployments/index.js';
import { EvalWorker, GarbageCollector, JobService, PeriodicDispatcher } from './jobs/index.js';
import { NodeDrainer } from './drainer/index.js';
import { HostVolumeService } from './hostvolumes/index.js';
import { NamespaceService } from './namespaces/index.js';
import { WorkloadIdentities } from './identity/index.js';
import { createEtcdLeadership, SoloLeadership, type Fence, type Leadership } from './leader/index.js';
import { ServerMetrics } from './metrics/index.js';
import { NodeConnections } from './noderpc/index.js';
import { NodeService } from './nodes/index.js';
import { PluginService } from './plugins/index.js';
import { ServiceReaper } from './services/index.js';
import { openEtcdStateStore, SqliteStateStore, type StateStore } from './state/index.js';
import { ClaimWatcher, ControllerRouter, VolumeService } from './volumes/index.js';
import { ControllerConditions, DriftWatcher, VolumeDoctor, VolumeHealthService } from './volumehealth/index.js';
import { LeaderTerm } from './leader-term.js';
import type { ServerAddress, ServerOptions, ServerState } from './server-options.js';

export type { ServerAddress, ServerClusterOptions, ServerOptions, ServerState, ServerVolumeHealthOptions } from './server-options.js';

/**
 * SERVER_START: the server failed to start; SERVER_STATE: it was used in the
 * wrong state; SERVER_INVALID: its options are wrong.
 */
export type ServerErrorCode = 'SERVER_START' | 'SERVER_STATE' | 'SERVER_INVALID';

export class ServerError extends BerthError<ServerErrorCode> {}

/**
 * The Berth server. Lifecycle: `start()` opens the store (SQLite, or etcd
 * fenced on the leader's term), starts the HTTP listener, then joins the
 * election (a SQLite server leads alone) and resolves with the address. The
 * leader runs its term's loops: plugin derivation, the node TTL watcher
 * (fresh deadlines for every node), the claim watcher (which resumes
 * half-done releases) and the evaluation worker (which resumes pending and
 * blocked evaluations and delayed reschedules); a server that stops leading
 * stops them, drops its node connections and prepares the next term. A
 * failure part-way stops what started and rejects with ServerError
 * SERVER_START. `stop()` closes the listener (ending blocking reads and
 * event streams), leaves the election (stopping the loops), and closes the
 * store it opened; safe to call twice and before start. `start()` a second
 * time throws SERVER_STATE. The state is a lib Lifecycle's: new, starting,
 * running, stopping, stopped.
 */
export class Server {
  readonly #opts: ServerOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #life: Lifecycle;
  #store: StateStore | undefined;
  #ownsStore = false;
  #connections: NodeConnections | undefined;
  #volumes: VolumeService | undefined;
  #hostVolumes: HostVolumeService | undefined;
  #router: ControllerRouter | undefined;
  #health: VolumeHealthService | undefined;
  #doctor: VolumeDoctor | undefined;
  #jobs: JobService | undefined;
  #namespaces: NamespaceService | undefined;
  /** The loops of the current (or next) leader term; replaced after every term. */
  #term: LeaderTerm | undefined;
  #leadership: Leadership | undefined;
  /** Term changes run one after another. */
  #termChange: Promise<void> = Promise.resolve();
  #api: FastifyInstance | undefined;
  #apiWorkers: ApiWorkers | undefined;
  #apiReaders: ApiReaders | undefined;
  #apiReadersTimer: NodeJS.Timeout | undefined;
  /** The API's write requests being served: the evaluation worker runs when there are none. */
  readonly #inFlight = new RequestsInFlight();
  #metrics: ServerMetrics | undefined;
  #address: ServerAddress | undefined;

  constructor(opts: ServerOptions) {
    if (!opts.dataDir && !opts.store && !opts.etcd) throw new ServerError('SERVER_INVALID', 'a server needs dataDir, etcd or store');
    if (!opts.tokens.length) throw new ServerError('SERVER_INVALID', 'a server needs at least one API token');
    this.#opts = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'server' });
    this.#life = new Lifecycle({
      logger: this.#log,
      refuse: (state) => new ServerError('SERVER_STATE', `cannot start a server that is ${state}`),
    });
  }

  get state(): ServerState {
    return this.#life.state;
  }

  /** The listening address; undefined unless running. */
  get address(): ServerAddress | undefined {
    return this.#address;
  }

  /** The state store (for tests and the agent that embeds the server). Throws unless started. */
  get store(): StateStore {
    if (!this.#store) throw new ServerError('SERVER_STATE', 'the server is not started');
    return this.#store;
  }

  /** Who leads: this server alone, or the one etcd elected. Throws unless started. */
  get leadership(): Leadership {
    if (!this.#leadership) throw new ServerError('SERVER_STATE', 'the server is not started');
    return this.#leadership;
  }

  /**
   * The fence a distributed store compares on every write: the current
   * term's while this server leads, one that never matches while it follows
   * (a follower must not write), undefined for a single server. Cheap; read
   * at every write.
   */
  fence(): Fence | undefined {
    if (this.#leadership) return this.#leadership.fence();
    // A cluster server that has not joined the election yet must not write either.
    return this.#election() ? { key: `${this.#opts.etcd?.prefix ?? '/berth'}/cluster/leader`, createRevision: '-1' } : undefined;
  }

  /** The etcd endpoints of the election; undefined for a server that leads alone. */
  #election(): readonly string[] | undefined {
    return this.#opts.cluster?.endpoints ?? this.#opts.etcd?.endpoints;
  }

  /** The open node connections (server-to-node calls). Throws unless started. */
  get connections(): NodeConnections {
    if (!this.#connections) throw new ServerError('SERVER_STATE', 'the server is not started');
    return this.#connections;
  }

  /** The volume service (for tests and the agent that embeds the server). Throws unless started. */
  get volumes(): VolumeService {
    if (!this.#volumes) throw new ServerError('SERVER_STATE', 'the server is not started');
    return this.#volumes;
  }

  /** Volume usage and conditions as nodes and controllers report them. Throws unless started. */
  get volumeHealth(): VolumeHealthService {
    if (!this.#health) throw new ServerError('SERVER_STATE', 'the server is not started');
    return this.#health;
  }

  /** The volume doctor (drift between the books, the plugins and the nodes). Throws unless started. */
  get doctor(): VolumeDoctor {
    if (!this.#doctor) throw new ServerError('SERVER_STATE', 'the server is not started');
    return this.#doctor;
  }

  /**
   * The Prometheus registry served at GET /v1/metrics, one per Server; an agent
   * embedding the server may register its own metrics on it (e.g.
   * csiCallMetrics). Throws unless started.
   */
  get metrics(): ServerMetrics {
    if (!this.#metrics) throw new ServerError('SERVER_STATE', 'the server is not started');
    return this.#metrics;
  }

  /** The API's front workers; undefined when it has none (`apiWorkers` 0) or is not started. */
  get apiWorkers(): ApiWorkers | undefined {
    return this.#apiWorkers;
  }

  /** The API's readers once started; undefined when it has none (`apiReaders` 0, or front workers), or before they start. */
  get apiReaders(): ApiReaders | undefined {
    return this.#apiReaders;
  }

  /** Requests the API began since the start, of every kind (nodes' heartbeats too): the agent's measure of its traffic. */
  get requestsBegun(): number {
    return this.#inFlight.begun;
  }

  /** Users' write requests (registrations, stops) begun since the start, served or not: what the agent's idle work gives way to. */
  get userWritesSeen(): number {
    return this.#inFlight.entered;
  }

  /**
   * Resolves once the API serves no user's write request and, after a burst
   * of them, none began or ended for `settleMs` (default the 20 ms the
   * evaluation worker waits before each batch; RequestsInFlight.whenQuiet);
   * at once when none is in flight and the last came alone. Never rejects;
   * waits as long as writes keep coming, so a caller bounds it.
   */
  whenWritesQuiet(settleMs?: number): Promise<void> {
    return this.#inFlight.whenQuiet(settleMs);
  }

  /**
   * Runs a sample job's registration path (read, checked, planned in a scratch
   * transaction, shaped) and throws it all away, so that the first job a user
   * submits finds that code compiled. Writes nothing. Call it while idle.
   */
  warmJobPath(): void {
    if (!this.#jobs || !this.#store) throw new ServerError('SERVER_STATE', 'the server is not started');
    warmJobPath(this.#jobs, this.#store.snapshot().index);
  }

  /** Starts everything; resolves with the HTTP address. See the class comment. */
  async start(): Promise<ServerAddress> {
    if (this.#life.state !== 'new') throw new ServerError('SERVER_STATE', `cannot start a server that is ${this.#life.state}`);
    await this.#life.start(() => this.#start());
    return this.#address as ServerAddress;
  }

  async #start(): Promise<void> {
    const root = this.#opts.logger ?? silentLogger();
    try {
      if (this.#opts.store) this.#store = this.#opts.store;
      else if (this.#opts.etcd) {
        // Fenced on the leader's term: a follower or a deposed leader cannot write.
        this.#store = await openEtcdStateStore({ ...this.#opts.etcd, logger: root, fence: () => this.fence() });
        this.#ownsStore = true;
      } else {
        const dir = this.#opts.dataDir as string;
        mkdirSync(dir, { recursive: true });
        this.#store = SqliteStateStore.open(join(dir, 'state.db'), { logger: root });
        this.#ownsStore = true;
      }
      const store = this.#store;
      const clock = this.#clock;
      this.#connections = new NodeConnections({ logger: root });
      const nodeCallTimeout = this.#opts.nodeCallTimeoutMs !== undefined ? { callTimeoutMs: this.#opts.nodeCallTimeoutMs } : {};
      const router = new ControllerRouter({ store, connections: this.#connections, logger: root, ...nodeCallTimeout });
      this.#volumes = new VolumeService({ store, connections: this.#connections, router, clock, logger: root, ...nodeCallTimeout });
      this.#router = router;
      const usageHistory = this.#opts.volumeHealth?.usageHistory;
      this.#health = new VolumeHealthService({ store, clock, logger: root, ...(usageHistory !== undefined ? { historySize: usageHistory } : {}) });
      const connections = this.#connections;
      const callTimeoutMs = this.#opts.nodeCallTimeoutMs ?? 60_000;
      this.#doctor = new VolumeDoctor({
        store,
        volumes: this.#volumes,
        calls: {
          connected: (nodeId) => connections.connected(nodeId),
          callNode: (nodeId, method, params, o) => connections.call(nodeId, method, params, { timeoutMs: callTimeoutMs, ...o }),
          callController: (pluginId, method, params, o) => router.call(pluginId, method, params, o),
        },
        clock,
        logger: root,
      });
      this.#hostVolumes = new HostVolumeService({
        store,
        callNode: (nodeId, method, params, o) => connections.call(nodeId, method, params, o),
        connected: (nodeId) => connections.connected(nodeId),
        clock,
        logger: root,
        callTimeoutMs,
      });
      this.#jobs = new JobService({ store, clock, logger: root, registrationLinger: () => this.#inFlight.burstLinger() });
      this.#namespaces = new NamespaceService({ store, logger: root });
      this.#metrics = new ServerMetrics({ store, health: this.#health });
      this.#term = this.#newTerm();

      const termNodes = (): NodeService => (this.#term as LeaderTerm).nodes;
      // eslint-disable-next-line @typescript-eslint/no-this-alias -- getters below read the current term
      const self = this;
      const deps: ApiDeps = {
        store,
        jobs: this.#jobs,
        inFlight: this.#inFlight,
        readers: () => this.#apiReaders,
        deployments: new DeploymentService({ store, jobs: this.#jobs, clock, logger: root }),
        // The node service of the current term: routes read it at every request.
        get nodes() {
          return termNodes();
        },
        // The garbage collector of the current term (a follower forwards PUT /v1/system/gc to the leader).
        get gc() {
          return (self.#term as LeaderTerm).gc;
        },
        namespaces: this.#namespaces,
        volumes: this.#volumes,
        hostVolumes: this.#hostVolumes,
        health: this.#health,
        doctor: this.#doctor,
        connections: this.#connections,
        identities: new WorkloadIdentities({ store, clock, logger: root, issuer: this.#opts.oidcIssuer }),
        tokens: this.#opts.tokens,
        logger: root,
        clock: this.#clock,
        metrics: this.#metrics,
        leadership: () => this.#leadership,
        ...(this.#opts.eventHeartbeatMs !== undefined ? { eventHeartbeatMs: this.#opts.eventHeartbeatMs } : {}),
        ...(this.#opts.routes ? { extraRoutes: this.#opts.routes } : {}),
        ...(this.#opts.localClient ? { localClient: this.#opts.localClient } : {}),
        ...(this.#opts.agent ? { agent: this.#opts.agent } : {}),
      };
      this.#api = await buildApi(deps);
      const host = this.#opts.bindAddress ?? '127.0.0.1';
      await this.#api.listen({ host, port: this.#opts.port ?? 0 });
      if (this.#opts.apiWorkers) {
        this.#apiWorkers = new ApiWorkers({ deps, app: this.#api, count: this.#opts.apiWorkers, ...(this.#opts.dataDir ? { dataDir: this.#opts.dataDir } : {}), logger: root });
        await this.#apiWorkers.start();
      } else if (this.#opts.apiReaders) {
        // After the start: a thread's load and warm-up are CPU the agent's first answers and jobs would share.
        const readers = new ApiReaders({ count: this.#opts.apiReaders, ...(deps.bodyLimit !== undefined ? { bodyLimit: deps.bodyLimit } : {}), logger: root });
        this.#apiReadersTimer = setTimeout(() => {
          this.#apiReaders = readers;
          readers.start();
        }, this.#opts.apiReadersAfterMs ?? 1_000);
        this.#apiReadersTimer.unref();
      }
      const addr = this.#api.server.address();
      const port = typeof addr === 'object' && addr ? addr.port : (this.#opts.port ?? 0);
      const urlHost = host.includes(':') ? `[${host}]` : host;
      const address = { host, port, url: `http://${urlHost}:${port}` };
      const cluster = this.#opts.cluster ?? {};
      const endpoints = this.#election();
      this.#leadership = endpoints
        ? await createEtcdLeadership({
            endpoints,
            prefix: `${this.#opts.etcd?.prefix ?? '/berth'}/cluster/`,
            self: { ...(cluster.serverId ? { id: cluster.serverId } : {}), address: cluster.advertiseAddress ?? address.url },
            ...(cluster.leaseTtlSeconds !== undefined ? { leaseTtlSeconds: cluster.leaseTtlSeconds } : {}),
            clock,
            logger: root,
          })
        : new SoloLeadership({ id: 'solo', address: address.url });
      this.#leadership.onChange((leading) => this.#onLeadership(leading));
      await this.#leadership.start();
      // A solo server's loops run before start() returns, as they always did.
      await this.#termChange;
      this.#address = address;
      this.#log.info({ address: address.url, index: store.latestIndex(), leader: this.#leadership.isLeader }, 'server started');
    } catch (err) {
      this.#log.error({ err: describeError(err) }, 'server failed to start');
      await this.#teardown();
      if (err instanceof BerthError) throw new ServerError('SERVER_START', `server failed to start: ${err.message}`, { cause: err });
      throw new ServerError('SERVER_START', `server failed to start: ${describeError(err)}`, { cause: err });
    }
  }

  /** Stops everything in reverse order. Safe twice, and before start. */
  stop(): Promise<void> {
    return this.#life.stop(async () => {
      await this.#teardown();
      this.#log.info('server stopped');
    });
  }

  /** Builds the leader loops of one term, not started (their services still serve reads). */
  #newTerm(): LeaderTerm {
    const root = this.#opts.logger ?? silentLogger();
    const store = this.#store as StateStore;
    const clock = this.#clock;
    return new LeaderTerm({
      nodes: new NodeService({
        store,
        clock,
        logger: root,
        ...(this.#opts.heartbeatTtlMs !== undefined ? { heartbeatTtlMs: this.#opts.heartbeatTtlMs } : {}),
        ...(this.#opts.heartbeatGraceMs !== undefined ? { heartbeatGraceMs: this.#opts.heartbeatGraceMs } : {}),
        ...(this.#opts.maxHeartbeatsPerSecond !== undefined ? { maxHeartbeatsPerSecond: this.#opts.maxHeartbeatsPerSecond } : {}),
      }),
      plugins: new PluginService({ store, logger: root }),
      claimWatcher: new ClaimWatcher({ store, volumes: this.#volumes as VolumeService, clock, logger: root }),
      worker: new EvalWorker({ store, jobs: this.#jobs as JobService, clock, logger: root, quiet: () => this.#inFlight.whenQuiet(), inBurst: () => this.#inFlight.inBurst }),
      gc: new GarbageCollector({ store, clock, logger: root }),
      drainer: new NodeDrainer({ store, jobs: this.#jobs as JobService, clock, logger: root }),
      periodic: new PeriodicDispatcher({ store, jobs: this.#jobs as JobService, clock, logger: root }),
      deployments: new DeploymentWatcher({ store, jobs: this.#jobs as JobService, clock, logger: root }),
      conditions: new ControllerConditions({
        store,
        router: this.#router as ControllerRouter,
        health: this.#health as VolumeHealthService,
        clock,
        logger: root,
        ...(this.#opts.volumeHealth?.controllerIntervalMs !== undefined ? { intervalMs: this.#opts.volumeHealth.controllerIntervalMs } : {}),
      }),
      services: new ServiceReaper({ store, clock, logger: root }),
      drift: new DriftWatcher({
        store,
        doctor: this.#doctor as VolumeDoctor,
        clock,
        logger: root,
        ...(this.#opts.volumeHealth?.driftIntervalMs !== undefined ? { intervalMs: this.#opts.volumeHealth.driftIntervalMs } : {}),
      }),
    });
  }

  /**
   * Starts the term's loops on gaining leadership; on losing it stops them
   * (waiting for in-flight work, whose writes the fence refuses by now),
   * drops the node connections so that nodes reconnect to the new leader,
   * and prepares the next term: a new leader starts with fresh node
   * heartbeat deadlines, so no node is marked down because the leader changed.
   */
  #onLeadership(leading: boolean): Promise<void> {
    const change = this.#termChange.then(async () => {
      const term = this.#term as LeaderTerm;
      if (leading) {
        if (term.started) return;
        this.#log.info('starting the leader loops');
        // A state from before namespaces were objects keeps its namespaces (see NamespaceService.adoptInUse).
        await this.#namespaces?.adoptInUse().catch((err: unknown) => this.#log.warn({ err: describeError(err) }, 'could not make the namespaces in use objects'));
        try {
          await term.start();
        } catch (err) {
          this.#log.error({ err: describeError(err) }, 'the leader loops failed to start');
          if (!this.#election()) throw err;
          this.#leadership?.stepDown('the leader loops failed to start');
        }
        return;
      }
      if (!term.started) return;
      this.#log.info('stopping the leader loops');
      await term.stop();
      this.#connections?.closeAll();
      this.#term = this.#newTerm();
    });
    this.#termChange = change.catch(() => undefined);
    return change;
  }

  async #teardown(): Promise<void> {
    const step = async (what: string, fn: () => unknown): Promise<void> => {
      try {
        await fn();
      } catch (err) {
        this.#log.warn({ what, err: describeError(err) }, 'error while stopping');
      }
    };
    // The workers first: they relay to the API, which ends the blocking reads and streams they carry.
    await step('api workers', () => this.#apiWorkers?.close());
    clearTimeout(this.#apiReadersTimer);
    await step('api readers', () => this.#apiReaders?.close());
    await step('http', () => this.#api?.close());
    // Stepping down stops the term's loops (listeners run before stop() returns).
    await step('leadership', () => this.#leadership?.stop());
    await step('leader loops', () => this.#termChange);
    await step('leader loops', () => this.#term?.stop());
    await step('connections', () => this.#connections?.closeAll());
    if (this.#ownsStore) {
      await step('store', async () => {
        const store = this.#store;
        store?.close();
        // The SQLite store's reserve file, begun in the background at open, is written by libuv's pool past
        // the close: a data dir removed meanwhile (a dev agent's own, at its exit) failed with ENOTEMPTY or
        // kept a stray file.
        if (store instanceof SqliteStateStore) await store.headroomAtOpen();
      });
    }
    this.#address = undefined;
  }
}
