// The agent: the composition root of a Berth process. Dev mode runs a server
// and a client in one process (one listener serves the API, the client's
// logs/exec routes and one /metrics); server mode runs the server; client
// mode runs a node agent with its own listener. Parts start in order and
// stop in reverse.

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism, hostname } from 'node:os';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { registerTaskMetrics } from './task-metrics.js';
import { Client, createDrivers, startClientHelpers, type ExecutorHosts, type TaskConfig, type TaskDriver } from '../client/index.js';
import { csiCallMetrics, type CsiCallObserver } from '../csi/index.js';
import { registerAllocationGauge, registerReclaimGauge } from './agent-gauges.js';
import { BerthError, Lifecycle, MemoryReclaimer, silentLogger, type LifecycleState, type Logger } from '../lib/index.js';
import { execRelay, Server, type ApiToken } from '../server/index.js';
import type { AgentConfig } from './agent-config.js';
import { agentDriverPlugins } from './driver-plugins.js';
import { ClientListener, type TokenVerdict } from './client-listener.js';
import { registerClientRoutes } from './client-routes.js';
import { devTokens } from './dev-tokens.js';
import { registerUiRoutes } from './ui-routes.js';
import { withPathDirs, writeBerthShim } from './path-driver.js';
import { startPhase } from './start-phases.js';
import { warmJobPath } from './job-path-warmup.js';
import { holdStartsWhileBusy, START_SETTLE_MS } from './task-start-hold.js';

export type AgentMode = 'dev' | 'server' | 'client';

export interface AgentOptions {
  mode: AgentMode;
  config: AgentConfig;
  /** Where server state (`server/`) and client state (`client/`) live. */
  dataDir: string;
  logger?: Logger;
  /** The `berth` executable (bin/berth.js) that tasks of dev and client agents get on their PATH as `berth`. */
  berthBin?: string;
  /** Dev mode's API port; default the config's ports.http, else 4646. */
  port?: number;
  /** Berth's release, as /v1/agent/self tells it. Default `unknown`. */
  version?: string;
  /**
   * Called once when the started agent is first idle (a dev agent: after it warmed its job path), the
   * moment the code a start and a first job run has been compiled: `berth agent` saves its code cache
   * then (src/warm-start/). Runs on the event loop; what it throws is logged and ignored.
   */
  onWarm?: () => void;
}

/** What a started agent tells its user. */
export interface AgentAddress {
  /** The HTTP listener: the API (dev, server) or the client's own (client). */
  url: string;
  /** Dev mode's generated management token. */
  managementToken?: string;
}

/** The agent cannot start as configured (code AGENT_CONFIG) or failed to start (AGENT_START). */
export type AgentErrorCode = 'AGENT_CONFIG' | 'AGENT_START';

export class AgentError extends BerthError<AgentErrorCode> {}

const DEFAULT_PORT = 4646;
/**
 * Default `tasks_per_executor`: raw_exec and exec tasks per executor process.
 * A task start is then a spawn of the task, not a Node start, and 32 tasks
 * share one executor's memory; a crash of one executor loses (and restarts)
 * at most 32 tasks.
 */
const DEFAULT_TASKS_PER_EXECUTOR = 32;

/**
 * A client agent's default `stop_after_server_disconnect`: as long as the
 * server's default heartbeat TTL, so that a node the server marks down (the
 * TTL and its grace) has stopped its single-writer tasks by then. "0s" turns
 * fencing off.
 */
export const DEFAULT_STOP_AFTER_SERVER_DISCONNECT_MS = 30_000;

/**
 * A Berth agent. `start()` resolves once every part runs (rejects with
 * AgentError, after stopping what started); `stop({ drain })` stops the
 * parts in reverse order: the client first (with drain: every allocation
 * stopped, workloads before plugins, volumes unmounted and claims released;
 * without: tasks keep running for the next agent), then its listener, then
 * the server. Safe twice (the first call's `drain` counts); a stop during
 * start waits for the start to end first. A second `start()` returns the
 * first's address; one after stop rejects with AGENT_START. The state is a
 * lib Lifecycle's. A running agent of any mode gives back the heap a burst
 * of work grew once it goes quiet (lib MemoryReclaimer; its count is the
 * `berth_agent_memory_reclaims` gauge of its /metrics).
 */
export class Agent {
  readonly #opts: AgentOptions;
  readonly #log: Logger;
  #server: Server | undefined;
  #client: Client | undefined;
  #listener: ClientListener | undefined;
  #reclaimer: MemoryReclaimer | undefined;
  /** A client agent's own /metrics registry (dev and server agents use the server's). */
  #clientRegistry: Registry | undefined;
  #drivers = new Map<string, TaskDriver>();
  /** The shared executors started ahead of the client (startClientHelpers), until its drivers take them. */
  #hostsAhead: ExecutorHosts | undefined;
  readonly #life: Lifecycle;
  #address: AgentAddress | undefined;

  constructor(opts: AgentOptions) {
    this.#opts = opts;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'agent' });
    this.#life = new Lifecycle({ logger: this.#log, refuse: (state) => new AgentError('AGENT_START', `cannot start an agent that is ${state}`) });
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  /** The embedded server (dev, server modes) once started. */
  get server(): Server | undefined {
    return this.#server;
  }

  /** The embedded client (dev, client modes) once started. */
  get client(): Client | undefined {
    return this.#client;
  }

  async start(): Promise<AgentAddress> {
    await this.#life.start(async () => {
      try {
        this.#address = await this.#start();
        // Once every part runs: the heap a burst of work grew is given back when the agent goes quiet.
        // A server's API traffic (nodes' heartbeats included) holds reclaims off: each stops the event loop.
        const server = this.#server;
        const reclaimer = new MemoryReclaimer({ logger: this.#opts.logger ?? silentLogger(), ...(server ? { requests: () => server.requestsBegun } : {}) });
        this.#reclaimer = reclaimer;
        const registry = this.#server?.metrics.registry ?? this.#clientRegistry;
        if (registry) registerReclaimGauge(registry, reclaimer);
        await reclaimer.start();
        if (this.#opts.mode !== 'dev') this.#whenIdle(() => undefined);
      } catch (err) {
        await this.#teardown({});
        if (err instanceof AgentError) throw err;
        throw new AgentError('AGENT_START', err instanceof Error ? err.message : String(err), { cause: err });
      }
    });
    return this.#address as AgentAddress;
  }

  async #start(): Promise<AgentAddress> {
    const { mode, config, dataDir } = this.#opts;
    const root = this.#opts.logger ?? silentLogger();
    const bindAddress = mode === 'dev' ? '127.0.0.1' : (config.bindAddr ?? '127.0.0.1');
    const port = this.#opts.port ?? config.httpPort ?? DEFAULT_PORT;
    const tokens: ApiToken[] = [
      ...config.tokens.management.map((secret, i) => ({ name: `management-${i + 1}`, secret, role: 'management' as const })),
      ...config.tokens.readOnly.map((secret, i) => ({ name: `read-only-${i + 1}`, secret, role: 'read-only' as const })),
      ...config.tokens.node.map((secret, i) => ({ name: `node-${i + 1}`, secret, role: 'node' as const })),
    ];

    if (mode === 'client') return this.#startClientOnly(root, bindAddress, port);

    let managementToken: string | undefined;
    let nodeToken: string | undefined;
    if (mode === 'dev') {
      // Kept in the data dir: a restart on the same data dir keeps the UI and BERTH_TOKEN logged in.
      ({ management: managementToken, node: nodeToken } = devTokens(dataDir));
      tokens.push({ name: 'dev-management', secret: managementToken, role: 'management' }, { name: 'dev-node', secret: nodeToken, role: 'node' });
    }
    if (!tokens.some((t) => t.role === 'management')) {
      throw new AgentError('AGENT_CONFIG', 'a server needs at least one management token (tokens { management = [...] } or management_file)');
    }
    // A dev agent's own node: its allocations are served here, other nodes' forwarded to their agents.
    const localClient = { nodeId: () => (this.#client?.state === 'running' ? this.#client.nodeId : undefined) };
    // Metrics and client routes are on the server's listener in dev mode; the client comes later.
    startPhase(this.#log, 'server starting');
    this.#server = new Server({
      dataDir: path.join(dataDir, 'server'),
      logger: root,
      tokens,
      bindAddress,
      port,
      apiWorkers: config.server.apiWorkers ?? 0,
      // A reader on a machine of two cores or more: main keeps the connections, the reader reads a burst's jobs.
      apiReaders: config.server.apiReaders ?? (availableParallelism() > 1 ? 1 : 0),
      ...(config.server.heartbeatTtlMs ? { heartbeatTtlMs: config.server.heartbeatTtlMs } : {}),
      ...(config.server.heartbeatGraceMs !== undefined ? { heartbeatGraceMs: config.server.heartbeatGraceMs } : {}),
      ...(config.server.maxHeartbeatsPerSecond !== undefined ? { maxHeartbeatsPerSecond: config.server.maxHeartbeatsPerSecond } : {}),
      ...(config.server.etcd ? { etcd: config.server.etcd } : {}),
      ...(config.server.oidcIssuer ? { oidcIssuer: config.server.oidcIssuer } : {}),
      ...(config.server.name || config.server.advertiseAddress || config.server.leaseTtlMs
        ? {
            cluster: {
              ...(config.server.name ? { serverId: config.server.name } : {}),
              ...(config.server.advertiseAddress ? { advertiseAddress: config.server.advertiseAddress } : {}),
              ...(config.server.leaseTtlMs ? { leaseTtlSeconds: Math.max(1, Math.round(config.server.leaseTtlMs / 1000)) } : {}),
            },
          }
        : {}),
      volumeHealth: {
        ...(config.csi.volumeConditionIntervalMs ? { controllerIntervalMs: config.csi.volumeConditionIntervalMs } : {}),
        ...(config.csi.driftIntervalMs ? { driftIntervalMs: config.csi.driftIntervalMs } : {}),
      },
      agent: {
        ...(this.#opts.version ? { version: this.#opts.version } : {}),
        datacenter: config.client.datacenter ?? 'dc1',
        nodeName: config.server.name ?? config.client.nodeName ?? hostname(),
        dataDir,
        devMode: mode === 'dev',
        ...(mode === 'dev' ? { client: () => clientFacts(this.#client) } : {}),
      },
      // The web UI on every server's listener; the client's logs/exec routes too in dev mode (a server
      // agent forwards them to the allocation's node, as a dev agent does those of other nodes' allocations).
      ...(mode === 'dev' ? { localClient } : {}),
      routes: async (app) => {
        startPhase(this.#log, 'server API routes registered');
        app.addHook('onListen', async () => startPhase(this.#log, 'listening'));
        await registerUiRoutes(app);
        if (mode === 'dev') {
          const server = this.#server as Server;
          const relayExec = execRelay({ get store() { return server.store; }, localClient, logger: root });
          registerClientRoutes(app, { client: () => this.#client, drivers: this.#drivers, logger: root, relayExec });
        }
      },
    });
    const address = await this.#server.start();
    this.#log.info({ address: address.url, mode }, 'server part started');
    startPhase(this.#log, 'server started');
    if (mode === 'server') return { url: address.url };
    await this.#startClientHelpers();

    const metrics = csiCallMetrics(this.#server.metrics.registry);
    registerTaskMetrics(this.#server.metrics.registry, () => this.#client, this.#drivers);
    this.#client = this.#buildClient(root, address.url, nodeToken as string, address.url, (name) => metrics.observer(name));
    startPhase(this.#log, 'client starting');
    await this.#client.start();
    this.#log.info({ nodeId: this.#client.nodeId }, 'client part started');
    startPhase(this.#log, 'client started');
    // Once the node is registered and connected, and then idle: the job path warmed (job-path-warmup.ts), so
    // the first job a user submits costs what the later ones do. Not before: the node's registration is a
    // request to this same loop, and a first round (~50 ms) beside it put off the node, and with it the
    // placement of a job submitted as the agent printed its ready lines.
    const client = this.#client;
    client.waitReady().then(
      () => this.#whenIdle(() => warmJobPath(this.#server, this.#log)),
      (err: unknown) => this.#log.debug({ err }, 'job path warm-up skipped: the client did not get ready'),
    );
    return { url: address.url, ...(managementToken ? { managementToken } : {}) };
  }

  /** Runs `work` once the event loop is free (never holding the process open), then tells opts.onWarm. */
  #whenIdle(work: () => void): void {
    setTimeout(() => {
      work();
      if (this.#life.state !== 'running' && this.#life.state !== 'starting') return;
      try {
        this.#opts.onWarm?.();
      } catch (err) {
        this.#log.debug({ err }, 'onWarm failed');
      }
    }, 0).unref();
  }

  async #startClientOnly(root: Logger, bindAddress: string, port: number): Promise<AgentAddress> {
    const { config } = this.#opts;
    if (!config.client.serverAddress) throw new AgentError('AGENT_CONFIG', 'a client agent needs the server address (--server-address or client { server_address })');
    if (!config.client.token) throw new AgentError('AGENT_CONFIG', 'a client agent needs a node token (client { token } or token_file)');
    const registry = new Registry();
    this.#clientRegistry = registry;
    const metrics = csiCallMetrics(registry);
    this.#listener = new ClientListener({
      client: () => this.#client,
      drivers: this.#drivers,
      logger: root,
      tokens: { management: config.tokens.management, readOnly: config.tokens.readOnly },
      verifyWithServer: (token, access, signal) => verifyToken(config.client.serverAddress as string, token, access, signal),
      registry,
      bindAddress,
      port,
    });
    const url = await this.#listener.start();
    await this.#startClientHelpers();
    this.#client = this.#buildClient(root, config.client.servers ?? config.client.serverAddress, config.client.token, url, (name) => metrics.observer(name));
    registerAllocationGauge(registry, () => this.#client);
    registerTaskMetrics(registry, () => this.#client, this.#drivers);
    await this.#client.start();
    this.#log.info({ nodeId: this.#client.nodeId, address: url }, 'client agent started');
    return { url };
  }

  /**
   * Starts the client's helper processes (startClientHelpers) once the API listens, two turns of the event
   * loop after (a request that came meanwhile is answered first: one turn accepts its connection, the next
   * reads it; with one, the forks and the client's start ran before it was read), ahead of the client's own start: their Node
   * starts run on another core while this one starts the client, and a first allocation finds them running.
   * Before the listener they delayed the first answer (two forks, ~15 ms, and their boot beside it).
   */
  async #startClientHelpers(): Promise<void> {
    const { config, dataDir } = this.#opts;
    // Two turns: a connection waiting in the listener's queue is accepted in one poll and its request read in the next.
    await nextTurn();
    await nextTurn();
    this.#hostsAhead = startClientHelpers({
      stateDir: path.join(dataDir, 'client', 'd'),
      tasksPerExecutor: config.client.tasksPerExecutor ?? DEFAULT_TASKS_PER_EXECUTOR,
      spareExecutor: config.client.spareExecutor ?? true,
      rawExec: this.#enabledDrivers().raw_exec === true,
      ...(this.#opts.logger ? { logger: this.#opts.logger } : {}),
    });
  }

  /** The built-in drivers the client runs, by name. */
  #enabledDrivers(): Record<string, boolean | undefined> {
    const { mode, config } = this.#opts;
    // docker is on by default, as in Nomad: without a reachable dockerd it fingerprints unhealthy and nothing is placed on it.
    return mode === 'dev' ? { raw_exec: true, exec: true, docker: true, ...config.client.drivers } : { exec: true, raw_exec: false, docker: true, ...config.client.drivers };
  }

  #buildClient(root: Logger, servers: string | readonly string[], token: string, httpAddr: string, observer: (plugin: string) => CsiCallObserver): Client {
    const { mode, config, dataDir } = this.#opts;
    const clientDir = path.join(dataDir, 'client');
    // Dev and client agents alike give tasks `berth` (the README's hostpath plugin job runs `berth plugin hostpath`).
    const shimDirs = this.#opts.berthBin ? [writeBerthShim(path.join(dataDir, 'bin'), this.#opts.berthBin)] : [];
    const drivers = this.#enabledDrivers();
    const nodeName = config.client.nodeName ?? hostname();
    const plugins = agentDriverPlugins({
      config,
      stateDir: path.join(clientDir, 'd'),
      ...(this.#opts.berthBin ? { berthBin: this.#opts.berthBin } : {}),
      nodeName,
      pathDirs: shimDirs,
      logger: root,
      onChange: () => this.#client?.driversChanged(),
    });
    return new Client({
      ...(plugins
        ? {
            externalDrivers: {
              start: async () => {
                await plugins.start();
                for (const [name, d] of plugins.drivers()) this.#drivers.set(name, d);
              },
              drivers: () => plugins.drivers(),
              stop: () => plugins.stop(),
            },
          }
        : {}),
      dataDir: clientDir,
      servers,
      token,
      nodeName,
      ...(config.client.datacenter ? { datacenter: config.client.datacenter } : {}),
      ...(config.client.nodeClass ? { nodeClass: config.client.nodeClass } : {}),
      ...(config.client.meta ? { meta: config.client.meta } : {}),
      drivers,
      hostVolumes: config.client.hostVolumes,
      ...(config.client.hostVolumesDir ? { hostVolumesDir: config.client.hostVolumesDir } : {}),
      ...(config.client.hostVolumePluginDir ? { hostVolumePluginDir: config.client.hostVolumePluginDir } : {}),
      ...(config.client.chrootEnv ? { chrootEnv: config.client.chrootEnv } : {}),
      ...killInChrootBuild(),
      // A dev agent trusts its user with the whole machine; other agents read only the roots their config names.
      fileRoots: config.client.fileRoots ?? (mode === 'dev' ? ['/'] : []),
      ...(config.client.artifact ? { artifactLimits: config.client.artifact } : {}),
      ...(config.client.gc ? { gc: config.client.gc } : {}),
      // A dev agent's node is its loopback, as Nomad's -dev: its ports are reached on 127.0.0.1.
      ...(config.client.groupNetworks ? { groupNetworks: config.client.groupNetworks } : {}),
      ...(config.client.network || mode === 'dev' ? { network: { ...(mode === 'dev' ? { interface: 'lo' } : {}), ...config.client.network } } : {}),
      // Fencing only where a partition can happen: a dev agent's server shares its process.
      ...(mode === 'client' ? { stopAfterServerDisconnectMs: config.client.stopAfterServerDisconnectMs ?? DEFAULT_STOP_AFTER_SERVER_DISCONNECT_MS } : {}),
      logger: root,
      httpAddr,
      csiObserver: observer,
      // A dev agent's client shares the API's event loop: new allocations start once a burst of submissions is answered.
      ...(mode === 'dev' && this.#server ? { holdStarts: holdStartsWhileBusy(() => (this.#server as Server).whenWritesQuiet(START_SETTLE_MS)) } : {}),
      csi: config.csi,
      ...(config.csi.volumeStatsIntervalMs ? { volumeStats: { intervalMs: config.csi.volumeStatsIntervalMs } } : {}),
      createDrivers: (c) => {
        // A `docker` executable in plugin_dir (Nomad's own driver) replaces the built-in and takes the block's config.
        const external = config.pluginDir !== undefined && existsSync(path.join(config.pluginDir, 'docker'));
        const dockerConfig = external ? undefined : config.plugins?.['docker']?.config;
        const executorHosts = this.#hostsAhead;
        this.#hostsAhead = undefined;
        const built = createDrivers({
          stateDir: path.join(c.dataDir, 'd'),
          ...(executorHosts ? { executorHosts } : {}),
          logger: c.logger,
          clock: c.clock,
          tasksPerExecutor: config.client.tasksPerExecutor ?? DEFAULT_TASKS_PER_EXECUTOR,
          spareExecutor: config.client.spareExecutor ?? true,
          ...(dockerConfig ? { dockerConfig, locateDockerConfig: (p: string) => config.locatePlugin?.('docker', p) } : {}),
          ...killAfterTaskStart(),
        });
        for (const [name, d] of built) {
          // An image's own PATH applies inside a container: the host's `berth` shim is no use there.
          const driver = shimDirs.length && d.capabilities.fsIsolation !== 'image' ? withPathDirs(d, shimDirs) : d;
          built.set(name, driver);
          if (drivers[name as keyof typeof drivers]) this.#drivers.set(name, driver);
        }
        return built;
      },
    });
  }

  /**
   * After a drain: each plugin's mount root (a shared self-bind the client
   * keeps across plugin restarts) is unmounted once nothing is mounted below
   * it, so a stopped dev agent leaves no mount behind. A root that still
   * holds a volume mount is left alone and logged.
   */
  #releasePluginMountRoots(): void {
    const pluginRoot = path.join(this.#opts.dataDir, 'client', 'p');
    const mounts = mountsUnder(pluginRoot);
    for (const m of mounts) {
      if (path.basename(m) !== 'mounts') continue;
      const below = mounts.filter((o) => o.startsWith(`${m}/`));
      if (below.length) {
        this.#log.warn({ mountRoot: m, mounts: below.length }, 'plugin mount root still holds mounts; left mounted');
        continue;
      }
      const r = spawnSync('umount', [m], { stdio: 'ignore' });
      if (r.status !== 0) this.#log.warn({ mountRoot: m }, 'could not unmount a plugin mount root');
    }
  }

  /** Stops the parts in reverse order (see the class comment). Safe twice; never rejects. */
  stop(opts: { drain?: boolean } = {}): Promise<void> {
    return this.#life.stop(() => this.#teardown(opts));
  }

  async #teardown(opts: { drain?: boolean }): Promise<void> {
    const step = async (what: string, fn: () => unknown): Promise<void> => {
      try {
        await fn();
      } catch (err) {
        this.#log.warn({ what, err: err instanceof Error ? err.message : String(err) }, 'error while stopping');
      }
    };
    await step('memory reclaimer', () => this.#reclaimer?.stop());
    await step('client', () => this.#client?.stop({ drain: opts.drain ?? false }));
    // Started ahead and never taken by the client's drivers (its start failed before them): the spare ends.
    await step('spare executor', () => this.#hostsAhead?.close());
    if (opts.drain && this.#client) await step('plugin mount roots', () => this.#releasePluginMountRoots());
    await step('client listener', () => this.#listener?.stop());
    await step('server', () => this.#server?.stop());
    this.#log.info({ drained: opts.drain ?? false }, 'agent stopped');
  }
}

/**
 * Fault injection for the test suites (never set in production):
 * BERTH_TEST_KILL_IN_CHROOT_BUILD=<task name> makes the agent SIGKILL itself
 * when the chroot of a task of that name is half mounted.
 */
function killInChrootBuild(): { chrootHalfBuilt?: (taskDir: string) => void } {
  const task = process.env['BERTH_TEST_KILL_IN_CHROOT_BUILD'];
  if (!task) return {};
  return { chrootHalfBuilt: (dir) => void (path.basename(dir) === task && process.kill(process.pid, 'SIGKILL')) };
}

/**
 * Fault injection for the test suites (never set in production):
 * BERTH_TEST_KILL_AFTER_TASK_START=<task name> makes the agent SIGKILL itself
 * the instant a task of that name is reported running by its executor, before
 * the driver returns its handle: the worst moment for an agent to die.
 */
function killAfterTaskStart(): { afterTaskStarted?: (cfg: TaskConfig) => void } {
  const taskName = process.env['BERTH_TEST_KILL_AFTER_TASK_START'];
  if (!taskName) return {};
  return {
    afterTaskStarted: (cfg) => {
      if (cfg.taskName === taskName) process.kill(process.pid, 'SIGKILL');
    },
  };
}

/**
 * Asks the server whether `token` has `access`, through a route of that
 * access with no effect: POST /v1/validate/job (write: management) or
 * GET /v1/jobs (read). The server checks the token before the body.
 */
async function verifyToken(server: string, token: string, access: 'read' | 'write', signal: AbortSignal): Promise<TokenVerdict> {
  try {
    const res = await fetch(`${server.replace(/\/+$/, '')}${access === 'write' ? '/v1/validate/job' : '/v1/jobs?prefix=-'}`, {
      method: access === 'write' ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${token}`, ...(access === 'write' ? { 'content-type': 'application/json' } : {}) },
      ...(access === 'write' ? { body: '{}' } : {}),
      signal,
    });
    await res.arrayBuffer();
    if (res.status === 401) return 'unauthenticated';
    if (res.status === 403) return 'forbidden';
    return res.status < 500 ? 'ok' : 'unreachable';
  } catch {
    return 'unreachable';
  }
}

/** Mount points at or below `dir` (from /proc/self/mountinfo), deepest first. */
export function mountsUnder(dir: string): string[] {
  const root = path.resolve(dir);
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => (l.split(' ')[4] ?? '').replace(/\\040/g, ' '))
    .filter((p) => p === root || p.startsWith(`${root}/`))
    .sort((a, b) => b.length - a.length);
}

/** What /v1/agent/self and /v1/agent/health tell of a dev agent's client: Nomad's `client` stats and whether it runs. */
function clientFacts(client: Client | undefined): { stats: Record<string, string>; ok: boolean; message: string } | undefined {
  if (!client) return undefined;
  const running = client.state === 'running';
  return {
    stats: { node_id: running ? client.nodeId : '', known_servers: '1', num_allocations: String(client.allocIds().length) },
    ok: running,
    message: running ? 'ok' : `client is ${client.state}`,
  };
}
