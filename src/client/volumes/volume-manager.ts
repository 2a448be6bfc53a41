// The volume manager of one node plugin: stages and publishes volumes for
// the allocations on this node, and undoes it, by the rules of
// docs/csi-rules.md (ordering and reference counting, uncertain
// steps, per-volume serialization, teardown without secrets, recovery).
// Nomad's counterpart is client/pluginmanager/csimanager/volume.go.
//
// What it owns, file by file: the durable records (volume-records.ts), the
// four steps and their one runner (step-runner.ts, built from step-spec.ts),
// recovery after a restart (reconcile.ts); this file is the door to them:
// lifecycle, mount/unmount, stats/expand.

import { mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import type { CallOptions, CapacityRange, CsiClient, NodeCapability, VolumeStats } from '../../csi/index.js';
import {
  BACKOFF,
  describeError,
  Lifecycle,
  silentLogger,
  systemClock,
  type BackoffPolicy,
  type Clock,
  type LifecycleState,
  type Logger,
  type SecretMap,
} from '../../lib/index.js';
import type { ClientStateStore } from '../state/index.js';
import type { Takeover } from './agent-unmount.js';
import { KeyedLock } from './keyed-lock.js';
import { MountPaths, type VolumeUsage } from './mount-paths.js';
import { MountTable } from './mount-table.js';
import { reconcileRecords } from './reconcile.js';
import { publishSpec, type PublishSpec } from './step-spec.js';
import { StepRunner } from './step-runner.js';
import { ClientVolumeError } from './client-volume-error.js';
import { VolumeRecords, type PublishRecord } from './volume-records.js';
import type { MountableVolume, MountVolumeOptions, ReconcileReport, UnmountReport, VolumeAllocPair } from './volume-types.js';

export interface VolumeManagerOptions {
  pluginId: string;
  /**
   * The CURRENT client of the serving plugin instance, asked again for every
   * attempt: the CSI manager swaps instances (plugin restart or update) under
   * the volume manager. May throw when no instance serves; that attempt is
   * then not sent.
   */
  getClient: () => CsiClient;
  store: ClientStateStore;
  /** Host path of the plugin's mount root; staging/ and per-alloc/ live here. Created if missing. */
  mountRoot: string;
  /** The same directory as the plugin sees it (default: mountRoot). */
  pluginMountRoot?: string;
  /** NodeGetCapabilities of the serving instance. */
  getCapabilities: () => NodeCapability[];
  logger?: Logger;
  clock?: Clock;
  /**
   * Backoff of the retries of one step (ABORTED, UNAVAILABLE, DEADLINE_EXCEEDED,
   * RESOURCE_EXHAUSTED, CANCELLED). Default 5 attempts, 500 ms doubling to 15 s.
   */
  backoff?: Partial<BackoffPolicy>;
  /** Deadline of one attempt; default the RPC's own (60 s for node volume calls). */
  callDeadlineMs?: number;
  /** Randomness for backoff jitter; injectable for tests. */
  random?: () => number;
  /** The mount table to read; default /proc/self/mountinfo. */
  mountInfoPath?: string;
}

export type VolumeManagerState = LifecycleState;

/**
 * Stages and publishes one node plugin's volumes for the allocations on this
 * node, and undoes it. One instance per node plugin, kept across plugin
 * instance replacements (it asks `getClient()` for every attempt).
 *
 * Lifecycle: `start()` loads the records and the mount table; `reconcile()`
 * once the wanted allocations are known; `stop()` cancels and waits for
 * calls in flight. Every method but start/stop throws ClientVolumeError
 * VOLUME_MANAGER_STOPPED outside 'running'.
 */
export class VolumeManager {
  readonly pluginId: string;
  readonly #getClient: () => CsiClient;
  readonly #getCapabilities: () => NodeCapability[];
  readonly #records: VolumeRecords;
  readonly #mountRoot: string;
  readonly #pluginMountRoot: string | undefined;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #backoff: BackoffPolicy;
  readonly #deadlineMs: number | undefined;
  readonly #random: () => number;
  readonly #mountInfoPath: string | undefined;
  readonly #locks = new KeyedLock();
  readonly #life: Lifecycle;
  readonly #steps: StepRunner;
  #paths: MountPaths | undefined;

  /** Checks the options; does no I/O. Throws ClientVolumeError (VOLUME_BAD_REQUEST) for a relative mount root. */
  constructor(opts: VolumeManagerOptions) {
    this.pluginId = opts.pluginId;
    this.#getClient = opts.getClient;
    this.#getCapabilities = opts.getCapabilities;
    this.#records = new VolumeRecords(opts.store, opts.pluginId);
    // Validates both roots now, so a misconfiguration shows at construction.
    new MountPaths(opts.mountRoot, opts.pluginMountRoot);
    this.#mountRoot = path.resolve(opts.mountRoot);
    this.#pluginMountRoot = opts.pluginMountRoot;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'volume-manager', pluginId: opts.pluginId });
    this.#clock = opts.clock ?? systemClock;
    this.#backoff = { ...BACKOFF.csiStep, ...opts.backoff };
    this.#deadlineMs = opts.callDeadlineMs;
    this.#random = opts.random ?? Math.random;
    this.#mountInfoPath = opts.mountInfoPath;
    this.#life = new Lifecycle({
      logger: this.#logger,
      refuse: (state, what) =>
        new ClientVolumeError('CLIENT_VOLUME_MANAGER_STOPPED', what === 'start' ? `volume manager of ${this.pluginId} was stopped` : `volume manager of ${this.pluginId} is ${state}`),
      stopReason: () => new ClientVolumeError('CLIENT_VOLUME_MANAGER_STOPPED', 'volume manager is stopping'),
    });
    this.#steps = new StepRunner({
      pluginId: this.pluginId,
      records: this.#records,
      getClient: this.#getClient,
      paths: () => this.paths,
      clock: this.#clock,
      logger: this.#logger,
      backoff: this.#backoff,
      random: this.#random,
      ...(this.#deadlineMs ? { callDeadlineMs: this.#deadlineMs } : {}),
    });
  }

  get state(): VolumeManagerState {
    return this.#life.state;
  }

  /** The mount layout; available once started. */
  get paths(): MountPaths {
    if (!this.#paths) throw new ClientVolumeError('CLIENT_VOLUME_MANAGER_STOPPED', 'volume manager has not started');
    return this.#paths;
  }

  // ---- lifecycle ------------------------------------------------------------

  /**
   * Creates the mount root, loads this plugin's records and reads the mount
   * table. A step left `pending` by a crash, and a `done` step the mount
   * table cannot confirm, become `uncertain`. Unmounts nothing and calls
   * no plugin: teardown waits for reconcile(). Safe to call twice (same
   * promise). Throws what the store or the filesystem throws.
   */
  start(): Promise<void> {
    return this.#life.start(() => this.#start());
  }

  async #start(): Promise<void> {
    await mkdir(this.#mountRoot, { recursive: true, mode: 0o711 });
    // The mount table shows resolved paths; work on the resolved root throughout.
    const real = await realpath(this.#mountRoot);
    this.#paths = new MountPaths(real, this.#pluginMountRoot ?? real);
    const table = await MountTable.read(this.#mountInfoPath);
    const now = this.#clock.now();
    let uncertain = 0;
    const publications = this.#records.publications();
    const intactStages = new Set<string>();
    for (const { key, value } of publications) {
      const intact = value.state === 'done' && table.has(value.targetPath);
      if (intact) {
        // A publish needs its staging: an intact target proves the staging happened.
        if (value.stageKey) intactStages.add(value.stageKey);
        continue;
      }
      uncertain++;
      this.#records.putPublication(key, { ...value, state: 'uncertain', updatedAt: now });
    }
    for (const { key, value } of this.#records.stages()) {
      const intact = value.state === 'done' && (table.has(value.stagingPath) || intactStages.has(key));
      if (intact) continue;
      uncertain++;
      this.#records.putStage(key, { ...value, state: 'uncertain', updatedAt: now });
    }
    this.#logger.info({ records: publications.length, uncertain }, 'volume manager started');
  }

  /**
   * Cancels the calls in flight (each ends recorded as uncertain or not
   * sent) and waits until every operation has written its outcome. Later
   * calls throw VOLUME_MANAGER_STOPPED. Safe to call twice.
   */
  stop(): Promise<void> {
    return this.#life.stop(async () => {
      await this.#life.drained();
      this.#logger.info('volume manager stopped');
    });
  }

  /** Runs an operation: refuses outside 'running', ties it to stop(), and counts it in flight. */
  #run<T>(signal: AbortSignal | undefined, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    return this.#life.run(fn, signal ? { signal } : {});
  }

  // ---- mount / unmount ----------------------------------------------------------

  /**
   * Makes `volume` available to allocation `allocId` with `usage`: stages it
   * once per usage on this node (when the plugin has STAGE_UNSTAGE_VOLUME),
   * then publishes it to the allocation's target. Resolves with the host
   * path the task should mount. Safe to repeat: a step already done is not
   * sent again.
   *
   * Calls for one volume are serialized; a step is recorded before it is
   * sent; retryable codes are retried with backoff. Throws ClientVolumeError:
   * VOLUME_MOUNT_FAILED (a final code: the step did not happen, nothing is
   * recorded as mounted), VOLUME_MOUNT_UNCERTAIN (it may have happened: the
   * record stays uncertain and unmountVolume will send the negation call),
   * VOLUME_BAD_REQUEST; AbortedError when `signal` fired before anything was sent.
   */
  mountVolume(volume: MountableVolume, allocId: string, usage: VolumeUsage, opts: MountVolumeOptions = {}): Promise<{ source: string }> {
    return this.#run(opts.signal, async (signal) => {
      const spec = this.#publishSpec(volume, allocId, usage, opts, this.#stages());
      return this.#locks.with(spec.externalId, signal, async () => {
        const log = this.#logger.child({ volumeId: spec.volumeId, allocId });
        if (spec.staged) await this.#steps.stage(spec, signal, log);
        try {
          await this.#steps.publish(spec, signal, log);
          await this.#checkPropagated(spec, signal, log);
        } catch (err) {
          if (err instanceof ClientVolumeError && err.code === 'CLIENT_VOLUME_MOUNT_FAILED' && spec.staged) {
            // The publish did not happen; a staging nobody uses is undone now rather than left to reconcile.
            await this.#steps.unstageIfUnused(spec.stageKey, signal, log).catch((e: unknown) =>
              log.warn({ err: describeError(e) }, 'could not unstage after a failed publish; reconcile will retry'),
            );
          }
          throw err;
        }
        return { source: spec.target.host };
      });
    });
  }

  /**
   * Undoes mountVolume for one allocation: NodeUnpublish when a publication
   * is recorded (done, pending or uncertain: an uncertain step owes its
   * negation), then NodeUnstage when no other allocation uses the staging.
   * Needs no secrets. NOT_FOUND from the plugin counts as done. Safe to
   * repeat; a volume never published here (or whose publish failed with a
   * final code) sends nothing.
   *
   * A release always ends: when the plugin refuses a step whose path shows a
   * volume whose source vanished, or any step with `force` (an operator's
   * forced detach), the agent unmounts the path itself (umount -l of every
   * layer) and the step is done; the result lists what it so unmounted.
   * Throws ClientVolumeError VOLUME_UNMOUNT_FAILED (the record stays for a
   * retry), AbortedError when `signal` fired first.
   */
  unmountVolume(volume: MountableVolume, allocId: string, usage: VolumeUsage, opts: { signal?: AbortSignal; force?: boolean } = {}): Promise<UnmountReport> {
    return this.#run(opts.signal, async (signal) => {
      const spec = this.#publishSpec(volume, allocId, usage, {});
      const takeover: Takeover = { force: opts.force === true, done: [] };
      await this.#locks.with(spec.externalId, signal, async () => {
        const log = this.#logger.child({ volumeId: spec.volumeId, allocId });
        await this.#steps.unpublish(spec.publishKey, signal, log, takeover);
        await this.#steps.unstageIfUnused(spec.stageKey, signal, log, takeover);
      });
      return { unmountedByAgent: takeover.done };
    });
  }

  // ---- stats / expand -------------------------------------------------------

  /**
   * NodeGetVolumeStats of the allocation's publication, serialized with the
   * volume's other calls. Throws ClientVolumeError
   * VOLUME_NOT_SUPPORTED without GET_VOLUME_STATS, VOLUME_NOT_MOUNTED when
   * no publication is recorded, and the plugin's CsiError as is.
   */
  stats(volume: MountableVolume, allocId: string, usage: VolumeUsage, opts: { signal?: AbortSignal } = {}): Promise<VolumeStats> {
    return this.#run(opts.signal, async (signal) => {
      this.#requireCapability('GET_VOLUME_STATS', 'volume stats');
      const spec = this.#publishSpec(volume, allocId, usage, {});
      // Even a read takes the volume's turn: the plugin sees one call per volume at a time.
      return this.#locks.with(spec.externalId, signal, async () => {
        const rec = this.#publishedOrThrow(spec);
        const stageRec = rec.stageKey ? this.#records.getStage(rec.stageKey) : undefined;
        const callOpts: CallOptions & { stagingTargetPath?: string } = { signal };
        if (stageRec) callOpts.stagingTargetPath = stageRec.pluginStagingPath;
        return this.#getClient().nodeGetVolumeStats(spec.externalId, rec.pluginTargetPath, callOpts);
      });
    });
  }

  /**
   * NodeExpandVolume on the allocation's publication, serialized with the
   * volume's other calls. Throws ClientVolumeError VOLUME_NOT_SUPPORTED without
   * EXPAND_VOLUME, VOLUME_NOT_MOUNTED when no publication is recorded, and
   * the plugin's CsiError (FAILED_PRECONDITION is never retried).
   */
  expand(
    volume: MountableVolume,
    allocId: string,
    usage: VolumeUsage,
    opts: { capacityRange: CapacityRange; secrets?: SecretMap; signal?: AbortSignal },
  ): Promise<{ capacityBytes: number }> {
    return this.#run(opts.signal, async (signal) => {
      this.#requireCapability('EXPAND_VOLUME', 'node expansion');
      const spec = this.#publishSpec(volume, allocId, usage, { secrets: opts.secrets });
      return this.#locks.with(spec.externalId, signal, async () => {
        const rec = this.#publishedOrThrow(spec);
        const stageRec = rec.stageKey ? this.#records.getStage(rec.stageKey) : undefined;
        return this.#getClient().nodeExpandVolume(
          {
            volumeId: spec.externalId,
            volumePath: rec.pluginTargetPath,
            capacityRange: opts.capacityRange,
            ...(stageRec ? { stagingTargetPath: stageRec.pluginStagingPath } : {}),
            volumeCapability: spec.capability,
            ...(opts.secrets ? { secrets: opts.secrets } : {}),
          },
          { signal, ...(this.#deadlineMs ? { deadlineMs: this.#deadlineMs } : {}) },
        );
      });
    });
  }

  #requireCapability(cap: NodeCapability, what: string): void {
    if (!this.#getCapabilities().includes(cap)) {
      throw new ClientVolumeError('CLIENT_VOLUME_NOT_SUPPORTED', `plugin ${this.pluginId} does not support ${what} (no ${cap} capability)`);
    }
  }

  /**
   * A plugin in its own file system (a container, a chroot) mounts at its
   * own view of the mount root; the mount reaches the host only if the
   * root is bound into it with bidirectional propagation. Without it the
   * task would be given the bare target directory and write beside the
   * volume, so a publish that left nothing mounted at the host target is
   * undone (NodeUnpublish) and refused with CLIENT_VOLUME_MOUNT_FAILED.
   */
  async #checkPropagated(spec: PublishSpec, signal: AbortSignal, log: Logger): Promise<void> {
    if (spec.target.plugin === spec.target.host) return;
    const table = await MountTable.read(this.#mountInfoPath);
    if (table.has(spec.target.host)) return;
    await this.#steps.unpublish(spec.publishKey, signal, log).catch((e: unknown) => log.warn({ err: describeError(e) }, 'could not unpublish a publication that did not reach the host'));
    throw new ClientVolumeError(
      'CLIENT_VOLUME_MOUNT_FAILED',
      `volume ${spec.volumeId}: plugin ${this.pluginId} published it at ${spec.target.plugin} in its own file system, but nothing is mounted at ${spec.target.host} on the host: ` +
        `its mount root does not propagate back (its task driver must bind ${this.#pluginMountRoot ?? spec.target.plugin} with bidirectional propagation)`,
    );
  }

  #publishedOrThrow(spec: PublishSpec): PublishRecord {
    const rec = this.#records.getPublication(spec.publishKey);
    if (!rec) throw new ClientVolumeError('CLIENT_VOLUME_NOT_MOUNTED', `volume ${spec.volumeId} is not published to allocation ${spec.allocId}`);
    return rec;
  }

  // ---- reconcile --------------------------------------------------------------

  /**
   * Brings the node in line with the (volume, allocation) pairs still
   * wanted, after start(). Wanted and intact: kept, no call. Wanted and
   * uncertain: staged and published again from the records (or, when that
   * needs secrets or mount flags, left for mountVolume: `awaitingMount`).
   * Not wanted: unpublished, then unstaged once unused. Stagings of volumes
   * no wanted pair uses are unstaged. Empty, unmounted leftover directories
   * are removed. Failures are reported, not thrown; safe to repeat.
   * Throws only AbortedError/VOLUME_MANAGER_STOPPED.
   */
  reconcile(wanted: ReadonlyArray<VolumeAllocPair>, opts: { signal?: AbortSignal } = {}): Promise<ReconcileReport> {
    return this.#run(opts.signal, (signal) =>
      reconcileRecords({ records: this.#records, steps: this.#steps, locks: this.#locks, paths: this.paths, logger: this.#logger }, wanted, signal),
    );
  }

  #stages(): boolean {
    return this.#getCapabilities().includes('STAGE_UNSTAGE_VOLUME');
  }

  #publishSpec(volume: MountableVolume, allocId: string, usage: VolumeUsage, opts: Omit<MountVolumeOptions, 'signal'>, staged = false): PublishSpec {
    return publishSpec({ paths: this.paths, records: this.#records }, volume, allocId, usage, opts, staged);
  }
}
