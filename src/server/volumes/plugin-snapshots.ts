// A plugin's snapshots through its controller (CreateSnapshot of a
// registered volume, DeleteSnapshot by its exact ID, ListSnapshots) and the
// volumes the plugin itself lists (ListVolumes): controller calls routed to a
// healthy controller, nothing written to the state store. Apart from the
// volume registry (volume-registry.ts), which owns the volumes' rows and the
// operations that change them.

import { listAllPages, type CsiSnapshot, type ListedVolume } from '../../csi/index.js';
import type { Logger } from '../../lib/index.js';
import { snapshotCreationSchema, snapshotDeletionSchema, snapshotListingSchema } from '../../structs/index.js';
import type { StateStore } from '../state/index.js';
import { ControllerCallError, type ControllerRouter } from './controller-router.js';
import { VolumeError } from './errors.js';
import { whereItLives } from './_volume-topology.js';
import { parse } from './_volume-draft.js';
import { needController, pluginRow, volumeRow } from './_volume-rows.js';

export interface PluginSnapshotsOptions {
  store: StateStore;
  /** Routes controller calls to a healthy controller of the plugin. */
  router: ControllerRouter;
  logger: Logger;
}

/** ABORTED on a routed list means a stale paging token: the listing starts again. */
function staleToken(err: unknown): boolean {
  return err instanceof ControllerCallError && err.lastCode === 'CSI_ABORTED';
}

/**
 * A plugin's snapshots and its own list of volumes. Every method takes an
 * AbortSignal and throws VolumeError (or ControllerCallError, a VolumeError)
 * with a stable code: INVALID for a bad input (naming the `field`) or a
 * controller that lacks the capability, UNAVAILABLE while no controller runs.
 */
export class PluginSnapshots {
  readonly #deps: PluginSnapshotsOptions;

  constructor(opts: PluginSnapshotsOptions) {
    this.#deps = opts;
  }

  /** CreateSnapshot of a registered volume, with the volume's secrets. INVALID names a bad `name` or `parameters`. */
  async createSnapshot(
    namespace: string,
    volumeId: string,
    name: string,
    opts: { parameters?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<CsiSnapshot> {
    const v = volumeRow(this.#deps.store, namespace, volumeId);
    needController(pluginRow(this.#deps.store, v.pluginId), 'CREATE_DELETE_SNAPSHOT', 'snapshot volumes');
    const req = parse(snapshotCreationSchema, { name, parameters: opts.parameters });
    const { snapshot } = await this.#deps.router.call(
      v.pluginId,
      'csi.controller.createSnapshot',
      { pluginId: v.pluginId, sourceVolumeId: v.externalId, name: req.name, parameters: { ...req.parameters }, secrets: v.secrets },
      { topology: whereItLives(v), ...(opts.signal ? { signal: opts.signal } : {}) },
    );
    return snapshot;
  }

  /**
   * DeleteSnapshot of the snapshot with exactly this ID. When the plugin can
   * list snapshots, the snapshot is first looked up by its ID: an ID it
   * does not know (a prefix, a typo) is NOT_FOUND and nothing is deleted.
   * When it cannot list, a NOT_FOUND answer to DeleteSnapshot is NOT_FOUND
   * too (a plugin that answers OK for an unknown ID cannot be told apart:
   * `verified` is false then). INVALID names a bad `snapshotId` or `secrets`.
   */
  async deleteSnapshot(
    pluginId: string,
    snapshotId: string,
    opts: { secrets?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<{ snapshotId: string; verified: boolean }> {
    const plugin = pluginRow(this.#deps.store, pluginId);
    needController(plugin, 'CREATE_DELETE_SNAPSHOT', 'delete snapshots');
    const req = parse(snapshotDeletionSchema, { snapshotId, secrets: opts.secrets });
    const secrets = { ...req.secrets };
    const signal = opts.signal ? { signal: opts.signal } : {};
    const notFound = (): VolumeError =>
      new VolumeError('NOT_FOUND', `plugin ${pluginId} has no snapshot with ID "${req.snapshotId}" (give the exact ID; see volume snapshot list)`, {
        field: 'snapshotId',
      });
    const verified = plugin.controllerCapabilities.includes('LIST_SNAPSHOTS');
    if (verified) {
      const page = await this.#deps.router.call(pluginId, 'csi.controller.listSnapshots', { pluginId, snapshotId: req.snapshotId, secrets }, signal);
      if (!page.entries.some((snap) => snap.snapshotId === req.snapshotId)) throw notFound();
    }
    const { alreadyDone } = await this.#deps.router.call(pluginId, 'csi.controller.deleteSnapshot', { pluginId, snapshotId: req.snapshotId, secrets }, signal);
    if (alreadyDone && !verified) throw notFound();
    this.#deps.logger.info({ pluginId, snapshotId: req.snapshotId }, 'snapshot deleted');
    return { snapshotId: req.snapshotId, verified };
  }

  /**
   * Every snapshot the plugin lists (all pages), optionally of one
   * registered volume (sent with the volume's secrets; else with `secrets`).
   */
  async listSnapshots(
    pluginId: string,
    opts: { namespace?: string; volumeId?: string; secrets?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<CsiSnapshot[]> {
    needController(pluginRow(this.#deps.store, pluginId), 'LIST_SNAPSHOTS', 'list snapshots');
    const source = opts.volumeId ? volumeRow(this.#deps.store, opts.namespace ?? 'default', opts.volumeId) : undefined;
    const secrets = source?.secrets ?? { ...parse(snapshotListingSchema, { secrets: opts.secrets }).secrets };
    return listAllPages(
      (startingToken) =>
        this.#deps.router.call(
          pluginId,
          'csi.controller.listSnapshots',
          { pluginId, ...(source ? { sourceVolumeId: source.externalId } : {}), ...(startingToken ? { startingToken } : {}), secrets },
          opts.signal ? { signal: opts.signal } : {},
        ),
      { staleToken },
    );
  }

  /** Every volume the plugin itself lists (ListVolumes, all pages). */
  async listPluginVolumes(pluginId: string, opts: { signal?: AbortSignal } = {}): Promise<ListedVolume[]> {
    needController(pluginRow(this.#deps.store, pluginId), 'LIST_VOLUMES', 'list volumes');
    return listAllPages(
      (startingToken) =>
        this.#deps.router.call(pluginId, 'csi.controller.listVolumes', { pluginId, ...(startingToken ? { startingToken } : {}) }, opts.signal ? { signal: opts.signal } : {}),
      { staleToken },
    );
  }
}
