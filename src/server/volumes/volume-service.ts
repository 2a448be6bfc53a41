import { ACCESS_MODES, ATTACHMENT_MODES, checkValidation, type CsiSnapshot, type ListedVolume, type Topology } from '../../csi/index.js';
import { describeError, silentLogger, systemClock, type Clock, type Logger } from '../../lib/index.js';
import {
  isClientTerminal,
  modeAllows,
  nodeClaimAnswer,
  pluginSchedulable,
  publicClaim,
  publicVolume,
  type ClaimMode,
  type CsiPlugin,
  type NodeClaimAnswer,
  type PublicVolume,
  type Volume,
  type VolumeCapabilitySpec,
  type VolumeClaim,
} from '../../structs/index.js';
import { clearNodeExhausted, markNodeExhausted } from '../plugins/index.js';
import type { NodeConnections } from '../noderpc/index.js';
import { keyPrefix, rowKey, type StateReader, type StateStore, type WriteTxn } from '../state/index.js';
import { capabilityOf, capabilityWire } from './_wire.js';
import { ControllerCallError, ControllerRouter } from './controller-router.js';
import { KeyedSerial } from './_serial.js';
import { VolumeError } from './errors.js';

/** What users send to register an existing volume. */
export interface VolumeRegistration {
  id: string;
  namespace?: string;
  name?: string;
  externalId: string;
  pluginId: string;
  capacityMinBytes?: number;
  capacityMaxBytes?: number;
  capabilities: VolumeCapabilitySpec[];
  mountOptions?: { fsType?: string; mountFlags?: string[] };
  secrets?: Record<string, string>;
  parameters?: Record<string, string>;
  context?: Record<string, string>;
  topologyRequest?: { required?: Topology[]; preferred?: Topology[] };
}

/** What users send to create a volume through the plugin's controller. */
export type VolumeCreation = Omit<VolumeRegistration, 'externalId'> & {
  contentSource?: { snapshotId: string } | { volumeId: string };
};

/** A volume as every read shows it: no secrets, plus what is derived. */
export type VolumeView = PublicVolume & {
  /** A healthy node plugin exists, and a healthy controller when claims need one. */
  schedulable: boolean;
  /** Every claim not yet free, publish contexts redacted. */
  claims: VolumeClaim[];
};

export interface ClaimRequest {
  namespace?: string;
  volumeId: string;
  allocId: string;
  mode: ClaimMode;
  /** Default: the volume's first capability (of a matching attachment mode, when given). */
  accessMode?: string;
  attachmentMode?: string;
}

export interface VolumeServiceOptions {
  store: StateStore;
  connections: NodeConnections;
  clock?: Clock;
  logger?: Logger;
  /** Deadline of one server-to-node call. Default 60 s. */
  callTimeoutMs?: number;
}

type Txn = WriteTxn;

const SINGLE_NODE = new Set(['single-node-writer', 'single-node-reader-only', 'single-node-single-writer', 'single-node-multi-writer']);
const SINGLE_WRITER = new Set(['single-node-writer', 'single-node-single-writer', 'multi-node-single-writer']);

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function stringMap(x: unknown, field: string): Record<string, string> {
  if (x === undefined) return {};
  if (!isObject(x) || Object.values(x).some((v) => typeof v !== 'string')) {
    throw new VolumeError('INVALID', `${field} must map strings to strings`, { field });
  }
  return { ...(x as Record<string, string>) };
}

function nonEmpty(x: unknown, field: string): string {
  if (typeof x !== 'string' || x.length === 0) throw new VolumeError('INVALID', `${field} is required`, { field });
  return x;
}

function bytes(x: unknown, field: string): number {
  if (x === undefined) return 0;
  if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) {
    throw new VolumeError('INVALID', `${field} must be a whole number of bytes`, { field });
  }
  return x;
}

/**
 * CSI volumes and their claims: registration (validated through the
 * plugin's controller), create/delete/snapshot/expand through the
 * controller, claims enforced per access mode with ControllerPublish routed
 * to a healthy controller, and the checkpointed release state machine
 * (taken -> unpublishing -> node-detached -> controller-detached -> free)
 * that a new service over the same store resumes.
 *
 * Every read returns the public view (no secrets, mount flags redacted).
 * Every async method takes an AbortSignal and throws VolumeError (or
 * ControllerCallError, a VolumeError) with a stable code.
 */
export class VolumeService {
  readonly #store: StateStore;
  readonly #connections: NodeConnections;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  readonly router: ControllerRouter;
  /** One claim or release step at a time per volume. */
  readonly #perVolume = new KeyedSerial();
  readonly #releasing = new Map<string, Promise<void>>();
  /** Claims whose ControllerPublish is in flight in this process. */
  readonly #publishing = new Set<string>();

  constructor(opts: VolumeServiceOptions) {
    this.#store = opts.store;
    this.#connections = opts.connections;
    this.#clock = opts.clock ?? systemClock;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'volumes' });
    this.#timeoutMs = opts.callTimeoutMs ?? 60_000;
    this.router = new ControllerRouter({
      store: opts.store,
      connections: opts.connections,
      logger: this.#logger,
      callTimeoutMs: this.#timeoutMs,
    });
  }

  // ---- reads ----------------------------------------------------------------

  /** The volume's public view, or undefined. */
  get(namespace: string, id: string, snap: StateReader = this.#store.snapshot()): VolumeView | undefined {
    const v = snap.get('volumes', rowKey(namespace, id));
    return v && this.#view(snap, v);
  }

  /** Every volume's public view, optionally of one namespace or plugin. */
  list(opts: { namespace?: string; pluginId?: string } = {}, snap: StateReader = this.#store.snapshot()): VolumeView[] {
    return snap
      .list('volumes', {
        ...(opts.namespace ? { prefix: keyPrefix(opts.namespace) } : {}),
        ...(opts.pluginId ? { filter: (v: Volume) => v.pluginId === opts.pluginId } : {}),
      })
      .map((v) => this.#view(snap, v));
  }

  /** Every claim not yet free (public view), optionally of one volume. */
  claims(filter: { namespace?: string; volumeId?: string; nodeId?: string } = {}): VolumeClaim[] {
    const prefix = filter.namespace && filter.volumeId ? keyPrefix(filter.namespace, filter.volumeId) : undefined;
    return this.#store
      .snapshot()
      .list('claims', { ...(prefix ? { prefix } : {}), ...(filter.nodeId ? { filter: (c: VolumeClaim) => c.nodeId === filter.nodeId } : {}) })
      .map(publicClaim);
  }

  #view(snap: StateReader, v: Volume): VolumeView {
    const plugin = snap.get('plugins', rowKey(v.pluginId));
    return {
      ...publicVolume(v),
      schedulable: pluginSchedulable(plugin),
      claims: snap.list('claims', { prefix: keyPrefix(v.namespace, v.id) }).map(publicClaim),
    };
  }

  // ---- registration ---------------------------------------------------------------

  /**
   * Registers an existing volume. When the plugin runs a controller, the
   * capabilities are first checked with ValidateVolumeCapabilities through a
   * connected controller, with the spec's semantics (an empty `confirmed`
   * is "not validated", with the plugin's message). Re-registering the same
   * volume updates it unless the plugin or external ID changed (CONFLICT).
   * Throws VolumeError INVALID (bad field, unknown plugin, failed
   * validation), UNAVAILABLE (no controller reachable).
   */
  async register(input: VolumeRegistration, opts: { signal?: AbortSignal } = {}): Promise<VolumeView> {
    const draft = this.#draft(input, nonEmpty(input?.externalId, 'externalId'));
    const plugin = this.#plugin(draft.pluginId);
    if (Object.keys(plugin.controllers).length > 0) await this.#validate(draft, opts.signal);
    const { result } = this.#store.write((txn) => {
      const existing = txn.get('volumes', rowKey(draft.namespace, draft.id));
      if (existing && (existing.pluginId !== draft.pluginId || existing.externalId !== draft.externalId)) {
        throw new VolumeError('CONFLICT', `volume ${draft.id} is already registered with another plugin or external ID`);
      }
      return txn.put('volumes', { ...draft, provider: plugin.provider, capacityBytes: existing?.capacityBytes ?? draft.capacityBytes });
    });
    this.#logger.info({ volumeId: draft.id, namespace: draft.namespace, pluginId: draft.pluginId }, 'volume registered');
    return this.get(result.namespace, result.id)!;
  }

  #draft(input: VolumeRegistration | VolumeCreation, externalId: string): Omit<Volume, 'createIndex' | 'modifyIndex'> {
    if (!isObject(input)) throw new VolumeError('INVALID', 'a volume spec must be an object');
    const id = nonEmpty(input.id, 'id');
    const pluginId = nonEmpty(input.pluginId, 'pluginId');
    const namespace = input.namespace ?? 'default';
    if (!Array.isArray(input.capabilities) || input.capabilities.length === 0) {
      throw new VolumeError('INVALID', 'capabilities must list at least one access mode and attachment mode', { field: 'capabilities' });
    }
    const capabilities = input.capabilities.map((c, i) => {
      const field = `capabilities[${i}]`;
      if (!isObject(c)) throw new VolumeError('INVALID', `${field} must be an object`, { field });
      if (!(ACCESS_MODES as readonly unknown[]).includes(c.accessMode)) {
        throw new VolumeError('INVALID', `${field}.accessMode "${String(c.accessMode)}" is not one of ${ACCESS_MODES.join(', ')}`, { field: `${field}.accessMode` });
      }
      if (!(ATTACHMENT_MODES as readonly unknown[]).includes(c.attachmentMode)) {
        throw new VolumeError('INVALID', `${field}.attachmentMode "${String(c.attachmentMode)}" is not one of ${ATTACHMENT_MODES.join(', ')}`, {
          field: `${field}.attachmentMode`,
        });
      }
      return { accessMode: c.accessMode, attachmentMode: c.attachmentMode };
    });
    const mountFlags = input.mountOptions?.mountFlags ?? [];
    if (!Array.isArray(mountFlags) || mountFlags.some((f) => typeof f !== 'string' || f === '')) {
      throw new VolumeError('INVALID', 'mountOptions.mountFlags must be non-empty strings', { field: 'mountOptions.mountFlags' });
    }
    const fsType = input.mountOptions?.fsType ?? '';
    if ((fsType || mountFlags.length) && capabilities.every((c) => c.attachmentMode === 'block-device')) {
      throw new VolumeError('INVALID', 'mountOptions apply to file-system volumes only', { field: 'mountOptions' });
    }
    const capacityMinBytes = bytes(input.capacityMinBytes, 'capacityMinBytes');
    const capacityMaxBytes = bytes(input.capacityMaxBytes, 'capacityMaxBytes');
    if (capacityMaxBytes > 0 && capacityMinBytes > capacityMaxBytes) {
      throw new VolumeError('INVALID', 'capacityMinBytes exceeds capacityMaxBytes', { field: 'capacityMinBytes' });
    }
    const topo = input.topologyRequest;
    return {
      id,
      namespace,
      name: input.name ?? id,
      externalId,
      pluginId,
      provider: '',
      capacityMinBytes,
      capacityMaxBytes,
      capacityBytes: 0,
      capabilities,
      mountOptions: { fsType, mountFlags: [...mountFlags] },
      secrets: stringMap(input.secrets, 'secrets'),
      parameters: stringMap(input.parameters, 'parameters'),
      context: stringMap((input as VolumeRegistration).context, 'context'),
      ...(topo ? { topologyRequest: { required: topo.required ?? [], preferred: topo.preferred ?? [] } } : {}),
      accessibleTopology: [],
    };
  }

  #plugin(pluginId: string): CsiPlugin {
    const plugin = this.#store.snapshot().get('plugins', rowKey(pluginId));
    if (!plugin) throw new VolumeError('INVALID', `unknown plugin "${pluginId}": no node runs it`, { field: 'pluginId' });
    return plugin;
  }

  async #validate(v: Omit<Volume, 'createIndex' | 'modifyIndex'>, signal: AbortSignal | undefined): Promise<void> {
    const capabilities = v.capabilities.map((c) => capabilityWire(v, c));
    const answer = await this.router.call(
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
    const snap = this.#store.snapshot();
    if (!snap.get('volumes', key)) throw new VolumeError('NOT_FOUND', `volume ${id} does not exist in namespace ${namespace}`);
    const claims = snap.list('claims', { prefix: keyPrefix(namespace, id) });
    if (claims.length > 0 && !opts.force) {
      throw new VolumeError('CONFLICT', `volume ${id} has ${claims.length} claim(s); release them or deregister with force`, { retryable: true });
    }
    for (const c of claims) {
      try {
        await this.release(namespace, id, c.allocId, { reason: 'volume deregistered (forced)', ...(opts.signal ? { signal: opts.signal } : {}) });
      } catch (err) {
        this.#logger.warn({ volumeId: id, allocId: c.allocId, err: describeError(err) }, 'forced deregister: claim release failed; dropping the claim');
      }
    }
    this.#store.write((txn) => {
      for (const c of txn.list('claims', { prefix: keyPrefix(namespace, id) })) txn.delete('claims', rowKey(namespace, id, c.allocId));
      txn.delete('volumes', key);
    });
    this.#logger.info({ volumeId: id, namespace }, 'volume deregistered');
  }

  // ---- controller operations ----------------------------------------------------------

  #needController(plugin: CsiPlugin, capability: string, what: string): void {
    if (!plugin.controllerCapabilities.includes(capability as never)) {
      throw new VolumeError('INVALID', `plugin ${plugin.id} cannot ${what} (its controller does not advertise ${capability})`, { field: 'pluginId' });
    }
  }

  /**
   * Creates a volume through the plugin's controller (CreateVolume, which
   * the spec makes idempotent by name) and registers it. Throws INVALID when
   * the plugin cannot create volumes, CONFLICT when the ID is taken.
   */
  async create(input: VolumeCreation, opts: { signal?: AbortSignal } = {}): Promise<VolumeView> {
    const draft = this.#draft(input, '');
    const plugin = this.#plugin(draft.pluginId);
    this.#needController(plugin, 'CREATE_DELETE_VOLUME', 'create volumes');
    if (this.#store.snapshot().get('volumes', rowKey(draft.namespace, draft.id))) {
      throw new VolumeError('CONFLICT', `volume ${draft.id} already exists in namespace ${draft.namespace}`);
    }
    const { volume } = await this.router.call(
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
        ...(input.contentSource ? { contentSource: input.contentSource } : {}),
        ...(draft.topologyRequest ? { accessibilityRequirements: { requisite: draft.topologyRequest.required, preferred: draft.topologyRequest.preferred } } : {}),
      },
      { topology: whereItLives(draft), ...(opts.signal ? { signal: opts.signal } : {}) },
    );
    const { result } = this.#store.write((txn) =>
      txn.put('volumes', {
        ...draft,
        externalId: volume.volumeId,
        provider: plugin.provider,
        capacityBytes: volume.capacityBytes,
        context: { ...volume.volumeContext },
        accessibleTopology: volume.accessibleTopology,
        ...(input.contentSource ? { contentSource: input.contentSource } : {}),
      }),
    );
    this.#logger.info({ volumeId: draft.id, namespace: draft.namespace, pluginId: draft.pluginId }, 'volume created');
    return this.get(result.namespace, result.id)!;
  }

  /**
   * Deletes the volume through the controller (DeleteVolume; NOT_FOUND counts
   * as done) and forgets it. Refuses with CONFLICT while claims exist.
   */
  async delete(namespace: string, id: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    const v = this.#volume(namespace, id);
    if (this.#store.snapshot().list('claims', { prefix: keyPrefix(namespace, id) }).length > 0) {
      throw new VolumeError('CONFLICT', `volume ${id} has claims; it cannot be deleted`, { retryable: true });
    }
    this.#needController(this.#plugin(v.pluginId), 'CREATE_DELETE_VOLUME', 'delete volumes');
    await this.router.call(
      v.pluginId,
      'csi.controller.delete',
      { pluginId: v.pluginId, volumeId: v.externalId, secrets: v.secrets },
      { topology: whereItLives(v), ...(opts.signal ? { signal: opts.signal } : {}) },
    );
    this.#store.write((txn) => txn.delete('volumes', rowKey(namespace, id)));
    this.#logger.info({ volumeId: id, namespace }, 'volume deleted');
  }

  #volume(namespace: string, id: string): Volume {
    const v = this.#store.snapshot().get('volumes', rowKey(namespace, id));
    if (!v) throw new VolumeError('NOT_FOUND', `volume ${id} does not exist in namespace ${namespace}`);
    return v;
  }

  /** CreateSnapshot of a registered volume, with the volume's secrets. */
  async createSnapshot(
    namespace: string,
    volumeId: string,
    name: string,
    opts: { parameters?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<CsiSnapshot> {
    const v = this.#volume(namespace, volumeId);
    this.#needController(this.#plugin(v.pluginId), 'CREATE_DELETE_SNAPSHOT', 'snapshot volumes');
    const { snapshot } = await this.router.call(
      v.pluginId,
      'csi.controller.createSnapshot',
      { pluginId: v.pluginId, sourceVolumeId: v.externalId, name: nonEmpty(name, 'name'), parameters: stringMap(opts.parameters, 'parameters'), secrets: v.secrets },
      { topology: whereItLives(v), ...(opts.signal ? { signal: opts.signal } : {}) },
    );
    return snapshot;
  }

  /** DeleteSnapshot; NOT_FOUND counts as done. */
  async deleteSnapshot(pluginId: string, snapshotId: string, opts: { secrets?: Record<string, string>; signal?: AbortSignal } = {}): Promise<void> {
    this.#needController(this.#plugin(pluginId), 'CREATE_DELETE_SNAPSHOT', 'delete snapshots');
    await this.router.call(
      pluginId,
      'csi.controller.deleteSnapshot',
      { pluginId, snapshotId: nonEmpty(snapshotId, 'snapshotId'), secrets: stringMap(opts.secrets, 'secrets') },
      opts.signal ? { signal: opts.signal } : {},
    );
  }

  /** Every snapshot the plugin lists (all pages), optionally of one registered volume. */
  async listSnapshots(
    pluginId: string,
    opts: { namespace?: string; volumeId?: string; secrets?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<CsiSnapshot[]> {
    this.#needController(this.#plugin(pluginId), 'LIST_SNAPSHOTS', 'list snapshots');
    const source = opts.volumeId ? this.#volume(opts.namespace ?? 'default', opts.volumeId) : undefined;
    return this.#allPages((startingToken) =>
      this.router.call(
        pluginId,
        'csi.controller.listSnapshots',
        {
          pluginId,
          ...(source ? { sourceVolumeId: source.externalId } : {}),
          ...(startingToken ? { startingToken } : {}),
          secrets: source?.secrets ?? stringMap(opts.secrets, 'secrets'),
        },
        opts.signal ? { signal: opts.signal } : {},
      ),
    );
  }

  /** Every volume the plugin itself lists (ListVolumes, all pages). */
  async listPluginVolumes(pluginId: string, opts: { signal?: AbortSignal } = {}): Promise<ListedVolume[]> {
    this.#needController(this.#plugin(pluginId), 'LIST_VOLUMES', 'list volumes');
    return this.#allPages((startingToken) =>
      this.router.call(pluginId, 'csi.controller.listVolumes', { pluginId, ...(startingToken ? { startingToken } : {}) }, opts.signal ? { signal: opts.signal } : {}),
    );
  }

  async #allPages<T>(page: (token: string) => Promise<{ entries: T[]; nextToken: string }>): Promise<T[]> {
    // ABORTED on a list means a stale paging token: start again, a few times.
    for (let restart = 0; ; restart++) {
      const out: T[] = [];
      let token = '';
      try {
        do {
          const p = await page(token);
          out.push(...p.entries);
          token = p.nextToken;
        } while (token);
        return out;
      } catch (err) {
        if (restart < 3 && err instanceof ControllerCallError && err.lastCode === 'CSI_ABORTED') continue;
        throw err;
      }
    }
  }

  /**
   * Grows a volume: ControllerExpandVolume, then NodeExpandVolume on every
   * node that has it claimed when the plugin asks for node expansion (a
   * node that mounts it later expands when it stages). Returns the new view.
   */
  async expand(
    namespace: string,
    id: string,
    range: { requiredBytes: number; limitBytes?: number },
    opts: { signal?: AbortSignal } = {},
  ): Promise<VolumeView> {
    const v = this.#volume(namespace, id);
    const requiredBytes = bytes(range?.requiredBytes, 'requiredBytes');
    if (requiredBytes === 0) throw new VolumeError('INVALID', 'requiredBytes must be positive', { field: 'requiredBytes' });
    const capacityRange = { requiredBytes, ...(range.limitBytes ? { limitBytes: bytes(range.limitBytes, 'limitBytes') } : {}) };
    this.#needController(this.#plugin(v.pluginId), 'EXPAND_VOLUME', 'expand volumes');
    const cap = v.capabilities[0] ? capabilityWire(v, v.capabilities[0]) : undefined;
    const res = await this.router.call(
      v.pluginId,
      'csi.controller.expand',
      { pluginId: v.pluginId, volumeId: v.externalId, capacityRange, secrets: v.secrets, ...(cap ? { capability: cap } : {}) },
      { topology: whereItLives(v), ...(opts.signal ? { signal: opts.signal } : {}) },
    );
    let capacityBytes = res.capacityBytes;
    if (res.nodeExpansionRequired) {
      const nodes = new Set(this.#store.snapshot().list('claims', { prefix: keyPrefix(namespace, id), filter: (c) => c.state === 'taken' }).map((c) => c.nodeId));
      for (const nodeId of nodes) {
        try {
          const r = await this.#connections.call(
            nodeId,
            'csi.node.expand',
            { pluginId: v.pluginId, volumeId: v.externalId, namespace, berthVolumeId: id, capacityRange, secrets: v.secrets, ...(cap ? { capability: cap } : {}) },
            { timeoutMs: this.#timeoutMs, ...(opts.signal ? { signal: opts.signal } : {}) },
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
    this.#store.write((txn) => {
      const cur = txn.get('volumes', rowKey(namespace, id));
      if (cur) txn.put('volumes', { ...cur, capacityBytes });
    });
    return this.get(namespace, id)!;
  }

  // ---- claims -----------------------------------------------------------------------

  /**
   * Claims a volume for an allocation, on the allocation's node. Enforces the
   * access mode against every claim not yet free (claims still being
   * released count: the old node may still have it attached):
   * single-node-*: one node; *-reader-only: readers only; single-writer
   * modes: one writer; multi-node-multi-writer: any. When the plugin needs
   * ControllerPublish, the claim is recorded first (`pending`), then
   * published through a healthy controller with the node's external node ID,
   * and the publish context kept. Safe to repeat: the same allocation's
   * taken claim is returned as is.
   *
   * Throws VolumeError NOT_FOUND (volume/allocation), INVALID (mode the volume
   * does not offer, write on a read-only mode, terminal allocation),
   * CONFLICT retryable (another claim holds it; or attached elsewhere:
   * FAILED_PRECONDITION, nothing recorded), EXHAUSTED (node volume limit;
   * the node is marked exhausted for placement), UNAVAILABLE retryable (no
   * healthy plugin/controller; an uncertain publish is released).
   */
  async claim(req: ClaimRequest, opts: { signal?: AbortSignal } = {}): Promise<VolumeClaim> {
    return publicClaim(await this.#claim(req, opts));
  }

  /**
   * The node's own claim call: as `claim`, but answers what the node needs to
   * mount the volume (raw publish context, volume context, mount flags and
   * the volume's secrets for NodeStage/NodePublish). Only for the node role;
   * never for a read.
   */
  async claimForNode(req: ClaimRequest, opts: { signal?: AbortSignal } = {}): Promise<NodeClaimAnswer> {
    const claim = await this.#claim(req, opts);
    const v = this.#store.snapshot().get('volumes', rowKey(claim.namespace, claim.volumeId));
    if (!v) throw new VolumeError('NOT_FOUND', `volume ${claim.volumeId} does not exist in namespace ${claim.namespace}`);
    return nodeClaimAnswer(claim, v);
  }

  async #claim(req: ClaimRequest, opts: { signal?: AbortSignal }): Promise<VolumeClaim> {
    const namespace = req.namespace ?? 'default';
    const volumeKey = rowKey(namespace, req.volumeId);
    return this.#perVolume.run(volumeKey, async () => {
      const { result: taken } = this.#store.write((txn) => this.#take(txn, namespace, req));
      if (taken.controllerPublish !== 'pending') return taken;
      const key = rowKey(namespace, req.volumeId, req.allocId);
      this.#publishing.add(key);
      try {
        return await this.#publish(taken, opts.signal);
      } finally {
        this.#publishing.delete(key);
      }
    });
  }

  #take(txn: Txn, namespace: string, req: ClaimRequest): VolumeClaim {
    const v = txn.get('volumes', rowKey(namespace, req.volumeId));
    if (!v) throw new VolumeError('NOT_FOUND', `volume ${req.volumeId} does not exist in namespace ${namespace}`);
    if (req.mode !== 'read' && req.mode !== 'write') throw new VolumeError('INVALID', 'mode must be read or write', { field: 'mode' });
    const alloc = txn.get('allocations', rowKey(req.allocId));
    if (!alloc) throw new VolumeError('NOT_FOUND', `allocation ${req.allocId} does not exist`);
    if (isClientTerminal(alloc.clientStatus) || alloc.desiredStatus !== 'run') {
      throw new VolumeError('INVALID', `allocation ${req.allocId} is not running (${alloc.desiredStatus}/${alloc.clientStatus}); it cannot claim volumes`);
    }
    const nodeId = alloc.nodeId;
    const key = rowKey(namespace, req.volumeId, req.allocId);
    const mine = txn.get('claims', key);
    if (mine) {
      if (mine.state === 'taken' && mine.mode === req.mode && mine.controllerPublish !== 'pending') return mine;
      throw new VolumeError('CONFLICT', `allocation ${req.allocId} already has a ${mine.mode} claim on volume ${req.volumeId} (${mine.state})`, {
        retryable: mine.state !== 'taken',
      });
    }
    const cap = v.capabilities.find(
      (c) => (!req.accessMode || c.accessMode === req.accessMode) && (!req.attachmentMode || c.attachmentMode === req.attachmentMode),
    );
    if (!cap) {
      throw new VolumeError('INVALID', `volume ${req.volumeId} does not offer ${req.accessMode ?? 'any access mode'} with ${req.attachmentMode ?? 'any attachment mode'}`, {
        field: 'accessMode',
      });
    }
    if (!modeAllows(cap.accessMode, req.mode)) {
      throw new VolumeError('INVALID', `volume ${req.volumeId} is ${cap.accessMode}: it takes no write claims`, { field: 'mode' });
    }
    const plugin = txn.get('plugins', rowKey(v.pluginId));
    if (!pluginSchedulable(plugin)) {
      throw new VolumeError('UNAVAILABLE', `volume ${req.volumeId} is not schedulable: plugin ${v.pluginId} has no healthy ${plugin && plugin.nodesHealthy > 0 ? 'controller' : 'node plugin'}`, {
        retryable: true,
      });
    }
    const nodePlugin = plugin!.nodes[nodeId];
    if (!nodePlugin?.healthy) {
      throw new VolumeError('UNAVAILABLE', `node ${nodeId} has no healthy node plugin ${v.pluginId}`, { retryable: true });
    }
    const others = txn.list('claims', { prefix: keyPrefix(namespace, req.volumeId) });
    const modeInUse = others.find((c) => c.accessMode !== cap.accessMode || c.attachmentMode !== cap.attachmentMode);
    if (modeInUse) {
      throw new VolumeError('CONFLICT', `volume ${req.volumeId} is in use as ${modeInUse.accessMode}/${modeInUse.attachmentMode}`, { retryable: true });
    }
    if (SINGLE_NODE.has(cap.accessMode)) {
      const elsewhere = others.find((c) => c.nodeId !== nodeId);
      if (elsewhere) {
        throw new VolumeError(
          'CONFLICT',
          `volume ${req.volumeId} is ${cap.accessMode} and ${elsewhere.state === 'taken' ? 'claimed' : 'still being detached'} on node ${elsewhere.nodeId}`,
          { retryable: true },
        );
      }
    }
    if (req.mode === 'write' && SINGLE_WRITER.has(cap.accessMode)) {
      const writer = others.find((c) => c.mode === 'write');
      if (writer) {
        throw new VolumeError('CONFLICT', `volume ${req.volumeId} already has a writer (allocation ${writer.allocId}, ${writer.state})`, { retryable: true });
      }
    }
    const onNode = others.filter((c) => c.nodeId === nodeId);
    if (onNode.length === 0) {
      if (plugin!.exhaustedNodes[nodeId]) {
        throw new VolumeError('EXHAUSTED', `node ${nodeId} can take no more volumes of plugin ${v.pluginId}: ${plugin!.exhaustedNodes[nodeId]!.reason}`, {
          retryable: true,
        });
      }
      if (nodePlugin.maxVolumes > 0) {
        const used = new Set(
          txn
            .list('claims', {
              filter: (c) => c.nodeId === nodeId && (c.pluginId ?? txn.get('volumes', rowKey(c.namespace, c.volumeId))?.pluginId) === v.pluginId,
            })
            .map((c) => rowKey(c.namespace, c.volumeId)),
        );
        if (used.size >= nodePlugin.maxVolumes) {
          throw new VolumeError('EXHAUSTED', `node ${nodeId} has ${used.size} volumes of plugin ${v.pluginId}, its maximum`, { retryable: true });
        }
      }
    }
    // Another claim of this volume on the same node shares its attachment.
    const shared = onNode.find((c) => c.state === 'taken' && c.controllerPublish === 'published');
    const needsPublish = plugin!.controllerRequired;
    return txn.put('claims', {
      namespace,
      volumeId: req.volumeId,
      allocId: req.allocId,
      pluginId: v.pluginId,
      externalVolumeId: v.externalId,
      nodeId,
      externalNodeId: nodePlugin.externalNodeId,
      mode: req.mode,
      accessMode: cap.accessMode,
      attachmentMode: cap.attachmentMode,
      state: 'taken',
      controllerPublish: !needsPublish ? 'none' : shared ? 'published' : 'pending',
      publishContext: shared ? { ...shared.publishContext } : {},
      releaseReason: '',
      releaseAttempts: 0,
      lastError: '',
      claimTime: this.#clock.now(),
    });
  }

  async #publish(claim: VolumeClaim, signal: AbortSignal | undefined): Promise<VolumeClaim> {
    const key = rowKey(claim.namespace, claim.volumeId, claim.allocId);
    const v = this.#store.snapshot().get('volumes', rowKey(claim.namespace, claim.volumeId));
    const plugin = this.#store.snapshot().get('plugins', rowKey(claim.pluginId!));
    const capability = capabilityWire(v!, { accessMode: claim.accessMode, attachmentMode: claim.attachmentMode });
    const readonly = claim.mode === 'read' && plugin?.controllerCapabilities.includes('PUBLISH_READONLY') === true;
    try {
      const { publishContext } = await this.router.call(
        claim.pluginId!,
        'csi.controller.publish',
        {
          pluginId: claim.pluginId!,
          volumeId: claim.externalVolumeId!,
          nodeId: claim.externalNodeId,
          capability,
          readonly,
          secrets: v!.secrets,
          volumeContext: v!.context,
        },
        { topology: whereItLives(v!), ...(signal ? { signal } : {}) },
      );
      const { result } = this.#store.write((txn) => {
        const cur = txn.get('claims', key);
        if (!cur) throw new VolumeError('CONFLICT', `claim of allocation ${claim.allocId} on ${claim.volumeId} vanished during publish`, { retryable: true });
        return txn.put('claims', { ...cur, controllerPublish: 'published', publishContext: { ...publishContext } });
      });
      this.#logger.info({ volumeId: claim.volumeId, allocId: claim.allocId, nodeId: claim.nodeId }, 'volume published');
      return result;
    } catch (err) {
      const uncertain = !(err instanceof ControllerCallError) || err.uncertain;
      const exhausted = err instanceof ControllerCallError && err.lastCode === 'CSI_RESOURCE_EXHAUSTED';
      this.#store.write((txn) => {
        const cur = txn.get('claims', key);
        if (exhausted) markNodeExhausted(txn, claim.pluginId!, claim.nodeId, describeError(err), this.#clock.now());
        if (!cur) return;
        if (!uncertain) {
          // A final failure (FAILED_PRECONDITION: attached elsewhere, INVALID_ARGUMENT...):
          // nothing was attached, so nothing is recorded.
          txn.delete('claims', key);
          return;
        }
        // It may have attached: the claim stays until ControllerUnpublish confirms it is gone.
        txn.put('claims', {
          ...cur,
          state: 'node-detached',
          controllerPublish: 'uncertain',
          releaseReason: 'controller publish failed',
          lastError: describeError(err),
        });
      });
      if (uncertain) void this.#releaseInBackground(key, 'controller publish failed');
      if (exhausted) {
        throw new VolumeError('EXHAUSTED', `node ${claim.nodeId} can take no more volumes of plugin ${claim.pluginId}: ${describeError(err)}`, {
          retryable: true,
          cause: err,
        });
      }
      if (err instanceof ControllerCallError && err.lastCode === 'CSI_FAILED_PRECONDITION') {
        throw new VolumeError(
          'CONFLICT',
          `volume ${claim.volumeId} cannot be attached to node ${claim.nodeId} yet (it is attached elsewhere); try again once it is detached: ${err.message}`,
          { retryable: true, cause: err },
        );
      }
      throw err;
    }
  }

  // ---- release ----------------------------------------------------------------------

  /**
   * Releases one allocation's claim and waits until it is free: runs the
   * release state machine from wherever the claim stands. Each step is
   * written before the call it guards, so a crash at any point leaves a
   * state that `release` (or the claim watcher of a new server) resumes.
   * Safe to repeat and to call concurrently (callers share one run); a
   * claim already free resolves at once. Throws the failing step's error
   * (the claim keeps its state and lastError; the watcher retries it).
   */
  async release(namespace: string, volumeId: string, allocId: string, opts: { reason?: string; signal?: AbortSignal } = {}): Promise<void> {
    await this.#releaseKey(rowKey(namespace, volumeId, allocId), opts.reason ?? 'release requested', opts.signal);
  }

  /**
   * Forces the release of every claim that `nodeId` holds on the volume
   * (an operator's detach). Resolves once all are free; throws the first
   * failure after trying them all.
   */
  async detach(namespace: string, volumeId: string, nodeId: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    this.#volume(namespace, volumeId);
    const claims = this.#store.snapshot().list('claims', { prefix: keyPrefix(namespace, volumeId), filter: (c) => c.nodeId === nodeId });
    const results = await Promise.allSettled(
      claims.map((c) => this.#releaseKey(rowKey(namespace, volumeId, c.allocId), `detach from node ${nodeId} requested`, opts.signal)),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * `release` by claim key (`rowKey(namespace, volumeId, allocId)`), for the
   * claim watcher. Same contract as `release`.
   */
  releaseByKey(key: string, reason: string, signal?: AbortSignal): Promise<void> {
    return this.#releaseKey(key, reason, signal);
  }

  #releaseInBackground(key: string, reason: string): Promise<void> {
    return this.#releaseKey(key, reason, undefined).catch((err: unknown) => {
      this.#logger.warn({ claim: key, err: describeError(err) }, 'claim release failed; will retry');
    });
  }

  /** Whether a release of this claim is running in this process. */
  releasing(key: string): boolean {
    return this.#releasing.has(key);
  }

  #releaseKey(key: string, reason: string, signal: AbortSignal | undefined): Promise<void> {
    const running = this.#releasing.get(key);
    if (running) return running;
    const run = this.#runRelease(key, reason, signal).finally(() => this.#releasing.delete(key));
    this.#releasing.set(key, run);
    return run;
  }

  async #runRelease(key: string, reason: string, signal: AbortSignal | undefined): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const claim = this.#store.snapshot().get('claims', key);
      if (!claim) return;
      try {
        const done = await this.#step(key, claim, reason, signal);
        if (done) return;
      } catch (err) {
        // An abort (shutdown) or a closed store is not a failure of the step.
        if (!signal?.aborted && !this.#store.closed) {
          this.#store.write((txn) => {
            const cur = txn.get('claims', key);
            if (cur) txn.put('claims', { ...cur, releaseAttempts: cur.releaseAttempts + 1, lastError: describeError(err) });
          });
        }
        throw err;
      }
    }
  }

  /** Writes `next` over the claim if it is still in `from`; false when someone else moved it. */
  #advance(key: string, from: VolumeClaim['state'], next: Partial<VolumeClaim> | 'free'): boolean {
    return this.#store.write((txn) => {
      const cur = txn.get('claims', key);
      if (!cur || cur.state !== from) return false;
      if (next === 'free') {
        txn.delete('claims', key);
        // A real attachment went away: the node may have room again.
        if (cur.controllerPublish === 'published') {
          clearNodeExhausted(txn, cur.pluginId ?? txn.get('volumes', rowKey(cur.namespace, cur.volumeId))?.pluginId ?? '', cur.nodeId);
        }
      } else txn.put('claims', { ...cur, ...next, lastError: '' });
      return true;
    }).result;
  }

  /** Runs one step of the release; true when the claim is free. */
  async #step(key: string, claim: VolumeClaim, reason: string, signal: AbortSignal | undefined): Promise<boolean> {
    const snap = this.#store.snapshot();
    const volume = snap.get('volumes', rowKey(claim.namespace, claim.volumeId));
    const pluginId = claim.pluginId ?? volume?.pluginId ?? '';
    const externalVolumeId = claim.externalVolumeId ?? volume?.externalId ?? '';
    switch (claim.state) {
      case 'taken':
        this.#advance(key, 'taken', { state: 'unpublishing', releaseReason: reason });
        return false;
      case 'unpublishing': {
        const node = snap.get('nodes', rowKey(claim.nodeId));
        if (node && node.status !== 'down') {
          await this.#connections.call(
            claim.nodeId,
            'csi.node.detach',
            {
              pluginId,
              volumeId: externalVolumeId,
              namespace: claim.namespace,
              berthVolumeId: claim.volumeId,
              allocId: claim.allocId,
              accessMode: claim.accessMode,
              attachmentMode: claim.attachmentMode,
            },
            { timeoutMs: this.#timeoutMs, ...(signal ? { signal } : {}) },
          );
        }
        // A down node is skipped: its agent cleans up its own mounts when it restarts.
        // With no ControllerPublish to undo, node-detached and controller-detached
        // hold nothing to resume, so the claim goes straight to free in this one write.
        if (claim.controllerPublish === 'none') {
          this.#advance(key, 'unpublishing', 'free');
          return true;
        }
        this.#advance(key, 'unpublishing', { state: 'node-detached' });
        return false;
      }
      case 'node-detached': {
        const stillAttached = snap
          .list('claims', { prefix: keyPrefix(claim.namespace, claim.volumeId) })
          .some((c) => c.allocId !== claim.allocId && c.nodeId === claim.nodeId && (c.state === 'taken' || c.state === 'unpublishing'));
        if (claim.controllerPublish !== 'none' && !stillAttached) {
          await this.#perVolume.run(rowKey(claim.namespace, claim.volumeId), () =>
            this.router.call(
              pluginId,
              'csi.controller.unpublish',
              { pluginId, volumeId: externalVolumeId, nodeId: claim.externalNodeId, secrets: volume?.secrets ?? {} },
              { topology: volume ? whereItLives(volume) : [], ...(signal ? { signal } : {}) },
            ),
          );
        }
        this.#advance(key, 'node-detached', { state: 'controller-detached' });
        return false;
      }
      case 'controller-detached':
        this.#advance(key, 'controller-detached', 'free');
        this.#logger.info({ volumeId: claim.volumeId, allocId: claim.allocId, nodeId: claim.nodeId }, 'claim released');
        return true;
      default:
        this.#advance(key, claim.state, 'free');
        return true;
    }
  }

  /**
   * Why the claim must be released now, or undefined while its allocation
   * still runs on a live node: a claim already releasing (resume), an
   * allocation that is gone or client-terminal, a node that is down or gone.
   */
  releaseReason(snap: StateReader, claim: VolumeClaim): string | undefined {
    if (claim.state !== 'taken') return claim.releaseReason || 'resuming release';
    if (claim.controllerPublish === 'pending' && !this.#perVolumeBusy(claim)) return 'controller publish was interrupted';
    const alloc = snap.get('allocations', rowKey(claim.allocId));
    if (!alloc) return 'allocation gone';
    if (isClientTerminal(alloc.clientStatus)) return `allocation ${alloc.clientStatus}`;
    const node = snap.get('nodes', rowKey(claim.nodeId));
    if (!node) return 'node gone';
    if (node.status === 'down') return 'node down';
    return undefined;
  }

  #perVolumeBusy(claim: VolumeClaim): boolean {
    return this.#publishing.has(rowKey(claim.namespace, claim.volumeId, claim.allocId));
  }
}

/**
 * Where a volume lives, for choosing its controller: what the plugin said
 * when it created the volume, else the topology it was registered or asked
 * for. Empty means anywhere.
 */
function whereItLives(v: Pick<Volume, 'accessibleTopology' | 'topologyRequest'>): Topology[] {
  if (v.accessibleTopology.length > 0) return v.accessibleTopology;
  return [...(v.topologyRequest?.required ?? []), ...(v.topologyRequest?.preferred ?? [])];
}
