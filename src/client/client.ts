// The node agent's composition root (Nomad's client.Client): opens the
// client state, the plugin registry, the CSI manager and the task drivers,
// restores the allocation runners of a previous run, links the node to the
// servers (_server-link.ts: registration and heartbeats, the node connection
// that answers their calls, the watch of the node's allocations) and runs one
// allocation runner for each allocation, reporting their status back (the
// allocation sync, _alloc-sync.ts: the runners made, the server's list acted on;
// the task drivers it opens, _task-drivers.ts).
// One thing, near 500 lines: the composition root, which builds each part from the
// agent's options in order and tears them down in reverse.

import { mkdirSync } from 'node:fs';
// The client's start gives way between its steps (a turn of the event loop: I/O first), so a dev agent's API,
// listening already, answers requests that came meanwhile without waiting for the whole start.
import { setImmediate as nextTurn } from 'node:timers/promises';
import path from 'node:path';
import { CsiClient, type CsiCallObserver } from '../csi/index.js';
import {
  anySignal,
  describeError,
  Lifecycle,
  silentLogger,
  systemClock,
  type Clock,
  type Logger,
} from '../lib/index.js';
import {
  isClientTerminal,
  type CheckResult,
  type NodeEvent,
} from '../structs/index.js';
import { ChrootCache, mountHelper } from './allocdir/index.js';
import { CsiManager } from './csimanager/index.js';
import { AllocGarbageCollector } from './gc/index.js';
import type { TaskDriver } from './drivers/index.js';
import { PluginRegistry, type RegisteredPlugin } from './dynamicplugins/index.js';
import { HostVolumeManager } from './hostvolumes/index.js';
import { NetworkManager } from './network/index.js';
import {
  HttpVolumeClaimer,
  NodeRpcHandler,
  ServerApi,
  StatusReporter,
  type AllocWatcher,
  type NodeConnection,
  type NodeRegistration,
} from './serverconn/index.js';
import { SqliteClientStateStore, type ClientStateStore } from './state/index.js';
import { loadNode, serverLink, startServerLink, type NodeRecord } from './_server-link.js';
import { NodeFingerprinter } from './_fingerprint.js';
import { NODE_META_BUCKET, NodeMeta, type NodeMetaView } from './_node-meta.js';
import { volumeStatsCollector } from './_volume-stats.js';
import { ServiceChecks } from './_service-checks.js';
import { ServiceCatalog } from './template/index.js';
import { AllocSync } from './_alloc-sync.js';
import { collectAlloc, diskUsagePercent, gcCandidates, GC_BUCKET } from './_alloc-gc.js';
import { drainRunners } from './_drain.js';
import { openTaskDrivers } from './_task-drivers.js';
import { ownedTasks, restoreRunners } from './_restore.js';
import type { VolumeStatsCollector } from './volumestats/index.js';

import { ClientError, type AllocRunnerHandle, type ClientOptions, type ClientState, type RunnerEntry } from './_client-types.js';

export { ClientError, type AllocRunnerHandle, type ClientErrorCode, type ClientOptions, type ClientState } from './_client-types.js';

/**
 * The node agent. Lifecycle: `start()` opens the state and every part,
 * restores the runners of a previous run (reattaching, never tearing
 * down), then connects to the server in the background and resolves;
 * `stop()` leaves tasks running (an agent restart keeps them);
 * `stop({ drain: true })` first stops every allocation (workloads before
 * plugins: tasks stopped, volumes unmounted, claims released). Safe twice;
 * the first call's `drain` counts. A second `start()` throws CLIENT_STATE.
 * The state is a lib Lifecycle's.
 * A server that is down or refuses is retried with backoff, never fatal.
 *
 * Nothing destructive happens before the server's allocation list arrived
 * (docs/csi-rules.md scenario 19): restored runners keep running, and the
 * volume managers reconcile only against that list.
 */
export class Client {
  readonly #opts: ClientOptions;
  readonly #clock: Clock;
  readonly #root: Logger;
  readonly #log: Logger;
  readonly #life: Lifecycle;
  /**
   * Aborts the background work (runner starts, volume reconciles). Fired
   * part-way through stop(), after a drain: the drain itself still needs it.
   */
  readonly #stopping = new AbortController();
  readonly #runners = new Map<string, RunnerEntry>();
  /** Runners being destroyed (the server dropped them): a drain still waits for their cleanup. */
  readonly #leaving = new Map<string, RunnerEntry>();
  readonly #statusListeners = new Set<() => void>();
  #store: SqliteClientStateStore | undefined;
  #registry: PluginRegistry | undefined;
  #csi: CsiManager | undefined;
  readonly #drivers = new Map<string, TaskDriver>();
  readonly #fingerprinter: NodeFingerprinter;
  #hostVolumes: HostVolumeManager | undefined;
  readonly #meta: NodeMeta;
  #network: NetworkManager | undefined;
  #chroot: ChrootCache | undefined;
  #api: ServerApi | undefined;
  #claimer: HttpVolumeClaimer | undefined;
  #registration: NodeRegistration | undefined;
  #connection: NodeConnection | undefined;
  #watcher: AllocWatcher | undefined;
  #reporter: StatusReporter | undefined;
  #checks: ServiceChecks | undefined;
  #catalog: ServiceCatalog | undefined;
  #node: NodeRecord | undefined;
  #sync: AllocSync | undefined;
  readonly #drainProblems: string[] = [];
  #gc: AllocGarbageCollector | undefined;
  #volumeStats: VolumeStatsCollector | undefined;
  /** IDs in GC_BUCKET, kept until the server no longer lists them. */
  readonly #collected = new Set<string>();

  constructor(opts: ClientOptions) {
    if (!path.isAbsolute(opts.dataDir)) throw new ClientError('CLIENT_INVALID', `dataDir must be an absolute path: ${opts.dataDir}`);
    this.#opts = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#root = opts.logger ?? silentLogger();
    this.#log = this.#root.child({ component: 'client' });
    this.#life = new Lifecycle({ logger: this.#log });
    this.#meta = new NodeMeta(opts.meta ?? {});
    this.#fingerprinter = new NodeFingerprinter({ drivers: this.#drivers, clock: this.#clock, opts, csi: () => this.#csi, meta: () => this.#meta.merged(), hostVolumes: () => this.#hostVolumes });
  }

  get state(): ClientState {
    return this.#life.state;
  }

  /** The node's ID (kept across restarts in the client state). Throws before start. */
  get nodeId(): string {
    if (!this.#node) throw new ClientError('CLIENT_STATE', 'the client is not started');
    return this.#node.id;
  }

  /** Whether the server's allocation list has been received since start. */
  get serverListReceived(): boolean {
    return this.#sync?.serverListReceived ?? false;
  }

  /** The IDs of the allocations with a runner now. */
  allocIds(): string[] {
    return [...this.#runners.keys()];
  }

  /** The runner of an allocation, if this agent runs it. */
  runner(allocId: string): AllocRunnerHandle | undefined {
    return this.#runners.get(allocId)?.runner;
  }

  /** The latest result of each service check of an allocation this agent runs, by check ID (empty when none). */
  checkResults(allocId: string): Record<string, CheckResult> {
    return this.#checks?.runner.results(allocId) ?? {};
  }

  /** The parts, for tests and the agent command. Throws before start. */
  get parts(): { store: ClientStateStore; registry: PluginRegistry; csiManager: CsiManager } {
    if (!this.#store || !this.#registry || !this.#csi) throw new ClientError('CLIENT_STATE', 'the client is not started');
    return { store: this.#store, registry: this.#registry, csiManager: this.#csi };
  }

  /** Connections made, heartbeats, lists and status batches so far (for tests and status). */
  counters(): { connects: number; heartbeats: number; registrations: number; allocLists: number; statusBatches: number } {
    return {
      connects: this.#connection?.connects ?? 0,
      heartbeats: this.#registration?.counts.heartbeats ?? 0,
      registrations: this.#registration?.counts.registrations ?? 0,
      allocLists: this.#watcher?.lists ?? 0,
      statusBatches: this.#reporter?.counts.batches ?? 0,
    };
  }

  /**
   * Garbage-collects every finished allocation now (the on-demand trigger,
   * `POST /v1/client/gc`): its directory and secrets are removed and the
   * agent forgets it; a running allocation, or one with a volume still
   * mounted, is never collected. Resolves with the IDs collected. Throws
   * ClientError CLIENT_STATE unless running.
   */
  async collectGarbage(): Promise<string[]> {
    if (this.#life.state !== 'running' || !this.#gc) throw new ClientError('CLIENT_STATE', `cannot collect garbage in a client that is ${this.#life.state}`);
    return this.#gc.collect({ all: true });
  }

  /** The garbage collector's limits and how many allocations it collected so far. Throws before start. */
  gcStatus(): { limits: AllocGarbageCollector['limits']; collected: number } {
    if (!this.#gc) throw new ClientError('CLIENT_STATE', 'the client is not started');
    return { limits: this.#gc.limits, collected: this.#gc.collectedCount };
  }

  /** Resolves once the node is registered, connected and the first allocation list was handled. */
  async waitReady(): Promise<void> {
    await this.#registration?.waitRegistered();
    await this.#connection?.waitConnected();
    await this.#watcher?.waitFirstList();
  }

  /** Sends pending status updates now; resolves when they are sent. */
  async flushStatus(): Promise<void> {
    await this.#reporter?.flush();
  }

  /** See the class comment. Throws ClientError CLIENT_START when a part cannot start (what started is stopped). */
  async start(): Promise<void> {
    if (this.#life.state !== 'new') throw new ClientError('CLIENT_STATE', `cannot start a client that is ${this.#life.state}`);
    await this.#life.start(() => this.#start());
  }

  async #start(): Promise<void> {
    try {
      const dataDir = this.#opts.dataDir;
      mkdirSync(dataDir, { recursive: true });
      const store = SqliteClientStateStore.open(path.join(dataDir, 'client.db'));
      this.#store = store;
      this.#node = loadNode(store);
      this.#meta.load(store.bucket(NODE_META_BUCKET));
      this.#log.info({ nodeId: this.#node.id, dataDir }, 'client starting');

      this.#registry = new PluginRegistry({ store, logger: this.#root, clock: this.#clock });
      this.#csi = new CsiManager({
        registry: this.#registry,
        store,
        logger: this.#root,
        clock: this.#clock,
        csiRoot: path.join(dataDir, 'csi'),
        // Plugin health goes to the server at once, with the next fingerprint.
        updateNodePlugin: () => this.#registration?.pushFingerprint(),
        emitNodeEvent: (e: NodeEvent) => {
          this.#log.info({ subsystem: e.subsystem, details: e.details }, e.message);
          for (const { runner } of this.#runners.values()) runner.pluginEvent(e);
        },
        onHealthTimeout: (plugin, type, reason) => this.#runners.get(plugin.allocId)?.runner.pluginHealthTimeout(plugin, type, reason),
        ...(this.#opts.csi?.probeIntervalMs !== undefined ? { probeIntervalMs: this.#opts.csi.probeIntervalMs } : {}),
        ...(this.#opts.csi?.healthTimeoutMs !== undefined ? { healthTimeoutMs: this.#opts.csi.healthTimeoutMs } : {}),
        ...(this.#opts.csi?.resyncIntervalMs !== undefined ? { resyncIntervalMs: this.#opts.csi.resyncIntervalMs } : {}),
        ...(this.#opts.csiObserver
          ? { dial: (p: RegisteredPlugin) => new CsiClient({ endpoint: `unix://${p.socketPath}`, logger: this.#root, observer: this.#observerFor(p) }) }
          : {}),
      });
      await this.#csi.start();
      await nextTurn();
      // Dynamic host volumes are restored before allocations are, which may use them.
      this.#hostVolumes = new HostVolumeManager({
        store,
        volumesDir: this.#opts.hostVolumesDir ?? path.join(dataDir, 'host_volumes'),
        pluginDir: this.#opts.hostVolumePluginDir ?? path.join(dataDir, 'host_volume_plugins'),
        onChange: () => this.#registration?.pushFingerprint(),
        logger: this.#root,
        clock: this.#clock,
      });
      await this.#hostVolumes.start();
      await nextTurn();

      await openTaskDrivers({ opts: this.#opts, drivers: this.#drivers, runners: this.#runners, dataDir, root: this.#root, log: this.#log, clock: this.#clock });
      await nextTurn();
      await this.#fingerprinter.refreshDriverInfo(true);
      // Every allocation directory is made through the mount helper: started now (as the drivers' spare executors
      // are, just above), its Node start overlaps the node's registration instead of delaying its first allocation.
      mountHelper().warm();
      await nextTurn();
      this.#chroot = new ChrootCache({ cacheDir: path.join(this.#opts.dataDir, 'chroot'), ...(this.#opts.chrootEnv ? { env: this.#opts.chrootEnv } : {}), ...(this.#opts.chrootHalfBuilt ? { halfBuilt: this.#opts.chrootHalfBuilt } : {}), logger: this.#root });
      this.#network = new NetworkManager({
        logger: this.#root,
        stateDir: path.join(dataDir, 'network'),
        ...(this.#opts.netnsPrefix ? { prefix: this.#opts.netnsPrefix } : {}),
        ...this.#opts.groupNetworks,
      });

      this.#api = new ServerApi({ address: this.#opts.servers, token: this.#opts.token });
      this.#claimer = new HttpVolumeClaimer({ api: this.#api });
      this.#reporter = new StatusReporter({ api: this.#api, nodeId: this.#node.id, clock: this.#clock, logger: this.#root, starting: () => this.#sync?.starting ?? 0 });
      this.#checks = new ServiceChecks({
        clock: this.#clock,
        logger: this.#root,
        nodeAddress: () => this.#opts.serviceAddress ?? this.#fingerprinter.last?.attributes['unique.network.ip-address'] ?? '127.0.0.1',
        nodeAttrs: () => ({ ...(this.#fingerprinter.last?.attributes ?? this.#opts.attributes ?? {}) }),
        lookup: (allocId) => {
          const e = this.#runners.get(allocId);
          return e && { alloc: e.alloc, job: e.job, ...(e.runner.restartTask ? { restartTask: (t: string, r: string) => (e.runner.restartTask as (t: string, r: string) => Promise<void>)(t, r) } : {}) };
        },
        report: (u) => this.#reporter?.report(u),
      });
      await this.#checks.start();
      const api = this.#api;
      this.#catalog = new ServiceCatalog({
        fetchInstances: (name, q) => api.serviceInstances(name, q),
        fetchNames: (q) => api.serviceList(q),
        clock: this.#clock,
        logger: this.#root,
      });

      this.#sync = new AllocSync({
        opts: this.#opts,
        runners: this.#runners,
        leaving: this.#leaving,
        collected: this.#collected,
        statusListeners: this.#statusListeners,
        store,
        node: this.#node,
        drivers: this.#drivers,
        registry: this.#registry,
        csiManager: this.#csi,
        network: this.#network,
        claimer: this.#claimer,
        hostVolumes: this.#hostVolumes,
        catalog: this.#catalog,
        signIdentities: (nodeId, allocId, requests, signal) => api.signIdentities(nodeId, allocId, requests, { signal }),
        chroot: this.#chroot,
        fingerprinter: this.#fingerprinter,
        meta: this.#meta,
        checks: this.#checks,
        reporter: this.#reporter,
        clock: this.#clock,
        root: this.#root,
        log: this.#log,
        signal: this.#stopping.signal,
        track: (p) => this.#track(p),
      });
      await nextTurn();
      await this.#restoreRunners(store);
      // Networks of allocations that ended while the agent was down are detached; running ones re-adopted.
      await this.#network.restore(new Set([...this.#runners.values()].filter((e) => !isClientTerminal(e.runner.status().clientStatus)).map((e) => e.alloc.id)));
      await this.#reapOrphanedTasks();
      for (const { key } of store.bucket<true>(GC_BUCKET).list()) this.#collected.add(key);
      this.#gc = new AllocGarbageCollector({
        candidates: () => gcCandidates(this.#runners, this.#clock.now()),
        collect: (allocId) => collectAlloc(allocId, { runners: this.#runners, collected: this.#collected, store, log: this.#log }),
        diskUsagePercent: () => this.#allocDiskUsage(),
        clock: this.#clock,
        logger: this.#root,
        ...(this.#opts.gc ? { limits: this.#opts.gc } : {}),
      });
      this.#gc.start();

      const nodeId = this.#node.id;
      this.#volumeStats = volumeStatsCollector({
        opts: this.#opts,
        store,
        csi: this.#csi,
        api: this.#api,
        nodeId,
        runner: (allocId) => this.#runners.get(allocId)?.runner,
        clock: this.#clock,
        logger: this.#root,
      });
      const link = serverLink({
        opts: this.#opts,
        api: this.#api,
        nodeId,
        minIndex: this.#node.allocIndex,
        fingerprint: () => this.#fingerprinter.fingerprint(),
        // A server answered: fenced tasks may keep running for another stop_after_server_disconnect.
        onContact: () => {
          for (const d of this.#drivers.values()) d.renewLeases?.();
        },
        handler: new NodeRpcHandler({ csi: this.#csi, store, logger: this.#root, hostVolumes: this.#hostVolumes }),
        onAllocations: (update, index) => (this.#sync as AllocSync).onAllocations(update, index),
        clock: this.#clock,
        logger: this.#root,
      });
      ({ registration: this.#registration, connection: this.#connection, watcher: this.#watcher } = link);
      this.#track(startServerLink(link, this.#stopping.signal, () => this.#volumeStats?.start()));
      this.#log.info({ nodeId, restored: this.#runners.size, drivers: [...this.#drivers.keys()] }, 'client started');
    } catch (err) {
      this.#log.error({ err: describeError(err) }, 'client failed to start');
      await this.#teardown(false);
      throw new ClientError('CLIENT_START', `client failed to start: ${describeError(err)}`, { cause: err });
    }
  }

  /** After a stop with drain: each allocation the drain could not stop or clean up (tasks, mounts, claims), with why. */
  get drainProblems(): readonly string[] {
    return this.#drainProblems;
  }

  /** See the class comment. Never throws; safe twice. */
  stop(opts: { drain?: boolean } = {}): Promise<void> {
    return this.#life.stop(async () => {
      await this.#teardown(opts.drain ?? false);
      this.#log.info({ drained: opts.drain ?? false }, 'client stopped');
    });
  }

  // ---- allocations -------------------------------------------------------------------

  /** The CSI call observer for plugin `p` (one for all plugins, or one per plugin name). */
  #observerFor(p: RegisteredPlugin): CsiCallObserver {
    const o = this.#opts.csiObserver as CsiCallObserver | ((name: string) => CsiCallObserver);
    return typeof o === 'function' ? o(p.name) : o;
  }

  /** Percent in use of the file system holding the allocation directories; undefined when unknown. */
  #allocDiskUsage(): number | undefined {
    return diskUsagePercent(this.#opts.allocDirRoot ?? path.join(this.#opts.dataDir, 'alloc'));
  }

  /**
   * A driver's health or attributes changed (an external driver's
   * fingerprint, its plugin exited or came back): the node's fingerprint is
   * taken again and sent with a heartbeat now. Does not block; never throws.
   */
  driversChanged(): void {
    void this.#fingerprinter
      .refreshDriverInfo(true)
      .then(() => this.#registration?.pushFingerprint())
      .catch((err: unknown) => this.#log.warn({ err: describeError(err) }, 'driver fingerprint refresh failed'));
  }

  /** The node's meta: merged, dynamic (`node meta apply`) and static (the config). Does not block. */
  nodeMeta(): NodeMetaView {
    return this.#meta.view();
  }

  /**
   * Applies dynamic node meta (a null value hides a static key; `unset`
   * forgets dynamic keys), keeps it in the client state (it survives a
   * restart) and sends the new fingerprint to the server at once. Safe to
   * repeat; throws when the client state cannot be written.
   */
  applyNodeMeta(set: Readonly<Record<string, string | null>>, unset: readonly string[]): NodeMetaView {
    const view = this.#meta.apply(set, unset);
    this.#registration?.pushFingerprint();
    return view;
  }

  /** Kills what is left in the cgroups of tasks no restored runner owns (the drivers share one cgroup parent). */
  async #reapOrphanedTasks(): Promise<void> {
    const [driver] = this.#drivers.values();
    await driver?.reapOrphans(ownedTasks(this.#runners));
  }

  /** Recreates the runners of a previous run (from their own records) and reattaches their tasks; tears nothing down. */
  async #restoreRunners(store: ClientStateStore): Promise<void> {
    const sync = this.#sync as AllocSync;
    await restoreRunners(store, (alloc, job) => sync.newRunner(alloc, job), this.#log);
  }

  // ---- teardown ----------------------------------------------------------------------

  /** Background work stop() waits for; its failure is logged where it happens, not here. */
  #track(p: Promise<unknown>): void {
    void this.#life.track(p.catch(() => undefined));
  }

  /** Stops every allocation: workloads first, then plugin allocations (they unmount the workloads' volumes). */
  async #drain(): Promise<void> {
    const deps = { runners: this.#runners, leaving: this.#leaving, statusListeners: this.#statusListeners, log: this.#log, problems: this.#drainProblems };
    await drainRunners({ ...deps, registry: this.#registry as PluginRegistry });
    await this.#flushFor(10_000);
  }

  /** Sends pending status updates, giving up after `ms` (a server that is down must not hold the agent). */
  async #flushFor(ms: number): Promise<void> {
    const flushed = this.#reporter?.flush();
    if (!flushed) return;
    // The give-up timer is cancelled once the flush is done: left running, it held the agent's process for its whole span.
    const flushDone = new AbortController();
    try {
      await Promise.race([flushed, this.#clock.sleep(ms, anySignal([flushDone.signal, AbortSignal.timeout(ms + 1000)])).catch(() => undefined)]);
    } finally {
      flushDone.abort();
    }
  }

  async #teardown(drain: boolean): Promise<void> {
    const step = async (what: string, fn: () => unknown): Promise<void> => {
      try {
        await fn();
      } catch (err) {
        this.#log.warn({ what, err: describeError(err) }, 'error while stopping');
      }
    };
    // No new allocation lists while draining or stopping.
    await step('alloc watcher', () => this.#watcher?.stop());
    await step('garbage collector', () => this.#gc?.stop());
    await step('volume stats', () => this.#volumeStats?.stop());
    if (drain) await step('drain', () => this.#drain());
    this.#stopping.abort();
    await step('runners', () => Promise.all([...this.#runners.values(), ...this.#leaving.values()].map(async (e) => e.runner.shutdown())));
    await step('background', () => this.#life.drained());
    await step('service checks', () => this.#checks?.stop());
    await step('service catalog', () => this.#catalog?.stop());
    await step('status reporter', async () => {
      await this.#flushFor(2_000);
      await this.#reporter?.stop();
    });
    await step('node connection', () => this.#connection?.stop());
    await step('node registration', () => this.#registration?.stop());
    await step('csi manager', () => this.#csi?.stop());
    await step('drivers', () => Promise.all([...this.#drivers.values()].map((d) => d.shutdown())));
    await step('driver plugins', () => this.#opts.externalDrivers?.stop());
    await step('registry', () => this.#registry?.close());
    await step('server api', () => this.#api?.close());
    await step('state store', async () => {
      this.#store?.close();
      // Its reserve file, begun in the background at open, may still be being written (see Server's stop).
      await this.#store?.headroomAtOpen();
    });
  }
}
