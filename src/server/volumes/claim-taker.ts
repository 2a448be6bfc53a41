import { AbortedError, describeError, type Clock, type Logger } from '../../lib/index.js';
import { csiPluginInstance, nodeClaimAnswer, type NodeClaimAnswer, type VolumeClaim } from '../../structs/index.js';
// Spelled from src/: the lint's layer rule reads a bare '../plugins' as src/plugins.
import { markNodeExhausted } from '../plugins/index.js';
import { keyPrefix, rowKey, type StateReader, type StateStore } from '../state/index.js';
import { admitClaim, type AdmissionState, type ClaimRequest } from './claim-admission.js';
import type { ClaimRelease } from './claim-release.js';
import { ControllerCallError, type ControllerRouter } from './controller-router.js';
import type { KeyedSerial } from './_serial.js';
import { VolumeError } from './errors.js';
import { capabilityWire } from './_wire.js';
import { whereItLives } from './_volume-topology.js';

export interface ClaimTakerOptions {
  store: StateStore;
  /** Routes ControllerPublish to a healthy controller. */
  router: ControllerRouter;
  /** Releases a claim whose ControllerPublish may have attached the volume. */
  release: ClaimRelease;
  clock: Clock;
  logger: Logger;
  /** One claim or release step at a time per volume (`rowKey(namespace, volumeId)`); shared with the release. */
  perVolume: KeyedSerial;
  /** Claim keys whose ControllerPublish is in flight in this process; this taker adds and removes them. */
  publishing: Set<string>;
  /**
   * How long a claim refused only because another claim's release is still
   * in progress waits for that release to end before it answers the refusal;
   * default 10 s (under the node's request timeout).
   */
  releaseWaitMs?: number;
}

const DEFAULT_RELEASE_WAIT_MS = 10_000;

/** A refusal behind a release in progress: the refusal, and the claim whose release it waits for. */
class BehindRelease extends Error {
  readonly refusal: VolumeError;
  readonly releasing: VolumeClaim;

  constructor(refusal: VolumeError, releasing: VolumeClaim) {
    super(refusal.message);
    this.refusal = refusal;
    this.releasing = releasing;
  }
}

/**
 * The rows `admitClaim` decides on, read from `reader` (the write
 * transaction that records the claim, so that the decision and the write
 * see the same state).
 */
export function admissionState(reader: StateReader, req: ClaimRequest, now: number): AdmissionState {
  const namespace = req.namespace ?? 'default';
  const volume = reader.get('volumes', rowKey(namespace, req.volumeId));
  const allocation = reader.get('allocations', rowKey(req.allocId));
  const plugin = volume && reader.get('plugins', rowKey(volume.pluginId));
  const nodeId = allocation?.nodeId;
  // The plugin with the one node instance admission reads (the row keeps none; see CsiPluginRow).
  const nodePlugin = plugin && nodeId !== undefined ? csiPluginInstance(reader.get('nodes', rowKey(nodeId)), plugin.id, 'node') : undefined;
  const limited = volume !== undefined && nodeId !== undefined && (nodePlugin?.maxVolumes ?? 0) > 0;
  return {
    volume,
    allocation,
    plugin: plugin && { ...plugin, nodes: nodePlugin && nodeId !== undefined ? { [nodeId]: nodePlugin } : {} },
    volumeClaims: reader.list('claims', { prefix: keyPrefix(namespace, req.volumeId) }),
    pluginClaimsOnNode: limited ? reader.list('claims', { filter: (c) => c.nodeId === nodeId && c.pluginId === volume.pluginId }) : [],
    now,
  };
}

/**
 * Takes claims: records the claim admission allows (one claim step at a
 * time per volume), then, when the plugin needs it, sends ControllerPublish
 * through a healthy controller with the node's external node ID and keeps
 * the publish context.
 */
export class ClaimTaker {
  readonly #deps: ClaimTakerOptions;

  constructor(opts: ClaimTakerOptions) {
    this.#deps = opts;
  }

  /**
   * Claims a volume for an allocation, on the allocation's node, as
   * `admitClaim` decides. When the plugin needs ControllerPublish, the claim
   * is recorded first (`pending`), then published. Safe to repeat: the same
   * allocation's taken claim is returned as is. Returns the stored row
   * (publish context unredacted: callers redact).
   *
   * Throws VolumeError: admission's refusals; CONFLICT retryable (attached
   * elsewhere: FAILED_PRECONDITION, nothing recorded); EXHAUSTED (the plugin
   * said RESOURCE_EXHAUSTED: the node is marked exhausted for placement);
   * UNAVAILABLE retryable (no healthy controller; an uncertain publish is
   * released in the background).
   */
  async claim(req: ClaimRequest, opts: { signal?: AbortSignal } = {}): Promise<VolumeClaim> {
    const deadline = this.#deps.clock.now() + (this.#deps.releaseWaitMs ?? DEFAULT_RELEASE_WAIT_MS);
    for (;;) {
      const seen = this.#deps.store.latestIndex();
      try {
        return await this.#claimOnce(req, opts);
      } catch (err) {
        if (!(err instanceof BehindRelease)) throw err;
        // Only a release in progress stands in the way: try again the moment it ends, not on a timer.
        if (!(await this.#releaseEnded(err.releasing, seen, deadline, opts.signal))) throw err.refusal;
      }
    }
  }

  async #claimOnce(req: ClaimRequest, opts: { signal?: AbortSignal }): Promise<VolumeClaim> {
    const namespace = req.namespace ?? 'default';
    return this.#deps.perVolume.run(rowKey(namespace, req.volumeId), async () => {
      // Marked before the write: the claim watcher may see the pending claim as soon as the write
      // lands, before this function resumes, and must not take it for an interrupted publish.
      const key = rowKey(namespace, req.volumeId, req.allocId);
      this.#deps.publishing.add(key);
      try {
        const { result: taken } = await this.#deps.store.write((txn) => {
          const decision = admitClaim(admissionState(txn, req, this.#deps.clock.now()), req);
          if (decision.outcome === 'refuse') throw decision.releasing ? new BehindRelease(decision.error, decision.releasing) : decision.error;
          return decision.outcome === 'existing' ? decision.claim : txn.put('claims', decision.claim);
        });
        if (taken.controllerPublish !== 'pending') return taken;
        return await this.#publish(taken, opts.signal);
      } finally {
        this.#deps.publishing.delete(key);
      }
    });
  }

  /**
   * Waits, on the store's changes of claims (no polling, no timer of its
   * own), until the release of `releasing` has ended (its row gone or free).
   * False when `deadline` (on the clock) passed first; throws AbortedError
   * when `signal` fires.
   */
  async #releaseEnded(releasing: VolumeClaim, afterIndex: number, deadline: number, signal: AbortSignal | undefined): Promise<boolean> {
    const { store, clock } = this.#deps;
    const key = rowKey(releasing.namespace, releasing.volumeId, releasing.allocId);
    let after = afterIndex;
    for (;;) {
      const row = store.snapshot().get('claims', key);
      if (!row || row.state === 'free') return true;
      // A change after `after` (the refusal's view) wakes the wait at once: nothing in between is missed.
      const left = deadline - clock.now();
      if (left <= 0) return false;
      const stop = new AbortController();
      const both = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
      const ignoreAbort = (e: unknown): undefined => {
        if (e instanceof AbortedError) return undefined;
        throw e;
      };
      try {
        const woke = await Promise.race([
          store.blockUntil(['claims'], after, { signal: both }).catch(ignoreAbort),
          clock.sleep(left, both).then(() => 'timeout' as const, ignoreAbort),
        ]);
        if (signal?.aborted) throw new AbortedError('claim aborted while waiting for a release', { cause: signal.reason });
        if (woke === 'timeout') return false;
        if (typeof woke === 'number') after = woke;
      } finally {
        stop.abort();
      }
    }
  }

  /**
   * As `claim`, but answers what the node needs to mount the volume (raw
   * publish context, volume context, mount flags and the volume's secrets).
   * Only for the node role; never for a read.
   */
  async claimForNode(req: ClaimRequest, opts: { signal?: AbortSignal } = {}): Promise<NodeClaimAnswer> {
    const claim = await this.claim(req, opts);
    const v = this.#deps.store.snapshot().get('volumes', rowKey(claim.namespace, claim.volumeId));
    if (!v) throw new VolumeError('NOT_FOUND', `volume ${claim.volumeId} does not exist in namespace ${claim.namespace}`);
    return nodeClaimAnswer(claim, v);
  }

  async #publish(claim: VolumeClaim, signal: AbortSignal | undefined): Promise<VolumeClaim> {
    const key = rowKey(claim.namespace, claim.volumeId, claim.allocId);
    const snap = this.#deps.store.snapshot();
    const v = snap.get('volumes', rowKey(claim.namespace, claim.volumeId));
    // The claim was written under this volume's serial a moment ago; only a forced deregister could have dropped it since.
    if (!v) throw new VolumeError('NOT_FOUND', `volume ${claim.volumeId} does not exist in namespace ${claim.namespace}`);
    const plugin = snap.get('plugins', rowKey(claim.pluginId));
    const capability = capabilityWire(v, { accessMode: claim.accessMode, attachmentMode: claim.attachmentMode });
    const readonly = claim.mode === 'read' && plugin?.controllerCapabilities.includes('PUBLISH_READONLY') === true;
    try {
      const { publishContext } = await this.#deps.router.call(
        claim.pluginId,
        'csi.controller.publish',
        {
          pluginId: claim.pluginId,
          volumeId: claim.externalVolumeId,
          nodeId: claim.externalNodeId,
          capability,
          readonly,
          secrets: v.secrets,
          volumeContext: v.context,
        },
        { topology: whereItLives(v), ...(signal ? { signal } : {}) },
      );
      const { result } = await this.#deps.store.write((txn) => {
        const cur = txn.get('claims', key);
        if (!cur) throw new VolumeError('CONFLICT', `claim of allocation ${claim.allocId} on ${claim.volumeId} vanished during publish`, { retryable: true });
        return txn.put('claims', { ...cur, controllerPublish: 'published', publishContext: { ...publishContext } });
      });
      this.#deps.logger.info({ volumeId: claim.volumeId, allocId: claim.allocId, nodeId: claim.nodeId }, 'volume published');
      return result;
    } catch (err) {
      throw await this.#publishFailed(claim, key, err);
    }
  }

  /** Records a failed ControllerPublish and returns the error the claimer sees. */
  async #publishFailed(claim: VolumeClaim, key: string, err: unknown): Promise<unknown> {
    const uncertain = !(err instanceof ControllerCallError) || err.uncertain;
    const exhausted = err instanceof ControllerCallError && err.lastCode === 'CSI_RESOURCE_EXHAUSTED';
    await this.#deps.store.write((txn) => {
      const cur = txn.get('claims', key);
      if (exhausted) markNodeExhausted(txn, claim.pluginId, claim.nodeId, describeError(err), this.#deps.clock.now());
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
    if (uncertain) void this.#deps.release.releaseInBackground(key, 'controller publish failed');
    if (exhausted) {
      return new VolumeError('EXHAUSTED', `node ${claim.nodeId} can take no more volumes of plugin ${claim.pluginId}: ${describeError(err)}`, {
        retryable: true,
        cause: err,
      });
    }
    if (err instanceof ControllerCallError && err.lastCode === 'CSI_FAILED_PRECONDITION') {
      return new VolumeError(
        'CONFLICT',
        `volume ${claim.volumeId} cannot be attached to node ${claim.nodeId} yet (it is attached elsewhere); try again once it is detached: ${err.message}`,
        { retryable: true, cause: err },
      );
    }
    return err;
  }
}
