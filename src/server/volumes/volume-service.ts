import type { CsiSnapshot, ListedVolume } from '../../csi/index.js';
import { silentLogger, systemClock, type Clock, type Logger } from '../../lib/index.js';
import { publicClaim, type NodeClaimAnswer, type VolumeClaim, type VolumeCreation, type VolumeRegistration } from '../../structs/index.js';
import type { NodeConnections } from '../noderpc/index.js';
import type { StateReader, StateStore } from '../state/index.js';
import type { ClaimRequest } from './claim-admission.js';
import { ClaimRelease } from './claim-release.js';
import type { ClaimFence } from './claim-fence.js';
import { ClaimTaker } from './claim-taker.js';
import type { ControllerRouter } from './controller-router.js';
import { KeyedSerial } from './_serial.js';
import { VolumeRegistry, type VolumeView } from './volume-registry.js';

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
 * them: one door over the three parts that own the work.
 * - VolumeRegistry: reads, registration (validated through the plugin's
 *   controller), create/delete/snapshot/expand through the controller.
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
  readonly #taker: ClaimTaker;
  readonly #release: ClaimRelease;

  constructor(opts: VolumeServiceOptions) {
    const logger = (opts.logger ?? silentLogger()).child({ component: 'volumes' });
    const callTimeoutMs = opts.callTimeoutMs ?? 60_000;
    const { store, connections, router } = opts;
    // A claim and the controller step of a release of the same volume never overlap.
    const perVolume = new KeyedSerial();
    const publishing = new Set<string>();
    this.#release = new ClaimRelease({ store, connections, router, logger, callTimeoutMs, perVolume, publishing, clock: opts.clock ?? systemClock });
    this.#taker = new ClaimTaker({ store, router, release: this.#release, clock: opts.clock ?? systemClock, logger, perVolume, publishing });
    this.#registry = new VolumeRegistry({ store, connections, router, release: this.#release, logger, callTimeoutMs });
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

  /** See VolumeRegistry.createSnapshot. */
  createSnapshot(namespace: string, volumeId: string, name: string, opts: { parameters?: Record<string, string>; signal?: AbortSignal } = {}): Promise<CsiSnapshot> {
    return this.#registry.createSnapshot(namespace, volumeId, name, opts);
  }

  /** See VolumeRegistry.deleteSnapshot. */
  deleteSnapshot(pluginId: string, snapshotId: string, opts: { secrets?: Record<string, string>; signal?: AbortSignal } = {}): Promise<void> {
    return this.#registry.deleteSnapshot(pluginId, snapshotId, opts);
  }

  /** See VolumeRegistry.listSnapshots. */
  listSnapshots(
    pluginId: string,
    opts: { namespace?: string; volumeId?: string; secrets?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<CsiSnapshot[]> {
    return this.#registry.listSnapshots(pluginId, opts);
  }

  /** See VolumeRegistry.listPluginVolumes. */
  listPluginVolumes(pluginId: string, opts: { signal?: AbortSignal } = {}): Promise<ListedVolume[]> {
    return this.#registry.listPluginVolumes(pluginId, opts);
  }

  /** See VolumeRegistry.expand. */
  expand(namespace: string, id: string, range: { requiredBytes: number; limitBytes?: number }, opts: { signal?: AbortSignal } = {}): Promise<VolumeView> {
    return this.#registry.expand(namespace, id, range, opts);
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

  /** See ClaimRelease.detach: forces the release of the node's claims on the volume. */
  detach(namespace: string, volumeId: string, nodeId: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    return this.#release.detach(namespace, volumeId, nodeId, opts);
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
