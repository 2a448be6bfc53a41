// The node's dynamic host volumes (Nomad's client/hostvolumemanager): runs
// the plugin a server call names, keeps each volume in the client state
// before answering (so a restart, even after a kill -9, finds it), reports
// the volumes and the plugins' versions for the node's fingerprint, and
// restores every volume at start by asking its plugin to create it again
// (plugins are idempotent; a registered volume's path is checked).

import { readdir } from 'node:fs/promises';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';
import { describeError, silentLogger, systemClock, type Clock, type Logger } from '../../lib/index.js';
import { hostVolumePluginAttribute, MKDIR_PLUGIN_ID, type NodeHostVolume } from '../../structs/index.js';
import type { Bucket, ClientStateStore } from '../state/index.js';
import { HostVolumeError } from './errors.js';
import { openExternalPlugin } from './external-plugin.js';
import type { HostVolumePlugin, HostVolumeRequest } from './host-volume-plugin.js';
import { MkdirPlugin } from './mkdir-plugin.js';

/** The client state bucket of dynamic host volumes, by volume ID. */
export const HOST_VOLUMES_BUCKET = 'dynamicHostVolumes';

/** A dynamic host volume as the node keeps it (Nomad's HostVolumeState). */
export interface HostVolumeRecord {
  /** The create request (or the register one, with pluginId ''). */
  request: HostVolumeRequest;
  pluginId: string;
  hostPath: string;
}

export interface HostVolumeManagerOptions {
  store: ClientStateStore;
  /** Where plugins put volumes (client `host_volumes_dir`); `mkdir` makes `<dir>/<volume ID>`. */
  volumesDir: string;
  /** Where external plugins live (client `host_volume_plugin_dir`); '' for none. */
  pluginDir: string;
  /** Called after a volume appeared or went, so the node's fingerprint is sent again. */
  onChange?: () => void;
  logger?: Logger;
  clock?: Clock;
}

/** How often the plugin dir is scanned again for the fingerprint. */
const PLUGIN_SCAN_MS = 30_000;

/**
 * See the file comment. Operations on one volume name are serialized by
 * the server (one call per volume at a time); a second volume of the same
 * name on this node is refused (CLIENT_HOST_VOLUME_NAME_EXISTS).
 */
export class HostVolumeManager {
  readonly #o: HostVolumeManagerOptions;
  readonly #bucket: Bucket<HostVolumeRecord>;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #mkdir: MkdirPlugin;
  /** Volume name -> what the fingerprint reports (volumes restored or made since start). */
  readonly #volumes = new Map<string, NodeHostVolume>();
  /** Volume name -> the ID holding it (Nomad's volLocker). */
  readonly #names = new Map<string, string>();
  #plugins: Record<string, string> = {};
  #scannedAt = -Infinity;

  constructor(opts: HostVolumeManagerOptions) {
    this.#o = opts;
    this.#bucket = opts.store.bucket<HostVolumeRecord>(HOST_VOLUMES_BUCKET);
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'host-volumes' });
    this.#clock = opts.clock ?? systemClock;
    this.#mkdir = new MkdirPlugin(opts.volumesDir);
  }

  /**
   * Restores every recorded volume (its plugin's create again; a registered
   * one's path checked) and scans the plugins. A volume that cannot be
   * restored is logged and left out of the fingerprint (the server then
   * shows it unavailable); never throws.
   */
  async start(): Promise<void> {
    await this.refreshPlugins(true);
    await Promise.all(
      this.#bucket.list().map(async ({ value: rec }) => {
        const { request: req } = rec;
        this.#names.set(req.name, req.id);
        try {
          if (!rec.pluginId) {
            await stat(rec.hostPath);
            this.#volumes.set(req.name, { path: rec.hostPath, readOnly: false, id: req.id });
          } else {
            const made = await (await this.#plugin(rec.pluginId)).create(req);
            this.#volumes.set(req.name, { path: made.path, readOnly: false, id: req.id });
          }
        } catch (err) {
          this.#log.error({ volumeId: req.id, volumeName: req.name, pluginId: rec.pluginId, err: describeError(err) }, 'failed to restore a dynamic host volume');
        }
      }),
    );
  }

  /** Host volumes for the fingerprint, by name. Does not block. */
  volumes(): Record<string, NodeHostVolume> {
    return Object.fromEntries(this.#volumes);
  }

  /** The path of dynamic host volume `name` on this node, if it has it. Does not block. */
  pathOf(name: string): string | undefined {
    return this.#volumes.get(name)?.path;
  }

  /** `plugins.host_volume.<id>.version` for `mkdir` and every external plugin that answered its fingerprint. Does not block. */
  pluginAttributes(): Record<string, string> {
    if (this.#clock.now() - this.#scannedAt > PLUGIN_SCAN_MS) void this.refreshPlugins();
    const out: Record<string, string> = {};
    for (const [id, version] of Object.entries(this.#plugins)) out[hostVolumePluginAttribute(id)] = version;
    return out;
  }

  /** Scans the plugin dir again (at most every 30 s unless `force`); resolves when done; never throws. */
  async refreshPlugins(force = false): Promise<void> {
    const now = this.#clock.now();
    if (!force && now - this.#scannedAt < PLUGIN_SCAN_MS) return;
    this.#scannedAt = now;
    const found: Record<string, string> = { [MKDIR_PLUGIN_ID]: await this.#mkdir.fingerprint() };
    const dir = this.#o.pluginDir;
    let files: string[] = [];
    try {
      files = dir ? await readdir(dir) : [];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.#log.warn({ dir, err: describeError(err) }, 'error finding host volume plugins');
    }
    await Promise.all(
      files.map(async (file) => {
        try {
          await access(path.join(dir, file), constants.X_OK);
          if (!(await stat(path.join(dir, file))).isFile()) return;
        } catch {
          return;
        }
        try {
          const plugin = await openExternalPlugin({ pluginDir: dir, id: file, volumesDir: this.#o.volumesDir, logger: this.#log });
          found[file] = await plugin.fingerprint({ signal: AbortSignal.timeout(1_000) });
        } catch (err) {
          this.#log.warn({ pluginId: file, err: describeError(err) }, 'host volume plugin did not fingerprint');
        }
      }),
    );
    const changed = JSON.stringify(found) !== JSON.stringify(this.#plugins);
    this.#plugins = found;
    if (changed && Number.isFinite(this.#scannedAt) && !force) this.#o.onChange?.();
  }

  /**
   * Runs plugin `pluginId`'s create, records the volume, reports it.
   * Idempotent for the same ID. Rejects with HostVolumeError (unknown
   * plugin, name taken on this node by another ID, the plugin's failure).
   */
  async create(req: HostVolumeRequest & { pluginId: string }, opts: { signal?: AbortSignal } = {}): Promise<{ hostPath: string; capacityBytes: number }> {
    const plugin = await this.#plugin(req.pluginId);
    const isNew = this.#lockName(req.name, req.id);
    const request = requestOf(req);
    let made;
    try {
      made = await plugin.create(request, opts);
    } catch (err) {
      if (isNew) this.#names.delete(req.name);
      throw err;
    }
    try {
      this.#bucket.put(req.id, { request, pluginId: req.pluginId, hostPath: made.path });
    } catch (err) {
      // Not recorded: undo a first create so that nothing is left the node does not know of.
      if (isNew) {
        await plugin.delete({ ...request, createdPath: made.path }).catch((e: unknown) => this.#log.warn({ volumeId: req.id, err: describeError(e) }, 'error deleting volume after state store failure'));
        this.#names.delete(req.name);
      }
      throw err;
    }
    this.#volumes.set(req.name, { path: made.path, readOnly: false, id: req.id });
    this.#o.onChange?.();
    this.#log.info({ volumeId: req.id, volumeName: req.name, pluginId: req.pluginId, path: made.path }, 'dynamic host volume created');
    return { hostPath: made.path, capacityBytes: made.bytes };
  }

  /** Records an existing path as the volume (Nomad's Register). Rejects with HostVolumeError when the path is missing or the name taken. */
  async register(req: Omit<HostVolumeRequest, 'capacityMinBytes' | 'capacityMaxBytes'> & { hostPath: string }): Promise<void> {
    const isNew = this.#lockName(req.name, req.id);
    try {
      await stat(req.hostPath);
    } catch (err) {
      if (isNew) this.#names.delete(req.name);
      throw new HostVolumeError('CLIENT_HOST_VOLUME_PATH_MISSING', `could not verify host path for "${req.name}": ${describeError(err)}`, { cause: err });
    }
    this.#bucket.put(req.id, { request: requestOf({ ...req, capacityMinBytes: 0, capacityMaxBytes: 0 }), pluginId: '', hostPath: req.hostPath });
    this.#volumes.set(req.name, { path: req.hostPath, readOnly: false, id: req.id });
    this.#o.onChange?.();
    this.#log.info({ volumeId: req.id, volumeName: req.name, path: req.hostPath }, 'dynamic host volume registered');
  }

  /** The plugin deletes the volume (none for a registered one), then the node forgets it. Safe to repeat. Rejects with HostVolumeError. */
  async delete(req: Omit<HostVolumeRequest, 'capacityMinBytes' | 'capacityMaxBytes'> & { pluginId: string; hostPath: string }, opts: { signal?: AbortSignal } = {}): Promise<void> {
    if (req.pluginId) {
      const plugin = await this.#plugin(req.pluginId);
      await plugin.delete({ ...requestOf({ ...req, capacityMinBytes: 0, capacityMaxBytes: 0 }), createdPath: req.hostPath }, opts);
    }
    this.#bucket.delete(req.id);
    if (this.#names.get(req.name) === req.id) {
      this.#names.delete(req.name);
      this.#volumes.delete(req.name);
    }
    this.#o.onChange?.();
    this.#log.info({ volumeId: req.id, volumeName: req.name, pluginId: req.pluginId }, 'dynamic host volume deleted');
  }

  /** Takes `name` for `id`; true when it was free. Throws when another volume holds it. */
  #lockName(name: string, id: string): boolean {
    const holder = this.#names.get(name);
    if (holder !== undefined && holder !== id) throw new HostVolumeError('CLIENT_HOST_VOLUME_NAME_EXISTS', `volume name already exists on this node: "${name}" is volume ${holder}`);
    this.#names.set(name, id);
    return holder === undefined;
  }

  async #plugin(id: string): Promise<HostVolumePlugin> {
    if (id === MKDIR_PLUGIN_ID) return this.#mkdir;
    return openExternalPlugin({ pluginDir: this.#o.pluginDir, id, volumesDir: this.#o.volumesDir, logger: this.#log });
  }
}

function requestOf(r: HostVolumeRequest): HostVolumeRequest {
  return {
    id: r.id,
    name: r.name,
    namespace: r.namespace,
    nodeId: r.nodeId,
    nodePool: r.nodePool,
    capacityMinBytes: r.capacityMinBytes,
    capacityMaxBytes: r.capacityMaxBytes,
    parameters: { ...r.parameters },
  };
}
