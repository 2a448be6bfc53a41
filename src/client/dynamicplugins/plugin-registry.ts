// The dynamic plugin registry: which storage plugins run on this node, as
// allocations, and where their sockets are (Nomad's client/dynamicplugins).
// An allocation that runs a CSI plugin registers it once its task started and
// deregisters it when the task stops. Several allocations may run the same
// plugin at once (during an update): the most recent registration serves.

import path from 'node:path';
import { AbortedError, BerthError, silentLogger, systemClock, type Clock, type Logger } from '../../lib/index.js';
import type { CsiPluginType } from '../../structs/index.js';
import type { Bucket, ClientStateStore } from '../state/index.js';
import { EventQueue } from './_event-queue.js';

/** The client state bucket holding registrations. */
export const REGISTRATIONS_BUCKET = 'plugin-registrations';

/** The registration types the registry knows; a monolith registers both. */
export const PLUGIN_TYPES: readonly CsiPluginType[] = ['csi-controller', 'csi-node'];

/** Options of a registration: how the plugin sees the node. */
export interface PluginOptions {
  /** The storage provider the job declared (informational; the fingerprint gives the real one). */
  provider?: string;
  /** Host path of the plugin's mount root (node plugins): staging/ and per-alloc/ live here. */
  mountRoot?: string;
  /** The same directory as the plugin sees it inside its task; default: mountRoot. */
  pluginMountRoot?: string;
}

/** What an allocation tells the registry when its plugin task has started. */
export interface PluginRegistration {
  type: CsiPluginType;
  /** The plugin ID users name in jobs and volumes. */
  name: string;
  /** The vendor version the job declared. */
  version: string;
  /** Absolute host path of the plugin's unix socket. */
  socketPath: string;
  /** The allocation that runs the plugin. */
  allocId: string;
  options?: PluginOptions;
}

/** A registration as the registry keeps it. */
export interface RegisteredPlugin extends PluginRegistration {
  options: PluginOptions;
  /** clock.now() when it was registered. */
  registeredAt: number;
  /** Registration order: larger is more recent; survives a restart. */
  seq: number;
}

/** One change of the registry, as subscribers see it. */
export interface PluginEvent {
  kind: 'registered' | 'deregistered';
  plugin: RegisteredPlugin;
  /** The registration serving (type, name) after this change; undefined when none is left. */
  serving: RegisteredPlugin | undefined;
}

export type PluginRegistryErrorCode = 'PLUGIN_BAD_REGISTRATION' | 'PLUGIN_WAIT_TIMEOUT' | 'PLUGIN_REGISTRY_CLOSED';

/** A refused registration, a wait that timed out, or a registry used after close(). */
export class PluginRegistryError extends BerthError<PluginRegistryErrorCode> {}

export interface PluginRegistryOptions {
  store: ClientStateStore;
  logger?: Logger;
  /** Stamps registrations and times waitForPlugin; injectable for tests. */
  clock?: Clock;
}

export interface SubscribeOptions {
  /** Ends the iteration (it finishes, it does not throw). */
  signal?: AbortSignal;
  /** Only events about plugins of this type. */
  type?: CsiPluginType;
}

export interface WaitForPluginOptions {
  signal?: AbortSignal;
  /** Milliseconds to wait at most; default: until `signal` fires. */
  timeout?: number;
}

interface Waiter {
  type: CsiPluginType;
  name: string;
  resolve: (plugin: RegisteredPlugin) => void;
  reject: (err: unknown) => void;
}

const keyOf = (type: string, name: string, allocId: string): string =>
  `${type}/${encodeURIComponent(name)}/${encodeURIComponent(allocId)}`;
const pluginKey = (type: string, name: string): string => `${type}/${name}`;

/**
 * The registry of plugins run by allocations on this node. Every change is
 * written to the client state store before the call returns, and a new
 * registry over the same store comes back with the same registrations.
 *
 * Calls are synchronous and safe from any number of callers; subscribers
 * see every change in order, each through its own unbounded queue.
 */
export class PluginRegistry {
  readonly #bucket: Bucket<RegisteredPlugin>;
  readonly #logger: Logger;
  readonly #clock: Clock;
  /** `type/name` -> registrations, most recent first. */
  readonly #plugins = new Map<string, RegisteredPlugin[]>();
  readonly #subscribers = new Set<{ queue: EventQueue<PluginEvent>; type: CsiPluginType | undefined }>();
  readonly #waiters = new Set<Waiter>();
  #seq = 0;
  #closed = false;

  /** Loads the registrations kept in `store`. Throws ClientStateError when the store cannot be read. */
  constructor(opts: PluginRegistryOptions) {
    this.#bucket = opts.store.bucket<RegisteredPlugin>(REGISTRATIONS_BUCKET);
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'plugin-registry' });
    this.#clock = opts.clock ?? systemClock;
    for (const { value } of this.#bucket.list()) {
      this.#insert(value);
      this.#seq = Math.max(this.#seq, value.seq);
    }
  }

  /**
   * Registers an allocation's plugin. Registering the same allocation again
   * with the same details is a no-op (returns false, no event); with other
   * details it replaces the earlier registration and becomes the most recent.
   * Throws PluginRegistryError PLUGIN_BAD_REGISTRATION for a malformed
   * registration, PLUGIN_REGISTRY_CLOSED after close().
   */
  register(registration: PluginRegistration): boolean {
    this.#open();
    checkRegistration(registration);
    const list = this.#plugins.get(pluginKey(registration.type, registration.name)) ?? [];
    const existing = list.find((p) => p.allocId === registration.allocId);
    if (existing && sameRegistration(existing, registration)) return false;
    const plugin: RegisteredPlugin = {
      type: registration.type,
      name: registration.name,
      version: registration.version,
      socketPath: registration.socketPath,
      allocId: registration.allocId,
      options: { ...registration.options },
      registeredAt: this.#clock.now(),
      seq: this.#seq + 1,
    };
    this.#bucket.put(keyOf(plugin.type, plugin.name, plugin.allocId), plugin);
    this.#seq = plugin.seq;
    if (existing) this.#remove(existing);
    this.#insert(plugin);
    this.#logger.info({ type: plugin.type, plugin: plugin.name, allocId: plugin.allocId, socketPath: plugin.socketPath }, 'plugin registered');
    const serving = this.serving(plugin.type, plugin.name);
    this.#publish({ kind: 'registered', plugin, serving });
    for (const w of [...this.#waiters]) if (w.type === plugin.type && w.name === plugin.name && serving) w.resolve(serving);
    return true;
  }

  /**
   * Removes an allocation's registration of (type, name). Returns whether it
   * was there; an allocation that never registered (its task crashed first)
   * is no error and raises no event. Safe to repeat.
   */
  deregister(type: CsiPluginType, name: string, allocId: string): boolean {
    this.#open();
    const plugin = this.#plugins.get(pluginKey(type, name))?.find((p) => p.allocId === allocId);
    if (!plugin) return false;
    this.#bucket.delete(keyOf(type, name, allocId));
    this.#remove(plugin);
    this.#logger.info({ type, plugin: name, allocId }, 'plugin deregistered');
    this.#publish({ kind: 'deregistered', plugin, serving: this.serving(type, name) });
    return true;
  }

  /** Removes every registration of one allocation (a monolith has two); returns how many. Safe to repeat. */
  deregisterAlloc(allocId: string): number {
    let n = 0;
    for (const p of this.registrations().filter((r) => r.allocId === allocId)) {
      if (this.deregister(p.type, p.name, p.allocId)) n += 1;
    }
    return n;
  }

  /** The registration serving (type, name): the most recent one; undefined when none. */
  serving(type: CsiPluginType, name: string): RegisteredPlugin | undefined {
    const p = this.#plugins.get(pluginKey(type, name))?.[0];
    return p ? copy(p) : undefined;
  }

  /** Every serving registration, of one type or all, ordered by type then name. */
  servingPlugins(type?: CsiPluginType): RegisteredPlugin[] {
    return [...this.#plugins.values()]
      .map((list) => list[0] as RegisteredPlugin)
      .filter((p) => !type || p.type === type)
      .sort(byTypeAndName)
      .map(copy);
  }

  /**
   * Every registration kept, serving or not; of (type, name) when given, most
   * recent first; otherwise ordered by type, name, then most recent first.
   */
  registrations(type?: CsiPluginType, name?: string): RegisteredPlugin[] {
    if (type && name !== undefined) return (this.#plugins.get(pluginKey(type, name)) ?? []).map(copy);
    return [...this.#plugins.values()]
      .flat()
      .filter((p) => !type || p.type === type)
      .sort((a, b) => byTypeAndName(a, b) || b.seq - a.seq)
      .map(copy);
  }

  /**
   * Every change from now on, in order, none dropped (each subscriber has an
   * unbounded queue), until `signal` fires, the loop breaks or the registry
   * is closed; then the iteration finishes. Never throws.
   */
  subscribe(opts: SubscribeOptions = {}): AsyncIterableIterator<PluginEvent, undefined> {
    const entry = { queue: undefined as unknown as EventQueue<PluginEvent>, type: opts.type };
    const onAbort = (): void => entry.queue.end();
    entry.queue = new EventQueue<PluginEvent>(() => {
      this.#subscribers.delete(entry);
      opts.signal?.removeEventListener('abort', onAbort);
    });
    if (this.#closed || opts.signal?.aborted) {
      entry.queue.end();
      return entry.queue;
    }
    this.#subscribers.add(entry);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    return entry.queue;
  }

  /** How many subscriptions are open. */
  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  /**
   * Resolves with the serving registration of (type, name) as soon as there
   * is one (at once if there is). Event-driven: nothing polls. Rejects with
   * PluginRegistryError PLUGIN_WAIT_TIMEOUT after `timeout` ms, AbortedError
   * when `signal` fires, PLUGIN_REGISTRY_CLOSED when the registry closes.
   */
  waitForPlugin(type: CsiPluginType, name: string, opts: WaitForPluginOptions = {}): Promise<RegisteredPlugin> {
    const now = this.serving(type, name);
    if (now) return Promise.resolve(now);
    if (this.#closed) return Promise.reject(closedError());
    if (opts.signal?.aborted) return Promise.reject(new AbortedError(`waiting for ${type} plugin "${name}" was aborted`, { cause: opts.signal.reason }));
    return new Promise<RegisteredPlugin>((resolve, reject) => {
      const stopTimer = new AbortController();
      const finish = (): void => {
        this.#waiters.delete(waiter);
        stopTimer.abort();
        opts.signal?.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        type,
        name,
        resolve: (plugin) => {
          finish();
          resolve(plugin);
        },
        reject: (err) => {
          finish();
          reject(err);
        },
      };
      const onAbort = (): void => waiter.reject(new AbortedError(`waiting for ${type} plugin "${name}" was aborted`, { cause: opts.signal?.reason }));
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.add(waiter);
      if (opts.timeout !== undefined) {
        const timeout = opts.timeout;
        this.#clock.sleep(timeout, stopTimer.signal).then(
          () =>
            waiter.reject(
              new PluginRegistryError('PLUGIN_WAIT_TIMEOUT', `${type} plugin "${name}" did not register within ${timeout} ms`),
            ),
          () => undefined,
        );
      }
    });
  }

  /**
   * Ends every subscription and rejects every waitForPlugin with
   * PLUGIN_REGISTRY_CLOSED. Registrations stay in the store. Safe twice.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const s of [...this.#subscribers]) s.queue.end();
    for (const w of [...this.#waiters]) w.reject(closedError());
  }

  #open(): void {
    if (this.#closed) throw closedError();
  }

  #insert(plugin: RegisteredPlugin): void {
    const key = pluginKey(plugin.type, plugin.name);
    const list = this.#plugins.get(key) ?? [];
    list.push(plugin);
    list.sort((a, b) => b.seq - a.seq);
    this.#plugins.set(key, list);
  }

  #remove(plugin: RegisteredPlugin): void {
    const key = pluginKey(plugin.type, plugin.name);
    const list = (this.#plugins.get(key) ?? []).filter((p) => p !== plugin);
    if (list.length) this.#plugins.set(key, list);
    else this.#plugins.delete(key);
  }

  #publish(event: PluginEvent): void {
    for (const s of this.#subscribers) {
      if (s.type && s.type !== event.plugin.type) continue;
      s.queue.push({ kind: event.kind, plugin: copy(event.plugin), serving: event.serving && copy(event.serving) });
    }
  }
}

function closedError(): PluginRegistryError {
  return new PluginRegistryError('PLUGIN_REGISTRY_CLOSED', 'the plugin registry is closed');
}

function copy(p: RegisteredPlugin): RegisteredPlugin {
  return { ...p, options: { ...p.options } };
}

function byTypeAndName(a: RegisteredPlugin, b: RegisteredPlugin): number {
  return a.type.localeCompare(b.type) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

function sameRegistration(a: PluginRegistration, b: PluginRegistration): boolean {
  const opts = (o: PluginOptions = {}): string => JSON.stringify([o.provider ?? null, o.mountRoot ?? null, o.pluginMountRoot ?? null]);
  return a.version === b.version && a.socketPath === b.socketPath && opts(a.options) === opts(b.options);
}

function checkRegistration(r: PluginRegistration): void {
  const bad = (msg: string): PluginRegistryError => new PluginRegistryError('PLUGIN_BAD_REGISTRATION', `plugin registration refused: ${msg}`);
  if (!PLUGIN_TYPES.includes(r.type)) throw bad(`unknown type ${JSON.stringify(r.type)} (expected ${PLUGIN_TYPES.join(' or ')})`);
  if (typeof r.name !== 'string' || r.name === '') throw bad('name is empty');
  if (typeof r.allocId !== 'string' || r.allocId === '') throw bad(`${r.type} plugin "${r.name}": allocation ID is empty`);
  if (typeof r.socketPath !== 'string' || !path.isAbsolute(r.socketPath)) {
    throw bad(`${r.type} plugin "${r.name}": socket path must be absolute, got ${JSON.stringify(r.socketPath)}`);
  }
  for (const field of ['mountRoot', 'pluginMountRoot'] as const) {
    const v = r.options?.[field];
    if (v !== undefined && !path.isAbsolute(v)) throw bad(`${r.type} plugin "${r.name}": ${field} must be absolute, got ${JSON.stringify(v)}`);
  }
}
