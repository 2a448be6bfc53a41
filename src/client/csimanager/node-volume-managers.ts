// The node plugins' volume managers of the CSI manager: one per node plugin
// name for the manager's life (it outlives the plugin's instances, so a
// restart or update never loses mount state), its mount root resolved, built,
// started and stopped here. Which instance serves it is the CSI manager's.

import { createHash } from 'node:crypto';
import path from 'node:path';
import type { CsiClient, NodeCapability } from '../../csi/index.js';
import { describeError, type Clock, type Logger } from '../../lib/index.js';
import type { RegisteredPlugin } from '../dynamicplugins/index.js';
import type { ClientStateStore } from '../state/index.js';
import { VolumeManager, type VolumeManagerOptions } from '../volumes/index.js';
import { CsiManagerError } from './errors.js';

/**
 * What the CSI manager gives a node plugin's volume manager when it builds
 * one. Its `getClient` throws CsiManagerError (CSI_PLUGIN_NOT_FOUND,
 * CSI_PLUGIN_UNHEALTHY) when no healthy instance serves, so that no volume
 * call is sent to an unhealthy plugin; `getCapabilities` is [] before the
 * first fingerprint.
 */
export type VolumeManagerParams = Pick<
  VolumeManagerOptions,
  'pluginId' | 'getClient' | 'store' | 'mountRoot' | 'pluginMountRoot' | 'getCapabilities' | 'logger' | 'clock'
>;

/** The lifecycle the CSI manager drives on a volume manager. */
export interface ManagedVolumeManager {
  /** Loads records; must not tear anything down. */
  start(): Promise<void>;
  /** Waits for in-flight calls; safe twice. */
  stop(): Promise<void>;
}

export interface VolumeManagerEntry<VM> {
  vm: VM | undefined;
  starting: Promise<void>;
  ready: boolean;
  error: unknown;
  /** The plugin's mount root on this host, resolved. */
  mountRoot?: string;
}

export interface NodeVolumeManagersOptions<VM extends ManagedVolumeManager> {
  store: ClientStateStore;
  /** CsiManagerOptions.createVolumeManager. */
  createVolumeManager: ((params: VolumeManagerParams) => VM) | undefined;
  /** CsiManagerOptions.csiRoot. */
  csiRoot: string | undefined;
  logger: Logger;
  clock: Clock;
  /** The client of the healthy instance serving node plugin `name`; throws CsiManagerError when none does. */
  servingClient: (name: string) => CsiClient;
  /** The node capabilities of the instance serving node plugin `name` ([] when none). */
  servingNodeCapabilities: (name: string) => NodeCapability[];
  /** Told when a volume manager finished loading its records. */
  onReady: () => void;
}

/** The volume manager entries by node plugin name. */
export class NodeVolumeManagers<VM extends ManagedVolumeManager> {
  readonly #opts: NodeVolumeManagersOptions<VM>;
  readonly #volumeManagers = new Map<string, VolumeManagerEntry<VM>>();

  constructor(opts: NodeVolumeManagersOptions<VM>) {
    this.#opts = opts;
  }

  /** The entry of node plugin `id`, if one was ever made. */
  get(id: string): VolumeManagerEntry<VM> | undefined {
    return this.#volumeManagers.get(id);
  }

  /** CsiManager.volumeManagerForTeardown. */
  forTeardown(id: string): VM {
    const entry = this.#volumeManagers.get(id);
    if (!entry?.vm) throw new CsiManagerError('CSI_PLUGIN_NOT_FOUND', id, `CSI plugin "${id}" has no volume manager on this node`);
    if (!entry.ready) throw new CsiManagerError('CSI_PLUGIN_UNHEALTHY', id, `CSI plugin "${id}" is not ready: its volume manager is still loading its records`);
    return entry.vm;
  }

  /** Each node plugin's mount root on this host (under it, its stagings and publications), for the mount inventory. */
  mountRoots(): Array<{ pluginId: string; root: string }> {
    return [...this.#volumeManagers].flatMap(([pluginId, e]) => (e.mountRoot ? [{ pluginId, root: e.mountRoot }] : []));
  }

  /** Stops every volume manager, each once its start is done. */
  stopAll(): Array<Promise<void>> {
    return [...this.#volumeManagers.values()].map(async (e) => {
      await e.starting;
      await e.vm?.stop();
    });
  }

  ensure(plugin: RegisteredPlugin): void {
    if (this.#volumeManagers.has(plugin.name)) return;
    const mountRoot = plugin.options.mountRoot ?? (this.#opts.csiRoot ? path.join(this.#opts.csiRoot, 'node', safeName(plugin.name)) : undefined);
    const entry: VolumeManagerEntry<VM> = { vm: undefined, starting: Promise.resolve(), ready: false, error: undefined, ...(mountRoot ? { mountRoot: path.resolve(mountRoot) } : {}) };
    this.#volumeManagers.set(plugin.name, entry);
    if (!mountRoot) {
      this.#opts.logger.warn({ plugin: plugin.name }, 'node plugin registration names no mount root; it cannot mount volumes');
      return;
    }
    const name = plugin.name;
    const params: VolumeManagerParams = {
      pluginId: name,
      getClient: () => this.#opts.servingClient(name),
      store: this.#opts.store,
      mountRoot,
      getCapabilities: () => this.#opts.servingNodeCapabilities(name),
      logger: this.#opts.logger,
      clock: this.#opts.clock,
    };
    if (plugin.options.pluginMountRoot) params.pluginMountRoot = plugin.options.pluginMountRoot;
    try {
      entry.vm = this.#opts.createVolumeManager ? this.#opts.createVolumeManager(params) : (new VolumeManager(params) as unknown as VM);
    } catch (err) {
      entry.error = err;
      this.#opts.logger.error({ plugin: name, err: describeError(err) }, 'cannot create the volume manager');
      return;
    }
    const vm = entry.vm;
    entry.starting = vm.start().then(
      () => {
        entry.ready = true;
        this.#opts.onReady();
      },
      (err: unknown) => {
        entry.error = err;
        this.#opts.logger.error({ plugin: name, err: describeError(err) }, 'volume manager failed to start');
      },
    );
  }
}

/** A plugin name made safe as one path component: escaped, or hashed when that is not enough. */
export function safeName(name: string): string {
  const escaped = name.replace(/[^A-Za-z0-9_.-]/g, (c) => `%${c.codePointAt(0)!.toString(16).padStart(2, '0')}`);
  if (escaped === '' || escaped === '.' || escaped === '..' || escaped.length > 120) {
    return `h-${createHash('sha256').update(name).digest('hex').slice(0, 32)}`;
  }
  return escaped;
}
