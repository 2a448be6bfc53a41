import type { CsiSnapshot, ListedVolume } from '../../csi/index.js';
import { silentLogger, systemClock, type Clock, type Logger } from '../../lib/index.js';
import {
  isClientTerminal,
  publicClaim,
  type Allocation,
  type NodeClaimAnswer,
  type VolumeClaim,
  type VolumeCreation,
  type VolumeRegistration,
} from '../../structs/index.js';
import type { NodeConnections } from '../noderpc/index.js';
import { keyPrefix, rowKey, type StateReader, type StateStore } from '../state/index.js';
import type { ClaimRequest } from './claim-admission.js';
import { ClaimRelease } from './claim-release.js';
import type { ClaimFence } from './claim-fence.js';
import { ClaimTaker } from './claim-taker.js';
import type { ControllerRouter } from './controller-router.js';
import { VolumeError } from './errors.js';
import { KeyedSerial } from './_serial.js';
import { VolumeRegistry, type VolumeView } from './volume-registry.js';
import { PluginSnapshots } from './plugin-snapshots.js';

export interface VolumeServiceOptions {
  store: StateStore;
  connections: NodeConnections;
  /** Sends controller calls to a healthy controller of a plugin; built by the caller over the same store and connections. */
  router: ControllerRouter;
  clock?: Clock;
  logger?: Logger;
  /** Deadline of one server-to-node call. Default 60 s. */
  callTimeoutMs?: number;
}

/**
 * CSI volumes and their claims, as the HTTP API and the claim watcher use
 * them: one door over the parts that own the work.
 * - VolumeRegistry: reads, registration (validated through the plugin's
 *   controller), create/delete/expand through the controller.
 * - PluginSnapshots: a plugin's snapshots and its own list of volumes,
 *   through its controller.
 * - ClaimTaker: claims as `admitClaim` decides them (per access mode), with
 *   ControllerPublish routed to a healthy controller.
 * - ClaimRelease: the checkpointed release state machine (taken ->
 *   unpublishing -> node-detached -> controller-detached -> free) that a new
 *   service over the same store resumes.
 *
 * Every read returns the public view (no secrets, mount flags redacted).
 * Every async method takes an AbortSignal and throws VolumeError (or
 * ControllerCallError, a VolumeError) with a stable code.
 */
export class VolumeService {
  readonly #registry: VolumeRegistry;
  readonly #snapshots: PluginSnapshots;
  readonly #taker: ClaimTaker;
  readonly #release: ClaimRelease;
  readonly #store: StateStore;
  readonly #logger: Logger;

  constructor(opts: VolumeServiceOptions) {
    const logger = (opts.logger ?? silentLogger()).child({ component: 'volumes' });
    const callTimeoutMs = opts.callTimeoutMs ?? 60_000;
    const { store, connections, router } = opts;
    this.#store = store;
    this.#logger = logger;
    // A claim and the controller step of a release of the same volume never overlap.
    const perVolume = new KeyedSerial();
    const publishing = new Set<string>();
    this.#release = new ClaimRelease({ store, connections, router, logger, callTimeoutMs, perVolume, publishing, clock: opts.clock ?? systemClock });
    this.#taker = new ClaimTaker({ store, router, release: this.#release, clock: opts.clock ?? systemClock, logger, perVolume, publishing });
    this.#registry = new VolumeRegistry({ store, connections, router, release: this.#release, logger, callTimeoutMs });
    this.#snapshots = new PluginSnapshots({ store, router, logger });
  }

  // ---- reads (VolumeRegistry) ---------------------------------------------------

  /** The volume's public view, or undefined. */
  get(namespace: string, id: string, snap?: StateReader): VolumeView | undefined {
    return this.#registry.get(namespace, id, snap);
  }

  /** Every volume's public view, optionally of one namespace or plugin. */
  list(opts: { namespace?: string; pluginId?: string } = {}, snap?: StateReader): VolumeView[] {
    return this.#registry.list(opts, snap);
  }

  /** Every claim not yet free (public view), optionally of one volume or node. */
  claims(filter: { namespace?: string; volumeId?: string; nodeId?: string } = {}): VolumeClaim[] {
    return this.#registry.claims(filter);
  }

  // ---- volumes (VolumeRegistry) ---------------------------------------------------

  /** See VolumeRegistry.register: INVALID (bad field, unknown plugin, not validated), CONFLICT, UNAVAILABLE. */
  register(input: VolumeRegistration, opts: { signal?: AbortSignal } = {}): Promise<VolumeView> {
    return this.#registry.register(input, opts);
  }

  /** See VolumeRegistry.deregister: CONFLICT while claimed unless `force`, NOT_FOUND. */
  deregister(namespace: string, id: string, opts: { force?: boolean; signal?: AbortSignal } = {}): Promise<void> {
    return this.#registry.deregister(namespace, id, opts);
  }

  /** See VolumeRegistry.create: CreateVolume through the controller, then registered. */
  create(input: VolumeCreation, opts: { signal?: AbortSignal } = {}): Promise<VolumeView> {
    return this.#registry.create(input, opts);
  }

  /** See VolumeRegistry.delete: DeleteVolume through the controller; CONFLICT while claimed. */
  delete(namespace: string, id: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    return this.#registry.delete(namespace, id, opts);
  }

  /** See VolumeRegistry.expand. */
  expand(namespace: string, id: string, range: { requiredBytes: number; limitBytes?: number }, opts: { signal?: AbortSignal } = {}): Promise<VolumeView> {
    return this.#registry.expand(namespace, id, range, opts);
  }

  // ---- snapshots and the plugin's own volumes (PluginSnapshots) -------------------

  /** See PluginSnapshots.createSnapshot. */
  createSnapshot(namespace: string, volumeId: string, name: string, opts: { parameters?: Record<string, string>; signal?: AbortSignal } = {}): Promise<CsiSnapshot> {
    return this.#snapshots.createSnapshot(namespace, volumeId, name, opts);
  }

  /** See PluginSnapshots.deleteSnapshot: NOT_FOUND unless a snapshot with exactly this ID exists. */
  deleteSnapshot(
    pluginId: string,
    snapshotId: string,
    opts: { secrets?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<{ snapshotId: string; verified: boolean }> {
    return this.#snapshots.deleteSnapshot(pluginId, snapshotId, opts);
  }

  /** See PluginSnapshots.listSnapshots. */
  listSnapshots(
    pluginId: string,
    opts: { namespace?: string; volumeId?: string; secrets?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<CsiSnapshot[]> {
    return this.#snapshots.listSnapshots(pluginId, opts);
  }

  /** See PluginSnapshots.listPluginVolumes. */
  listPluginVolumes(pluginId: string, opts: { signal?: AbortSignal } = {}): Promise<ListedVolume[]> {
    return this.#snapshots.listPluginVolumes(pluginId, opts);
  }

  // ---- claims (ClaimTaker) ------------------------------------------------------

  /**
   * Claims a volume for an allocation (see `admitClaim` for the rules and
   * ClaimTaker.claim for ControllerPublish). Safe to repeat. Returns the
   * public view of the claim.
   */
  async claim(req: ClaimRequest, opts: { signal?: AbortSignal } = {}): Promise<VolumeClaim> {
    return publicClaim(await this.#taker.claim(req, opts));
  }

  /** The node's own claim call: what the node needs to mount (secrets included). Node role only. */
  claimForNode(req: ClaimRequest, opts: { signal?: AbortSignal } = {}): Promise<NodeClaimAnswer> {
    return this.#taker.claimForNode(req, opts);
  }

  // ---- release (ClaimRelease) ---------------------------------------------------

  /** See ClaimRelease.release: waits until the claim is free; safe to repeat and to call concurrently. */
  release(namespace: string, volumeId: string, allocId: string, opts: { reason?: string; signal?: AbortSignal } = {}): Promise<void> {
    return this.#release.release(namespace, volumeId, allocId, opts);
  }

  /**
   * The allocations that are not terminal and hold a claim of the volume on
   * the node: what a detach would pull the volume from under. Pure read.
   */
  detachBlockers(namespace: string, volumeId: string, nodeId: string, snap: StateReader = this.#store.snapshot()): Allocation[] {
    return snap
      .list('claims', { prefix: keyPrefix(namespace, volumeId), filter: (c: VolumeClaim) => c.nodeId === nodeId })
      .map((c) => snap.get('allocations', rowKey(c.allocId)))
      .filter((a): a is Allocation => a !== undefined && !isClientTerminal(a.clientStatus));
  }

  /**
   * Forces the release of the node's claims on the volume (NodeUnpublish,
   * NodeUnstage, ControllerUnpublish), those it has when called (not a
   * replacement's placed meanwhile). Resolves once all are free, else throws
   * the first failure after trying them all. Refuses with
   * CONFLICT, naming them, while allocations that are not terminal use the
   * volume on the node (`detachBlockers`): the volume would be pulled from
   * under a live task. With `force`, each of them is stopped first through
   * `stopAllocation` and the detach waits (event-driven) until every one is
   * terminal, at most `stopWaitMs` (default 5 min; then UNAVAILABLE,
   * retryable, nothing detached). Resolves with the allocations stopped.
   * Throws NOT_FOUND for an unknown volume.
   */
  async detach(
    namespace: string,
    volumeId: string,
    nodeId: string,
    opts: { force?: boolean; stopAllocation?: (allocId: string) => Promise<unknown>; stopWaitMs?: number; signal?: AbortSignal } = {},
  ): Promise<{ stoppedAllocations: string[] }> {
    const snap = this.#store.snapshot();
    if (!snap.get('volumes', rowKey(namespace, volumeId))) {
      throw new VolumeError('NOT_FOUND', `volume ${volumeId} does not exist in namespace ${namespace}`);
    }
    // The claims there are now: a replacement that the stop places on the same node
    // claims the volume anew, and its claim is not this detach's to release.
    const claims = snap.list('claims', { prefix: keyPrefix(namespace, volumeId), filter: (c: VolumeClaim) => c.nodeId === nodeId });
    const blockers = this.detachBlockers(namespace, volumeId, nodeId, snap);
    if (blockers.length > 0 && (!opts.force || !opts.stopAllocation)) {
      const names = blockers.map((a) => `${a.id} (job ${a.jobId}, ${a.clientStatus})`).join(', ');
      throw new VolumeError(
        'CONFLICT',
        `volume ${volumeId} is in use on node ${nodeId} by allocation${blockers.length === 1 ? '' : 's'} ${names}; stop ${blockers.length === 1 ? 'it' : 'them'} first, or detach with force (which stops ${blockers.length === 1 ? 'it' : 'them'})`,
      );
    }
    const stopped = blockers.map((a) => a.id);
    if (blockers.length > 0 && opts.stopAllocation) {
      this.#logger.warn({ volumeId, namespace, nodeId, allocIds: stopped }, 'forced detach: stopping the allocations that use the volume on the node');
      for (const id of stopped) await opts.stopAllocation(id);
      await this.#untilTerminal(stopped, opts.stopWaitMs ?? 300_000, opts.signal);
    }
    const keys = claims.map((c) => rowKey(namespace, volumeId, c.allocId));
    if (opts.force) await this.#forceRelease(keys, nodeId);
    const results = await Promise.allSettled(keys.map((key) => this.#release.releaseByKey(key, `detach from node ${nodeId} requested${opts.force ? ' (forced)' : ''}`, opts.signal)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return { stoppedAllocations: stopped };
  }

  /**
   * Marks the claims forced (the node then unmounts itself what its plugin
   * refuses to; the claim's events show it), and lets a release already
   * running without force end first, so the next run carries the force.
   */
  async #forceRelease(keys: readonly string[], nodeId: string): Promise<void> {
    await this.#store.write((txn) => {
      for (const key of keys) {
        const cur = txn.get('claims', key);
        if (cur && !cur.releaseForced) txn.put('claims', { ...cur, releaseForced: true });
      }
    });
    this.#logger.warn({ nodeId, claims: keys }, 'forced detach: the node will unmount what its plugin refuses to');
    await Promise.all(keys.map((key) => this.#release.settled(key)));
  }

  /** Waits until each allocation is terminal (or gone), woken by allocation writes only; UNAVAILABLE after `waitMs`. */
  async #untilTerminal(allocIds: readonly string[], waitMs: number, signal: AbortSignal | undefined): Promise<void> {
    const end = Date.now() + waitMs;
    const live = (): string[] =>
      allocIds.filter((id) => {
        const a = this.#store.snapshot().get('allocations', rowKey(id));
        return a !== undefined && !isClientTerminal(a.clientStatus);
      });
    let seen = this.#store.latestIndex();
    for (let left = live(); left.length > 0; left = live()) {
      const remaining = end - Date.now();
      if (remaining <= 0) {
        throw new VolumeError('UNAVAILABLE', `allocation${left.length === 1 ? '' : 's'} ${left.join(', ')} did not stop within ${Math.round(waitMs / 1000)} s; nothing was detached`, {
          retryable: true,
        });
      }
      seen = await this.#store.blockUntil(['allocations'], seen, { timeoutMs: remaining, ...(signal ? { signal } : {}) });
    }
  }

  /** See ClaimRelease.releaseByKey (for the claim watcher). */
  releaseByKey(key: string, reason: string, signal?: AbortSignal): Promise<void> {
    return this.#release.releaseByKey(key, reason, signal);
  }

  /** Whether a release of this claim is running in this process. */
  releasing(key: string): boolean {
    return this.#release.releasing(key);
  }

  /** See ClaimRelease.fence: what holds a write claim of a silent node now, or undefined. */
  fence(snap: StateReader, claim: VolumeClaim): ClaimFence | undefined {
    return this.#release.fence(snap, claim);
  }

  /** See ClaimRelease.releaseReason: why the claim must be released now, or undefined. */
  releaseReason(snap: StateReader, claim: VolumeClaim): string | undefined {
    return this.#release.releaseReason(snap, claim);
  }
}
