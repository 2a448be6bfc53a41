import { describeError, systemClock, type Clock, type Logger } from '../../lib/index.js';
import { isClientTerminal, type VolumeClaim } from '../../structs/index.js';
// Spelled from src/: the lint's layer rule reads a bare '../plugins' as src/plugins.
import { clearNodeExhausted } from '../plugins/index.js';
import type { NodeConnections } from '../noderpc/index.js';
import { keyPrefix, rowKey, type StateReader, type StateStore } from '../state/index.js';
import type { ControllerRouter } from './controller-router.js';
import type { KeyedSerial } from './_serial.js';
import { whereItLives } from './_volume-topology.js';
import { claimFence, type ClaimFence } from './claim-fence.js';

export interface ClaimReleaseOptions {
  store: StateStore;
  connections: NodeConnections;
  /** Routes ControllerUnpublish to a healthy controller. */
  router: ControllerRouter;
  logger: Logger;
  /** Deadline of one server-to-node call. */
  callTimeoutMs: number;
  /** One claim or release step at a time per volume (`rowKey(namespace, volumeId)`); shared with the claim taker. */
  perVolume: KeyedSerial;
  /** Claim keys whose ControllerPublish is in flight in this process (the claim taker's). */
  publishing: ReadonlySet<string>;
  /** The server clock, for fences (see claim-fence.ts). Default the system clock. */
  clock?: Clock;
}

/**
 * The checkpointed release of claims: taken -> unpublishing (the node
 * unpublishes and unstages) -> node-detached (ControllerUnpublish) ->
 * controller-detached -> free (the row is deleted). Each step is written
 * before the call it guards, so a crash at any point leaves a state that a
 * new ClaimRelease over the same store (driven by the claim watcher)
 * resumes. One run per claim at a time in this process.
 */
export class ClaimRelease {
  readonly #deps: ClaimReleaseOptions;
  readonly #releasing = new Map<string, Promise<void>>();

  constructor(opts: ClaimReleaseOptions) {
    this.#deps = opts;
  }

  /**
   * Releases one allocation's claim and waits until it is free: runs the
   * release state machine from wherever the claim stands. Safe to repeat
   * and to call concurrently (callers share one run); a claim already free
   * resolves at once. Throws the failing step's error (the claim keeps its
   * state and lastError; the watcher retries it).
   */
  async release(namespace: string, volumeId: string, allocId: string, opts: { reason?: string; signal?: AbortSignal } = {}): Promise<void> {
    await this.releaseByKey(rowKey(namespace, volumeId, allocId), opts.reason ?? 'release requested', opts.signal);
  }

  /**
   * `release` by claim key (`rowKey(namespace, volumeId, allocId)`), for the
   * claim watcher. Same contract as `release`.
   */
  releaseByKey(key: string, reason: string, signal?: AbortSignal): Promise<void> {
    const running = this.#releasing.get(key);
    if (running) return running;
    const run = this.#runRelease(key, reason, signal).finally(() => this.#releasing.delete(key));
    this.#releasing.set(key, run);
    return run;
  }

  /** Starts a release and does not wait for it; a failure is logged (the claim watcher retries it). Never rejects. */
  releaseInBackground(key: string, reason: string): Promise<void> {
    return this.releaseByKey(key, reason, undefined).catch((err: unknown) => {
      this.#deps.logger.warn({ claim: key, err: describeError(err) }, 'claim release failed; will retry');
    });
  }

  /** Resolves once no release of this claim runs in this process (whatever its outcome). Never rejects. */
  async settled(key: string): Promise<void> {
    await this.#releasing.get(key)?.catch(() => undefined);
  }

  /** Whether a release of this claim is running in this process. */
  releasing(key: string): boolean {
    return this.#releasing.has(key);
  }

  /**
   * Why the claim must be released now, or undefined while its allocation
   * still runs on a live node: a claim already releasing (resume), a
   * ControllerPublish that no process is waiting for, an allocation that is
   * gone or client-terminal, a node that is down or gone. Undefined as well
   * while the claim is fenced (a writer on a silent node; see `fence`). Pure
   * over `snap`, the clock and this process's publishes in flight.
   */
  releaseReason(snap: StateReader, claim: VolumeClaim): string | undefined {
    if (claim.state !== 'taken') return claim.releaseReason || 'resuming release';
    if (claim.controllerPublish === 'pending' && !this.#deps.publishing.has(rowKey(claim.namespace, claim.volumeId, claim.allocId))) {
      return 'controller publish was interrupted';
    }
    const reason = this.#mustGo(snap, claim);
    // A writer on a silent node may still run: not before its fence ends.
    if (reason && this.fence(snap, claim)) return undefined;
    return reason;
  }

  #mustGo(snap: StateReader, claim: VolumeClaim): string | undefined {
    const alloc = snap.get('allocations', rowKey(claim.allocId));
    if (!alloc) return 'allocation gone';
    if (isClientTerminal(alloc.clientStatus)) return `allocation ${alloc.clientStatus}`;
    const node = snap.get('nodes', rowKey(claim.nodeId));
    if (!node) return 'node gone';
    if (node.status === 'down') return 'node down';
    return undefined;
  }

  /**
   * The fence that holds the claim now (see claimFence), or undefined when
   * none applies or it has ended by the clock. Pure over `snap` and the clock.
   */
  fence(snap: StateReader, claim: VolumeClaim): ClaimFence | undefined {
    const f = claimFence(snap, claim);
    return f && f.until > (this.#deps.clock ?? systemClock).now() ? f : undefined;
  }

  async #runRelease(key: string, reason: string, signal: AbortSignal | undefined): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const claim = this.#deps.store.snapshot().get('claims', key);
      if (!claim) return;
      try {
        const done = await this.#step(key, claim, reason, signal);
        if (done) return;
      } catch (err) {
        // An abort (shutdown) or a closed store is not a failure of the step.
        if (!signal?.aborted && !this.#deps.store.closed) {
          await this.#deps.store.write((txn) => {
            const cur = txn.get('claims', key);
            if (cur) txn.put('claims', { ...cur, releaseAttempts: cur.releaseAttempts + 1, lastError: describeError(err) });
          });
        }
        throw err;
      }
    }
  }

  /** Writes `next` over the claim if it is still in `from`; false when someone else moved it. */
  async #advance(key: string, from: VolumeClaim['state'], next: Partial<VolumeClaim> | 'free'): Promise<boolean> {
    const { result } = await this.#deps.store.write((txn) => {
      const cur = txn.get('claims', key);
      if (!cur || cur.state !== from) return false;
      if (next === 'free') {
        txn.delete('claims', key);
        // A real attachment went away: the node may have room again.
        if (cur.controllerPublish === 'published') clearNodeExhausted(txn, cur.pluginId, cur.nodeId);
      } else txn.put('claims', { ...cur, ...next, lastError: '' });
      return true;
    });
    return result;
  }

  /**
   * Writes what the node unmounted in the plugin's place onto the claim (a
   * claim event carries it: the claim's history), before the claim moves on.
   */
  async #recordOverride(key: string, done: ReadonlyArray<{ op: string; path: string; reason: string; pluginError: string }>, extra?: string): Promise<void> {
    const words = [
      ...done.map((d) => `the agent unmounted ${d.path} itself (${d.op}, ${d.reason === 'forced' ? 'forced by an operator' : "the volume's source vanished"}); the plugin said: ${d.pluginError}`),
      ...(extra ? [extra] : []),
    ].join('; ');
    await this.#deps.store.write((txn) => {
      const cur = txn.get('claims', key);
      if (cur) txn.put('claims', { ...cur, releaseOverride: cur.releaseOverride ? `${cur.releaseOverride}; ${words}` : words });
    });
    this.#deps.logger.warn({ claim: key, unmountedByAgent: done, override: extra }, 'claim release: done in the plugin\'s place');
  }

  /** Runs one step of the release; true when the claim is free. */
  async #step(key: string, claim: VolumeClaim, reason: string, signal: AbortSignal | undefined): Promise<boolean> {
    const snap = this.#deps.store.snapshot();
    const volume = snap.get('volumes', rowKey(claim.namespace, claim.volumeId));
    const { pluginId, externalVolumeId } = claim;
    switch (claim.state) {
      case 'taken':
        await this.#advance(key, 'taken', { state: 'unpublishing', releaseReason: reason });
        return false;
      case 'unpublishing': {
        const node = snap.get('nodes', rowKey(claim.nodeId));
        if (node && node.status !== 'down') {
          const answer = await this.#deps.connections.call(
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
              ...(claim.releaseForced ? { force: true } : {}),
            },
            { timeoutMs: this.#deps.callTimeoutMs, ...(signal ? { signal } : {}) },
          );
          if (answer.unmountedByAgent?.length) await this.#recordOverride(key, answer.unmountedByAgent);
        }
        // A down node is skipped: its agent cleans up its own mounts when it restarts.
        // With no ControllerPublish to undo, node-detached and controller-detached
        // hold nothing to resume, so the claim goes straight to free in this one write.
        if (claim.controllerPublish === 'none') {
          await this.#advance(key, 'unpublishing', 'free');
          return true;
        }
        await this.#advance(key, 'unpublishing', { state: 'node-detached' });
        return false;
      }
      case 'node-detached': {
        const stillAttached = snap
          .list('claims', { prefix: keyPrefix(claim.namespace, claim.volumeId) })
          .some((c) => c.allocId !== claim.allocId && c.nodeId === claim.nodeId && (c.state === 'taken' || c.state === 'unpublishing'));
        if (claim.controllerPublish !== 'none' && !stillAttached) {
          try {
            await this.#deps.perVolume.run(rowKey(claim.namespace, claim.volumeId), () =>
              this.#deps.router.call(
                pluginId,
                'csi.controller.unpublish',
                { pluginId, volumeId: externalVolumeId, nodeId: claim.externalNodeId, secrets: volume?.secrets ?? {} },
                { topology: volume ? whereItLives(volume) : [], ...(signal ? { signal } : {}) },
              ),
            );
          } catch (err) {
            // Forced by an operator: the release ends even without a controller to answer. What it leaves
            // (the plugin's record of the publication) is said on the claim, and `volume doctor` finds and
            // undoes it (ControllerUnpublish is idempotent) once the controller runs.
            if (!claim.releaseForced || signal?.aborted) throw err;
            await this.#recordOverride(key, [], `ControllerUnpublishVolume to node ${claim.externalNodeId} was not done (${describeError(err)}); released anyway (forced by an operator); volume doctor finds the publication once the controller runs`);
          }
        }
        await this.#advance(key, 'node-detached', { state: 'controller-detached' });
        return false;
      }
      case 'controller-detached':
        await this.#advance(key, 'controller-detached', 'free');
        this.#deps.logger.info({ volumeId: claim.volumeId, allocId: claim.allocId, nodeId: claim.nodeId }, 'claim released');
        return true;
      default:
        await this.#advance(key, claim.state, 'free');
        return true;
    }
  }
}
