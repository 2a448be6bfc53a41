// The CSI manager: follows the plugin registry, runs one instance manager per
// (type, plugin name), reports every change of health or fingerprint to the
// node, and keeps one volume manager per node plugin (Nomad's
// client/pluginmanager/csimanager; the volume managers' table is in
// node-volume-managers.ts; a slot of the table, which instance serves it and
// what the node is told of it, in plugin-slot.ts).
// One thing, near 500 lines: following the registry and keeping the instances, their
// reports and events in step, which share one table of plugins.

import { CsiClient, type NodeCapability } from '../../csi/index.js';
import {
  BACKOFF,
  AbortedError,
  describeError,
  Lifecycle,
  silentLogger,
  systemClock,
  throwIfAborted,
  type BackoffPolicy,
  type Clock,
  type LifecycleState,
  type Logger,
} from '../../lib/index.js';
import type { CsiPluginReport, CsiPluginType, NodeEvent } from '../../structs/index.js';
import type { PluginEvent, RegisteredPlugin, SubscribeOptions } from '../dynamicplugins/index.js';
import type { ClientStateStore } from '../state/index.js';
import type { VolumeManager } from '../volumes/index.js';
import { CsiManagerError } from './errors.js';
import { InstanceManager, type InstanceChange } from './instance-manager.js';
import { NodeVolumeManagers, type ManagedVolumeManager, type VolumeManagerParams } from './node-volume-managers.js';
import type { PluginWaitOptions } from './volume-managers.js';
import { eventDetails, pluginReport, servingInstance, slotKey, type Slot } from './plugin-slot.js';

/** What the CSI manager needs of the plugin registry (PluginRegistry has it all). */
export interface PluginSource {
  /** Every serving registration. */
  servingPlugins(): RegisteredPlugin[];
  /** Every registration of (type, name), most recent first. */
  registrations(type: CsiPluginType, name: string): RegisteredPlugin[];
  /** Every change from now on, in order, until the signal fires. */
  subscribe(opts: SubscribeOptions): AsyncIterable<PluginEvent>;
}

export interface CsiManagerOptions<VM extends ManagedVolumeManager = VolumeManager> {
  registry: PluginSource;
  store: ClientStateStore;
  /**
   * Builds the volume manager of a node plugin, once per plugin name for the
   * manager's life. Default: `new VolumeManager(params)`.
   */
  createVolumeManager?: (params: VolumeManagerParams) => VM;
  /** Told of every change of a plugin instance's report; `null` when the plugin is gone. Must not throw (it is caught and logged). */
  updateNodePlugin: (type: CsiPluginType, pluginId: string, report: CsiPluginReport | null) => void;
  /** Told of every readable event (plugin healthy, unhealthy, replaced, gone). Must not throw. */
  emitNodeEvent: (event: NodeEvent) => void;
  /** Told when an instance stayed unhealthy past the health timeout (the task restart hook). */
  onHealthTimeout?: (plugin: RegisteredPlugin, type: CsiPluginType, reason: string) => void;
  /** Makes the client of a plugin's socket. Default: a CsiClient on `unix://<socketPath>`. */
  dial?: (plugin: RegisteredPlugin) => CsiClient;
  /**
   * Where node plugins' mount roots go when a registration names none:
   * `<csiRoot>/node/<plugin>`. Without it such a registration cannot mount.
   */
  csiRoot?: string;
  logger?: Logger;
  clock?: Clock;
  /** Between two full comparisons with the registry, which heal a missed event. Default 30 s. */
  resyncIntervalMs?: number;
  /** Between probes of a healthy plugin. Default 30 s. */
  probeIntervalMs?: number;
  /** How long a plugin may stay unhealthy before onHealthTimeout. Default 30 s. */
  healthTimeoutMs?: number;
  /** Deadline of each fingerprint and probe call. Default 5 s. */
  callTimeoutMs?: number;
  /** Backoff between failed connects and fingerprints (and, capped by the probe interval, failed probes). */
  retryBackoff?: BackoffPolicy;
  random?: () => number;
}

export type CsiManagerState = LifecycleState;

/**
 * Runs the node's CSI plugin instances. `start()` returns once it follows
 * the registry (instances connect and fingerprint in the background);
 * `stop()` shuts every instance and volume manager down in parallel.
 *
 * The manager compares its instances with the registry on every registry
 * event and also every `resyncIntervalMs`, so a missed event heals. An
 * instance is replaced when the serving allocation changes (the old one
 * keeps serving until the new one is healthy) and shut down when the plugin
 * is gone. The volume manager of a node plugin outlives its instances, so a
 * plugin restart or update never loses mount state.
 */
export class CsiManager<VM extends ManagedVolumeManager = VolumeManager> {
  readonly #opts: CsiManagerOptions<VM>;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #slots = new Map<string, Slot>();
  readonly #volumeManagers: NodeVolumeManagers<VM>;
  readonly #retiring = new Set<Promise<void>>();
  readonly #changeListeners = new Set<() => void>();
  readonly #life: Lifecycle;

  constructor(opts: CsiManagerOptions<VM>) {
    this.#opts = opts;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'csi-manager' });
    this.#clock = opts.clock ?? systemClock;
    this.#life = new Lifecycle({
      logger: this.#logger,
      refuse: () => new CsiManagerError('CSI_MANAGER_STOPPED', '', 'the CSI manager was stopped and cannot start again'),
    });
    this.#volumeManagers = new NodeVolumeManagers<VM>({
      store: opts.store,
      createVolumeManager: opts.createVolumeManager,
      csiRoot: opts.csiRoot,
      logger: this.#logger,
      clock: this.#clock,
      servingClient: (name) => this.#servingClient(name),
      servingNodeCapabilities: (name) => this.#servingNodeCapabilities(name),
      onReady: () => this.#notify(),
    });
  }

  /** The lib Lifecycle's state: new, starting, running, stopping, stopped. */
  get state(): CsiManagerState {
    return this.#life.state;
  }

  /**
   * Follows the registry: starts an instance for every serving registration
   * and returns (fingerprints come later). Throws CSI_MANAGER_STOPPED after
   * stop(); a second call while running does nothing.
   */
  start(): Promise<void> {
    return this.#life.start((signal) => {
      // Subscribe before the first comparison, so nothing falls in between.
      const events = this.#opts.registry.subscribe({ signal });
      this.#sync('start');
      void this.#life.track(this.#followEvents(events));
      void this.#life.track(this.#resyncLoop(signal));
    });
  }

  /**
   * Stops following the registry, then stops every instance and volume
   * manager in parallel and resolves when all are done. Plugin reports are
   * not withdrawn (the plugins still run; the agent is what stops). Safe
   * twice; never throws.
   */
  stop(): Promise<void> {
    const stopped = this.#life.stop(() => this.#teardown()).then(() => this.#notify());
    this.#notify();
    return stopped;
  }

  async #teardown(): Promise<void> {
    // The loops first: no instance may be started once the instances are collected.
    await this.#life.drained();
    const instances = [...this.#slots.values()].flatMap((s) => (s.previous ? [s.current, s.previous] : [s.current]));
    this.#slots.clear();
    await Promise.allSettled([
      ...instances.map((i) => i.stop()),
      ...this.#retiring,
      ...this.#volumeManagers.stopAll(),
    ]);
  }

  /**
   * The instance serving plugin `id` of `type` (default csi-node), once it
   * has fingerprinted successfully: at once if it has, else as soon as it
   * does. Waits for a plugin not registered yet too. Rejects with
   * AbortedError when `signal` fires, CSI_MANAGER_STOPPED when the manager
   * stops. The instance may be unhealthy by the time it is used. Calls
   * `onWaiting` once, synchronously, when it has to wait.
   */
  async managerForPlugin(id: string, opts: PluginWaitOptions & { type?: CsiPluginType } = {}): Promise<InstanceManager> {
    const type = opts.type ?? 'csi-node';
    for (let waited = false; ; waited = true) {
      throwIfAborted(opts.signal);
      if (this.#life.stopRequested) {
        throw new CsiManagerError('CSI_MANAGER_STOPPED', id, `the CSI manager stopped while waiting for ${type} plugin "${id}"`);
      }
      const slot = this.#slots.get(slotKey(type, id));
      const instance = slot && servingInstance(slot);
      if (instance?.fingerprint) return instance;
      if (!waited) opts.onWaiting?.();
      await this.#nextChange(opts.signal);
    }
  }

  /** VolumeManagers.waitForPlugin: managerForPlugin for a node plugin, without the instance. */
  async waitForPlugin(pluginId: string, opts: PluginWaitOptions = {}): Promise<void> {
    await this.managerForPlugin(pluginId, opts);
  }

  /**
   * The volume manager of node plugin `id`, when an instance of it is
   * healthy now. Throws CsiManagerError CSI_PLUGIN_NOT_FOUND ("plugin X not
   * found") when no allocation on this node registered it,
   * CSI_PLUGIN_UNHEALTHY ("plugin X is not healthy: <reason>") while it is
   * not healthy, CSI_PLUGIN_MISCONFIGURED when it has no mount root.
   * Does not block.
   */
  volumeManagerFor(id: string): VM {
    const slot = this.#slots.get(slotKey('csi-node', id));
    if (!slot) throw new CsiManagerError('CSI_PLUGIN_NOT_FOUND', id, `CSI plugin "${id}" not found: no csi-node registration of it on this node`);
    const instance = servingInstance(slot);
    if (!instance.healthy) throw new CsiManagerError('CSI_PLUGIN_UNHEALTHY', id, `CSI plugin "${id}" is not healthy: ${instance.healthReason}`);
    const entry = this.#volumeManagers.get(id);
    if (!entry?.vm) {
      throw new CsiManagerError(
        'CSI_PLUGIN_MISCONFIGURED',
        id,
        `CSI plugin "${id}" cannot mount: ${entry?.error ? describeError(entry.error) : 'its registration names no mount root'}`,
      );
    }
    if (entry.error) throw new CsiManagerError('CSI_PLUGIN_UNHEALTHY', id, `CSI plugin "${id}" is not healthy: its volume manager failed to start: ${describeError(entry.error)}`, { cause: entry.error });
    if (!entry.ready) throw new CsiManagerError('CSI_PLUGIN_UNHEALTHY', id, `CSI plugin "${id}" is not healthy: its volume manager is still loading its records`);
    return entry.vm;
  }

  /**
   * The volume manager of node plugin `id` even while no healthy instance
   * serves it: for an operator's forced detach, whose steps the agent does
   * itself when the plugin cannot (docs/csi-rules.md, a release always ends).
   * Does not block. Throws CsiManagerError CSI_PLUGIN_NOT_FOUND when the
   * plugin never had a volume manager here, CSI_PLUGIN_UNHEALTHY while its
   * records are still loading.
   */
  volumeManagerForTeardown(id: string): VM {
    return this.#volumeManagers.forTeardown(id);
  }

  /** The node capabilities of the instance serving node plugin `pluginId` ([] before its first fingerprint, or when none runs). */
  nodeCapabilities(pluginId: string): NodeCapability[] {
    return this.#servingNodeCapabilities(pluginId);
  }

  /** Each node plugin's mount root on this host (under it, its stagings and publications), for the mount inventory. */
  mountRoots(): Array<{ pluginId: string; root: string }> {
    return this.#volumeManagers.mountRoots();
  }

  /** The current report of every plugin, by type and plugin ID, for a node fingerprint. */
  pluginReports(): { controller: Record<string, CsiPluginReport>; node: Record<string, CsiPluginReport> } {
    const out = { controller: {} as Record<string, CsiPluginReport>, node: {} as Record<string, CsiPluginReport> };
    for (const slot of this.#slots.values()) {
      out[slot.type === 'csi-node' ? 'node' : 'controller'][slot.name] = pluginReport(slot, this.#clock.now());
    }
    return out;
  }

  /** Every running instance: the serving ones and those being replaced. */
  instances(): InstanceManager[] {
    return [...this.#slots.values()].flatMap((s) => (s.previous ? [s.current, s.previous] : [s.current]));
  }

  // ---- following the registry ---------------------------------------------

  async #followEvents(events: AsyncIterable<PluginEvent>): Promise<void> {
    try {
      for await (const event of events) {
        this.#logger.debug({ kind: event.kind, type: event.plugin.type, plugin: event.plugin.name, allocId: event.plugin.allocId }, 'registry event');
        this.#sync('event');
      }
    } catch (err) {
      // The resync loop keeps the manager right without events.
      this.#logger.error({ err: describeError(err) }, 'registry subscription failed; relying on resync');
    }
  }

  async #resyncLoop(signal: AbortSignal): Promise<void> {
    const every = this.#opts.resyncIntervalMs ?? 30_000;
    while (!signal.aborted) {
      try {
        await this.#clock.sleep(every, signal);
      } catch (err) {
        if (err instanceof AbortedError) return;
        throw err;
      }
      this.#sync('resync');
    }
  }

  /** Brings the instances in line with the registry's serving registrations. */
  #sync(why: 'start' | 'event' | 'resync'): void {
    if (this.#life.state === 'new' || this.#life.stopRequested) return;
    let wanted: Map<string, RegisteredPlugin>;
    try {
      wanted = new Map(this.#opts.registry.servingPlugins().map((p) => [slotKey(p.type, p.name), p]));
    } catch (err) {
      this.#logger.error({ err: describeError(err) }, 'cannot read the plugin registry');
      return;
    }
    for (const [key, slot] of this.#slots) {
      const plugin = wanted.get(key);
      if (!plugin) {
        this.#remove(key, slot, why);
        continue;
      }
      if (slot.previous && !this.#stillRegistered(slot.previous)) {
        this.#retire(slot.previous);
        slot.previous = undefined;
        this.#pushReport(slot);
      }
      if (slot.current.plugin.allocId !== plugin.allocId || slot.current.plugin.seq !== plugin.seq) this.#replace(slot, plugin, why);
    }
    for (const [key, plugin] of wanted) {
      if (!this.#slots.has(key)) this.#add(key, plugin, why);
    }
  }

  #stillRegistered(instance: InstanceManager): boolean {
    const p = instance.plugin;
    return this.#opts.registry.registrations(p.type, p.name).some((r) => r.allocId === p.allocId && r.seq === p.seq);
  }

  #add(key: string, plugin: RegisteredPlugin, why: string): void {
    const slot: Slot = { type: plugin.type, name: plugin.name, current: this.#instance(plugin), previous: undefined, lastReport: '' };
    this.#slots.set(key, slot);
    this.#logger.info({ type: plugin.type, plugin: plugin.name, allocId: plugin.allocId, why }, 'plugin instance added');
    if (plugin.type === 'csi-node') this.#volumeManagers.ensure(plugin);
    this.#event(slot, slot.current, `CSI ${plugin.type} plugin "${plugin.name}" registered by allocation ${plugin.allocId}`);
    this.#pushReport(slot);
    slot.current.start();
    this.#notify();
  }

  #replace(slot: Slot, plugin: RegisteredPlugin, why: string): void {
    const old = slot.current;
    if (slot.previous) this.#retire(slot.previous);
    slot.previous = undefined;
    // The old instance keeps serving until the new one is healthy, if it can serve now.
    if (old.healthy && this.#stillRegistered(old)) slot.previous = old;
    else this.#retire(old);
    slot.current = this.#instance(plugin);
    this.#logger.info({ type: plugin.type, plugin: plugin.name, allocId: plugin.allocId, from: old.plugin.allocId, why }, 'plugin instance replaced');
    this.#event(slot, slot.current, `CSI ${plugin.type} plugin "${plugin.name}" is now served by allocation ${plugin.allocId} (was ${old.plugin.allocId})`);
    this.#pushReport(slot);
    slot.current.start();
    this.#notify();
  }

  #remove(key: string, slot: Slot, why: string): void {
    this.#slots.delete(key);
    this.#retire(slot.current);
    if (slot.previous) this.#retire(slot.previous);
    this.#logger.info({ type: slot.type, plugin: slot.name, why }, 'plugin instance removed');
    this.#event(slot, slot.current, `CSI ${slot.type} plugin "${slot.name}" is gone: no allocation on this node runs it any more`);
    this.#callUpdate(slot.type, slot.name, null);
    this.#notify();
  }

  #retire(instance: InstanceManager): void {
    const done = instance.stop().finally(() => this.#retiring.delete(done));
    this.#retiring.add(done);
  }

  #instance(plugin: RegisteredPlugin): InstanceManager {
    return new InstanceManager({
      plugin,
      type: plugin.type,
      dial: this.#opts.dial ?? ((p) => new CsiClient({ endpoint: `unix://${p.socketPath}`, logger: this.#logger, clock: this.#clock })),
      clock: this.#clock,
      logger: this.#logger,
      probeIntervalMs: this.#opts.probeIntervalMs ?? 30_000,
      healthTimeoutMs: this.#opts.healthTimeoutMs ?? 30_000,
      callTimeoutMs: this.#opts.callTimeoutMs ?? 5_000,
      retryBackoff: this.#opts.retryBackoff ?? BACKOFF.pluginDial,
      onChange: (instance, change) => this.#onInstanceChange(instance, change),
      ...(this.#opts.random ? { random: this.#opts.random } : {}),
    });
  }

  // ---- instance changes -----------------------------------------------------

  #onInstanceChange(instance: InstanceManager, change: InstanceChange): void {
    const slot = this.#slots.get(slotKey(instance.type, instance.plugin.name));
    if (!slot || (slot.current !== instance && slot.previous !== instance)) return;
    const { type, name } = instance.plugin;
    const label = `CSI ${instance.type} plugin "${name}"`;
    switch (change) {
      case 'fingerprint': {
        const fp = instance.fingerprint;
        this.#event(slot, instance, `${label} fingerprinted: ${fp?.info.name ?? '?'} version ${fp?.info.vendorVersion ?? '?'}`);
        break;
      }
      case 'health':
        this.#event(slot, instance, instance.healthy ? `${label} is healthy` : `${label} is unhealthy: ${instance.healthReason}`);
        break;
      case 'reason':
        if (!instance.healthy) this.#event(slot, instance, `${label} is unhealthy: ${instance.healthReason}`);
        break;
      case 'health-timeout':
        this.#event(slot, instance, `${label} has been unhealthy for longer than its health timeout (${this.#opts.healthTimeoutMs ?? 30_000} ms): ${instance.healthReason}`);
        try {
          this.#opts.onHealthTimeout?.(instance.plugin, type, instance.healthReason);
        } catch (err) {
          this.#logger.error({ err: describeError(err) }, 'onHealthTimeout failed');
        }
        break;
    }
    if (instance === slot.current && instance.healthy && slot.previous) {
      // Handover done: the new instance serves.
      this.#retire(slot.previous);
      slot.previous = undefined;
    }
    this.#pushReport(slot);
    this.#notify();
  }

  #pushReport(slot: Slot): void {
    const report = pluginReport(slot, this.#clock.now());
    const { updatedAt: _, ...content } = report;
    const json = JSON.stringify(content);
    if (json === slot.lastReport) return;
    slot.lastReport = json;
    this.#callUpdate(slot.type, slot.name, report);
  }

  #callUpdate(type: CsiPluginType, pluginId: string, report: CsiPluginReport | null): void {
    try {
      this.#opts.updateNodePlugin(type, pluginId, report);
    } catch (err) {
      this.#logger.error({ err: describeError(err), type, plugin: pluginId }, 'updateNodePlugin failed');
    }
  }

  #event(slot: Slot, instance: InstanceManager, message: string): void {
    const details = eventDetails(slot, instance);
    try {
      this.#opts.emitNodeEvent({ at: this.#clock.now(), subsystem: 'csi', message, details });
    } catch (err) {
      this.#logger.error({ err: describeError(err) }, 'emitNodeEvent failed');
    }
  }

  #notify(): void {
    const listeners = [...this.#changeListeners];
    this.#changeListeners.clear();
    for (const l of listeners) l();
  }

  #nextChange(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.#changeListeners.delete(listener);
        reject(new AbortedError('waiting for a CSI plugin was aborted', { cause: signal?.reason }));
      };
      const listener = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.#changeListeners.add(listener);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  // ---- what the volume managers ask of the serving instance ------------------

  #servingClient(name: string): CsiClient {
    const slot = this.#slots.get(slotKey('csi-node', name));
    if (!slot) throw new CsiManagerError('CSI_PLUGIN_NOT_FOUND', name, `CSI plugin "${name}" not found: no csi-node registration of it on this node`);
    // No volume call goes to an instance that is not healthy, even through a
    // volume manager handed out earlier: its attempt is not sent, and retried later.
    const instance = servingInstance(slot);
    if (!instance.client || !instance.healthy) {
      throw new CsiManagerError('CSI_PLUGIN_UNHEALTHY', name, `CSI plugin "${name}" is not healthy: ${instance.healthReason}`);
    }
    return instance.client;
  }

  #servingNodeCapabilities(name: string): NodeCapability[] {
    const slot = this.#slots.get(slotKey('csi-node', name));
    return slot ? [...(servingInstance(slot).fingerprint?.node?.capabilities ?? [])] : [];
  }
}

