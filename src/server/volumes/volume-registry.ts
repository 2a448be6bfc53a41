// The volume registry: the volumes the server knows, read with their claims
// (no secrets), registered, created, deleted, expanded and deregistered,
// through the plugin's controller where the operation needs it. A plugin's
// snapshots and its own list of volumes are apart (plugin-snapshots.ts);
// VolumeService (volume-service.ts) is the door over both.

import { checkValidation } from '../../csi/index.js';
import { describeError, type Logger } from '../../lib/index.js';
import {
  pluginSchedulable,
  publicClaim,
  publicVolume,
  volumeCreationSchema,
  volumeExpansionSchema,
  volumeRegistrationSchema,
  type PublicVolume,
  type Volume,
  type VolumeClaim,
  type VolumeCreation,
  type VolumeRegistration,
} from '../../structs/index.js';
import type { NodeConnections } from '../noderpc/index.js';
import { keyPrefix, rowKey, type StateReader, type StateStore } from '../state/index.js';
import type { ClaimRelease } from './claim-release.js';
import type { ControllerRouter } from './controller-router.js';
import { VolumeError } from './errors.js';
import { requireNamespace } from '../namespaces/index.js';
import { capabilityOf, capabilityWire } from './_wire.js';
import { whereItLives } from './_volume-topology.js';
import { draftOf, parse, refuseSecondOwner, type VolumeDraft } from './_volume-draft.js';
import { needController, pluginRow, volumeRow } from './_volume-rows.js';

/** A volume as every read shows it: no secrets, plus what is derived. */
export type VolumeView = PublicVolume & {
  /** A healthy node plugin exists, and a healthy controller when claims need one. */
  schedulable: boolean;
  /** Every claim not yet free, publish contexts redacted. */
  claims: VolumeClaim[];
};

export interface VolumeRegistryOptions {
  store: StateStore;
  /** For NodeExpandVolume on the nodes that have a volume claimed. */
  connections: NodeConnections;
  /** Routes controller calls to a healthy controller of the plugin. */
  router: ControllerRouter;
  /** Releases the claims of a volume deregistered with force. */
  release: ClaimRelease;
  logger: Logger;
  /** Deadline of one server-to-node call. */
  callTimeoutMs: number;
}

/** `1.0 GiB`, for messages. */
function sizeWords(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let n = bytes;
  let u = 0;
  while (n >= 1024 && u < units.length - 1) {
    n /= 1024;
    u++;
  }
  return u === 0 ? `${n} bytes` : `${n.toFixed(1)} ${units[u]}`;
}

/**
 * The volumes the server knows and their controller operations: reads (the
 * public view, no secrets), registration validated through the plugin's
 * controller, create/delete, expansion, and deregistration.
 * Every async method takes an AbortSignal and throws VolumeError (or
 * ControllerCallError, a VolumeError) with a stable code; a bad input is
 * INVALID with the offending `field`.
 */
/** Nomad's refusal of a volume in a namespace that does not exist. */
function unknownNamespace(v: VolumeDraft): string {
  return `volume ${v.id} is in nonexistent namespace ${v.namespace}`;
}

export class VolumeRegistry {
  readonly #deps: VolumeRegistryOptions;

  constructor(opts: VolumeRegistryOptions) {
    this.#deps = opts;
  }

  // ---- reads ----------------------------------------------------------------

  /** The volume's public view, or undefined. */
  get(namespace: string, id: string, snap: StateReader = this.#deps.store.snapshot()): VolumeView | undefined {
    const v = snap.get('volumes', rowKey(namespace, id));
    return v && this.#view(snap, v);
  }

  /** Every volume's public view, optionally of one namespace or plugin. */
  list(opts: { namespace?: string; pluginId?: string } = {}, snap: StateReader = this.#deps.store.snapshot()): VolumeView[] {
    // Every claim read once, grouped by volume (in key order, as each volume's own list has them),
    // not the whole claims table once per volume: 1,000 volumes with a claim each read a million rows.
    const claims = new Map<string, VolumeClaim[]>();
    for (const c of snap.list('claims', opts.namespace ? { prefix: keyPrefix(opts.namespace) } : {})) {
      const key = rowKey(c.namespace, c.volumeId);
      const list = claims.get(key);
      if (list) list.push(c);
      else claims.set(key, [c]);
    }
    return snap
      .list('volumes', {
        ...(opts.namespace ? { prefix: keyPrefix(opts.namespace) } : {}),
        ...(opts.pluginId ? { filter: (v: Volume) => v.pluginId === opts.pluginId } : {}),
      })
      .map((v) => this.#view(snap, v, claims.get(rowKey(v.namespace, v.id)) ?? []));
  }

  /** Every claim not yet free (public view), optionally of one volume or node. */
  claims(filter: { namespace?: string; volumeId?: string; nodeId?: string } = {}): VolumeClaim[] {
    const prefix = filter.namespace && filter.volumeId ? keyPrefix(filter.namespace, filter.volumeId) : undefined;
    return this.#deps.store
      .snapshot()
      .list('claims', { ...(prefix ? { prefix } : {}), ...(filter.nodeId ? { filter: (c: VolumeClaim) => c.nodeId === filter.nodeId } : {}) })
      .map(publicClaim);
  }

  /** `claims`: the volume's claims, when the caller read them already. */
  #view(snap: StateReader, v: Volume, claims = snap.list('claims', { prefix: keyPrefix(v.namespace, v.id) })): VolumeView {
    const plugin = snap.get('plugins', rowKey(v.pluginId));
    return {
      ...publicVolume(v),
      schedulable: pluginSchedulable(plugin),
      claims: claims.map(publicClaim),
    };
  }

  /** The view of a volume just written; NOT_FOUND if it went away meanwhile. */
  #written(namespace: string, id: string): VolumeView {
    const view = this.get(namespace, id);
    if (!view) throw new VolumeError('NOT_FOUND', `volume ${id} does not exist in namespace ${namespace}`);
    return view;
  }

  // ---- registration ---------------------------------------------------------------

  /**
   * Registers an existing volume. When the plugin runs a controller, the
   * capabilities are first checked with ValidateVolumeCapabilities through a
   * connected controller, with the spec's semantics (an empty `confirmed`
   * is "not validated", with the plugin's message). Re-registering the same
   * volume updates it unless the plugin or external ID changed (CONFLICT).
   * A plugin volume belongs to at most one Berth volume: an external ID of
   * the plugin that another Berth volume has is refused (CONFLICT naming
   * it), checked in the same write, so two concurrent registrations cannot
   * both win. Throws VolumeError INVALID (bad field, unknown plugin, failed
   * validation), CONFLICT, UNAVAILABLE (no controller reachable).
   */
  async register(input: VolumeRegistration, opts: { signal?: AbortSignal } = {}): Promise<VolumeView> {
    const checked = parse(volumeRegistrationSchema, input);
    const draft = draftOf(checked, checked.externalId);
    const plugin = pluginRow(this.#deps.store, draft.pluginId);
    // Refused before the plugin is asked; checked again in the write, where a namespace deleted meanwhile shows.
    requireNamespace(this.#deps.store.snapshot(), draft.namespace, unknownNamespace(draft));
    if (Object.keys(plugin.controllers).length > 0) await this.#validate(draft, opts.signal);
    const { result } = await this.#deps.store.write((txn) => {
      requireNamespace(txn, draft.namespace, unknownNamespace(draft));
      const existing = txn.get('volumes', rowKey(draft.namespace, draft.id));
      if (existing && (existing.pluginId !== draft.pluginId || existing.externalId !== draft.externalId)) {
        throw new VolumeError('CONFLICT', `volume ${draft.id} is already registered with another plugin or external ID`);
      }
      refuseSecondOwner(txn, draft, draft.externalId, 'externalId');
      return txn.put('volumes', { ...draft, provider: plugin.provider, capacityBytes: existing?.capacityBytes ?? draft.capacityBytes });
    });
    this.#deps.logger.info({ volumeId: draft.id, namespace: draft.namespace, pluginId: draft.pluginId }, 'volume registered');
    return this.#written(result.namespace, result.id);
  }

  async #validate(v: VolumeDraft, signal: AbortSignal | undefined): Promise<void> {
    const capabilities = v.capabilities.map((c) => capabilityWire(v, c));
    const answer = await this.#deps.router.call(
      v.pluginId,
      'csi.controller.validate',
      { pluginId: v.pluginId, volumeId: v.externalId, volumeContext: v.context, capabilities, parameters: v.parameters, secrets: v.secrets },
      { topology: whereItLives(v), ...(signal ? { signal } : {}) },
    );
    const verdict = checkValidation(
      {
        volumeCapabilities: capabilities.map((c, i) => capabilityOf(c, `capabilities[${i}]`)),
        volumeContext: v.context,
        parameters: v.parameters,
      },
      {
        message: answer.message ?? '',
        ...(answer.confirmed
          ? {
              confirmed: {
                volumeContext: answer.confirmed.volumeContext ?? {},
                volumeCapabilities: (answer.confirmed.capabilities ?? []).map((c, i) => capabilityOf(c, `confirmed.capabilities[${i}]`)),
                parameters: answer.confirmed.parameters ?? {},
                mutableParameters: answer.confirmed.mutableParameters ?? {},
              },
            }
          : {}),
      },
    );
    if (!verdict.validated) {
      throw new VolumeError('INVALID', `volume ${v.id} was not validated by plugin ${v.pluginId}: ${verdict.reason}`, { field: 'capabilities' });
    }
  }

  /**
   * Removes a volume. Refuses with CONFLICT while claims exist, unless
   * `force`: then every claim is released first (best effort, as far as the
   * nodes and controllers allow) and whatever is left is dropped. Throws
   * NOT_FOUND for an unknown volume. Does not delete the plugin's volume.
   */
  async deregister(namespace: string, id: string, opts: { force?: boolean; signal?: AbortSignal } = {}): Promise<void> {
    const key = rowKey(namespace, id);
    const snap = this.#deps.store.snapshot();
    if (!snap.get('volumes', key)) throw new VolumeError('NOT_FOUND', `volume ${id} does not exist in namespace ${namespace}`);
    const claims = snap.list('claims', { prefix: keyPrefix(namespace, id) });
    if (claims.length > 0 && !opts.force) {
      throw new VolumeError('CONFLICT', `volume ${id} has ${claims.length} claim(s); release them or deregister with force`, { retryable: true });
    }
    for (const c of claims) {
      try {
        await this.#deps.release.release(namespace, id, c.allocId, { reason: 'volume deregistered (forced)', ...(opts.signal ? { signal: opts.signal } : {}) });
      } catch (err) {
        this.#deps.logger.warn({ volumeId: id, allocId: c.allocId, err: describeError(err) }, 'forced deregister: claim release failed; dropping the claim');
      }
    }
    await this.#deps.store.write((txn) => {
      for (const c of txn.list('claims', { prefix: keyPrefix(namespace, id) })) txn.delete('claims', rowKey(namespace, id, c.allocId));
      txn.delete('volumes', key);
      // Its condition goes with it (src/server/volumehealth).
      txn.delete('volumeConditions', key);
    });
    this.#deps.logger.info({ volumeId: id, namespace }, 'volume deregistered');
  }

  // ---- controller operations ----------------------------------------------------------

  /**
   * Creates a volume through the plugin's controller (CreateVolume, which
   * the spec makes idempotent by name) and registers it. Throws INVALID when
   * the input is bad or the plugin cannot create volumes, CONFLICT when the
   * ID is taken, when another volume of the plugin has the same name, or
   * when the plugin answers with a volume another Berth volume has (which
   * is left as it is: it holds the other volume's data).
   */
  async create(input: VolumeCreation, opts: { signal?: AbortSignal } = {}): Promise<VolumeView> {
    const checked = parse(volumeCreationSchema, input);
    const draft = draftOf(checked, '');
    const plugin = pluginRow(this.#deps.store, draft.pluginId);
    needController(plugin, 'CREATE_DELETE_VOLUME', 'create volumes');
    const snap = this.#deps.store.snapshot();
    requireNamespace(snap, draft.namespace, unknownNamespace(draft));
    if (snap.get('volumes', rowKey(draft.namespace, draft.id))) {
      throw new VolumeError('CONFLICT', `volume ${draft.id} already exists in namespace ${draft.namespace}`);
    }
    // CreateVolume is idempotent by name: the same name would hand back the plugin volume another Berth volume has.
    const sameName = snap.list('volumes', { filter: (v: Volume) => v.pluginId === draft.pluginId && v.name === draft.name })[0];
    if (sameName) {
      throw new VolumeError(
        'CONFLICT',
        `volume ${sameName.id} (namespace ${sameName.namespace}) already has plugin ${draft.pluginId}'s volume named "${draft.name}"; give this volume another name`,
        { field: 'name' },
      );
    }
    const contentSource = checked.contentSource;
    const { volume } = await this.#deps.router.call(
      draft.pluginId,
      'csi.controller.create',
      {
        pluginId: draft.pluginId,
        name: draft.name,
        capacityRange: {
          ...(draft.capacityMinBytes ? { requiredBytes: draft.capacityMinBytes } : {}),
          ...(draft.capacityMaxBytes ? { limitBytes: draft.capacityMaxBytes } : {}),
        },
        capabilities: draft.capabilities.map((c) => capabilityWire(draft, c)),
        parameters: draft.parameters,
        secrets: draft.secrets,
        ...(contentSource ? { contentSource } : {}),
        ...(draft.topologyRequest ? { accessibilityRequirements: { requisite: draft.topologyRequest.required, preferred: draft.topologyRequest.preferred } } : {}),
      },
      { topology: whereItLives(draft), ...(opts.signal ? { signal: opts.signal } : {}) },
    );
    // If the plugin handed back a volume another Berth volume has, it is that one's: refused, and not deleted.
    const { result } = await this.#deps.store.write((txn) => {
      requireNamespace(txn, draft.namespace, unknownNamespace(draft));
      refuseSecondOwner(txn, draft, volume.volumeId, 'name');
      return txn.put('volumes', {
        ...draft,
        externalId: volume.volumeId,
        provider: plugin.provider,
        capacityBytes: volume.capacityBytes,
        // The context given at create, with what the plugin returned over it.
        context: { ...draft.context, ...volume.volumeContext },
        accessibleTopology: volume.accessibleTopology,
        ...(contentSource ? { contentSource } : {}),
      });
    });
    this.#deps.logger.info({ volumeId: draft.id, namespace: draft.namespace, pluginId: draft.pluginId }, 'volume created');
    return this.#written(result.namespace, result.id);
  }

  /**
   * Deletes the volume through the controller (DeleteVolume; NOT_FOUND counts
   * as done) and forgets it. Refuses with CONFLICT while claims exist.
   */
  async delete(namespace: string, id: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    const v = volumeRow(this.#deps.store, namespace, id);
    if (this.#deps.store.snapshot().list('claims', { prefix: keyPrefix(namespace, id) }).length > 0) {
      throw new VolumeError('CONFLICT', `volume ${id} has claims; it cannot be deleted`, { retryable: true });
    }
    needController(pluginRow(this.#deps.store, v.pluginId), 'CREATE_DELETE_VOLUME', 'delete volumes');
    await this.#deps.router.call(
      v.pluginId,
      'csi.controller.delete',
      { pluginId: v.pluginId, volumeId: v.externalId, secrets: v.secrets },
      { topology: whereItLives(v), ...(opts.signal ? { signal: opts.signal } : {}) },
    );
    await this.#deps.store.write((txn) => {
      txn.delete('volumes', rowKey(namespace, id));
      txn.delete('volumeConditions', rowKey(namespace, id));
    });
    this.#deps.logger.info({ volumeId: id, namespace }, 'volume deleted');
  }

  /**
   * Grows a volume: ControllerExpandVolume, then NodeExpandVolume on every
   * node that has it claimed when the plugin asks for node expansion (a
   * node that mounts it later expands when it stages). Returns the new view.
   * Refuses (INVALID naming `requiredBytes`) a size not larger than the
   * capacity the volume has, or larger than its `capacityMaxBytes` (which
   * also bounds what the plugin may give). Throws INVALID naming
   * `requiredBytes` or `limitBytes`; UNAVAILABLE when a node fails to
   * expand after the controller did.
   */
  async expand(
    namespace: string,
    id: string,
    range: { requiredBytes: number; limitBytes?: number },
    opts: { signal?: AbortSignal } = {},
  ): Promise<VolumeView> {
    const v = volumeRow(this.#deps.store, namespace, id);
    const checked = parse(volumeExpansionSchema, range);
    if (v.capacityBytes > 0 && checked.requiredBytes <= v.capacityBytes) {
      throw new VolumeError(
        'INVALID',
        `volume ${id} already has ${v.capacityBytes} bytes (${sizeWords(v.capacityBytes)}); expand takes a size larger than that, and ${checked.requiredBytes} bytes is not`,
        { field: 'requiredBytes' },
      );
    }
    if (v.capacityMaxBytes > 0 && checked.requiredBytes > v.capacityMaxBytes) {
      throw new VolumeError(
        'INVALID',
        `volume ${id} may grow to at most ${v.capacityMaxBytes} bytes (${sizeWords(v.capacityMaxBytes)}, its capacity_max); ${checked.requiredBytes} bytes is more`,
        { field: 'requiredBytes' },
      );
    }
    const limitBytes = Math.min(...[checked.limitBytes, v.capacityMaxBytes].filter((n): n is number => typeof n === 'number' && n > 0));
    const capacityRange = { requiredBytes: checked.requiredBytes, ...(Number.isFinite(limitBytes) ? { limitBytes } : {}) };
    needController(pluginRow(this.#deps.store, v.pluginId), 'EXPAND_VOLUME', 'expand volumes');
    const cap = v.capabilities[0] ? capabilityWire(v, v.capabilities[0]) : undefined;
    const res = await this.#deps.router.call(
      v.pluginId,
      'csi.controller.expand',
      { pluginId: v.pluginId, volumeId: v.externalId, capacityRange, secrets: v.secrets, ...(cap ? { capability: cap } : {}) },
      { topology: whereItLives(v), ...(opts.signal ? { signal: opts.signal } : {}) },
    );
    let capacityBytes = res.capacityBytes;
    if (res.nodeExpansionRequired) {
      const nodes = new Set(this.#deps.store.snapshot().list('claims', { prefix: keyPrefix(namespace, id), filter: (c) => c.state === 'taken' }).map((c) => c.nodeId));
      for (const nodeId of nodes) {
        try {
          const r = await this.#deps.connections.call(
            nodeId,
            'csi.node.expand',
            { pluginId: v.pluginId, volumeId: v.externalId, namespace, berthVolumeId: id, capacityRange, secrets: v.secrets, ...(cap ? { capability: cap } : {}) },
            { timeoutMs: this.#deps.callTimeoutMs, ...(opts.signal ? { signal: opts.signal } : {}) },
          );
          capacityBytes = Math.max(capacityBytes, r.capacityBytes);
        } catch (err) {
          throw new VolumeError('UNAVAILABLE', `volume ${id} grew on the controller, but node ${nodeId} failed to expand it: ${describeError(err)}`, {
            retryable: true,
            cause: err,
          });
        }
      }
    }
    await this.#deps.store.write((txn) => {
      const cur = txn.get('volumes', rowKey(namespace, id));
      if (cur) txn.put('volumes', { ...cur, capacityBytes });
    });
    return this.#written(namespace, id);
  }
}
