// The volume manager of one node plugin: stages and publishes volumes for
// the allocations on this node, and undoes it, by the rules of
// ../shared/CSI-CO-RULES.md (ordering and reference counting, uncertain
// steps, per-volume serialization, teardown without secrets, recovery).
// Nomad's counterpart is client/pluginmanager/csimanager/volume.go.

import { mkdir, readdir, realpath, rmdir } from 'node:fs/promises';
import path from 'node:path';
import {
  CsiError,
  CsiRequestError,
  VolumeCapability,
  type CallOptions,
  type CapacityRange,
  type CsiClient,
  type NodeCapability,
  type VolumeStats,
} from '../../csi/index.js';
import {
  BACKOFF,
  AbortedError,
  BerthError,
  describeError,
  Lifecycle,
  retry,
  silentLogger,
  systemClock,
  throwIfAborted,
  type BackoffPolicy,
  type Clock,
  type LifecycleState,
  type Logger,
  type SecretMap,
} from '../../lib/index.js';
import type { ClientStateStore } from '../state/index.js';
import { KeyedLock } from './keyed-lock.js';
import { MountPaths, usageKey, type PluginPath, type VolumeUsage } from './mount-paths.js';
import { MountTable } from './mount-table.js';
import { ClientVolumeError } from './client-volume-error.js';
import {
  recordableContext,
  VolumeRecords,
  type PublishRecord,
  type RecordedCapability,
  type StageRecord,
} from './volume-records.js';

/** The volume a call is about, as the node knows it. */
export interface MountableVolume {
  /** Berth's volume ID (unique in its namespace): names the paths and what reconcile is told. */
  id: string;
  /** Default 'default'. */
  namespace?: string;
  /** The plugin's volume_id (CSI "external ID"); default `id`. */
  externalId?: string;
  /** volume_context from CreateVolume or registration, passed to NodeStage and NodePublish. */
  volumeContext?: Record<string, string>;
}

export interface MountVolumeOptions {
  /** The publish_context ControllerPublish returned (opaque, kept and passed on). */
  publishContext?: Record<string, string>;
  /** Secrets for NodeStage and NodePublish. Never recorded or logged. */
  secrets?: SecretMap;
  signal?: AbortSignal;
}

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

/** One (volume, allocation) pair as reconcile reports it. */
export interface VolumeAllocPair {
  volumeId: string;
  allocId: string;
}

/** What reconcile did. */
export interface ReconcileReport {
  /** Wanted and intact: kept without calling the plugin. */
  kept: VolumeAllocPair[];
  /** Wanted and uncertain: published again from the records. */
  republished: VolumeAllocPair[];
  /**
   * Wanted and uncertain, but the step needs secrets or mount flags that are
   * never recorded: left in place for the caller's mountVolume to redo.
   */
  awaitingMount: VolumeAllocPair[];
  /** No longer wanted: unpublished (and unstaged when it was the last user). */
  tornDown: VolumeAllocPair[];
  /** Stagings without users that were unstaged. */
  unstaged: Array<{ volumeId: string; namespace: string }>;
  /** What failed (the record stays; a later reconcile or unmountVolume tries again). */
  failed: Array<{ volumeId: string; allocId?: string; code: string; message: string }>;
  /** Empty, unmounted directories left by earlier runs that were removed. */
  removedDirs: number;
}

export type VolumeManagerState = LifecycleState;

/** How many volumes reconcile works on at once. */
const RECONCILE_CONCURRENCY = 4;

/** Everything one step needs, from a mountVolume call or from a record. */
interface StepSpec {
  namespace: string;
  volumeId: string;
  externalId: string;
  usageKey: string;
  readOnly: boolean;
  capability: VolumeCapability;
  recorded: RecordedCapability;
  publishContext: Record<string, string>;
  /** What goes on the wire. */
  volumeContext: Record<string, string>;
  /** What may be written down. */
  recordContext: Record<string, string>;
  replayable: boolean;
  secrets?: SecretMap;
  stageKey: string;
  staging: PluginPath;
}

interface PublishSpec extends StepSpec {
  allocId: string;
  /** Whether this publication goes through a staging (STAGE_UNSTAGE_VOLUME, or recorded so). */
  staged: boolean;
  publishKey: string;
  target: PluginPath;
}

/** The outcome of a plugin call that failed, after its retries. */
class StepFailure extends Error {
  override readonly cause: unknown;
  /** True when the step may have happened. */
  readonly uncertain: boolean;

  constructor(cause: unknown, uncertain: boolean) {
    super(describeError(cause), { cause });
    this.cause = cause;
    this.uncertain = uncertain;
  }
}

/** Thrown by getClient failures: that attempt was never sent. */
class NotSent extends Error {}

/**
 * Stages and publishes one node plugin's volumes for the allocations on this
 * node, and undoes it. One instance per node plugin, kept across plugin
 * instance replacements (it asks `getClient()` for every attempt).
 *
 * Lifecycle: `start()` loads the records and the mount table; `reconcile()`
 * once the wanted allocations are known; `stop()` cancels and waits for
 * calls in flight. Every method but start/stop throws ClientVolumeError
 * CLIENT_VOLUME_MANAGER_STOPPED outside 'running'.
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
  #paths: MountPaths | undefined;

  /** Checks the options; does no I/O. Throws ClientVolumeError (CLIENT_VOLUME_BAD_REQUEST) for a relative mount root. */
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
   * calls throw CLIENT_VOLUME_MANAGER_STOPPED. Safe to call twice.
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
   * CLIENT_VOLUME_MOUNT_FAILED (a final code: the step did not happen, nothing is
   * recorded as mounted), CLIENT_VOLUME_MOUNT_UNCERTAIN (it may have happened: the
   * record stays uncertain and unmountVolume will send the negation call),
   * CLIENT_VOLUME_BAD_REQUEST; AbortedError when `signal` fired before anything was sent.
   */
  mountVolume(volume: MountableVolume, allocId: string, usage: VolumeUsage, opts: MountVolumeOptions = {}): Promise<{ source: string }> {
    return this.#run(opts.signal, async (signal) => {
      const spec = this.#publishSpec(volume, allocId, usage, opts, this.#stages());
      return this.#locks.with(spec.externalId, signal, async () => {
        const log = this.#logger.child({ volumeId: spec.volumeId, allocId });
        if (spec.staged) await this.#stage(spec, signal, log);
        try {
          await this.#publish(spec, signal, log);
        } catch (err) {
          if (err instanceof ClientVolumeError && err.code === 'CLIENT_VOLUME_MOUNT_FAILED' && spec.staged) {
            // The publish did not happen; a staging nobody uses is undone now rather than left to reconcile.
            await this.#unstageIfUnused(spec.stageKey, signal, log).catch((e: unknown) =>
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
   * final code) sends nothing. Throws ClientVolumeError CLIENT_VOLUME_UNMOUNT_FAILED
   * (the record stays for a retry), AbortedError when `signal` fired first.
   */
  unmountVolume(volume: MountableVolume, allocId: string, usage: VolumeUsage, opts: { signal?: AbortSignal } = {}): Promise<void> {
    return this.#run(opts.signal, async (signal) => {
      const spec = this.#publishSpec(volume, allocId, usage, {});
      await this.#locks.with(spec.externalId, signal, async () => {
        const log = this.#logger.child({ volumeId: spec.volumeId, allocId });
        await this.#unpublish(spec.publishKey, signal, log);
        await this.#unstageIfUnused(spec.stageKey, signal, log);
      });
    });
  }

  // ---- stats / expand -------------------------------------------------------

  /**
   * NodeGetVolumeStats of the allocation's publication, serialized with the
   * volume's other calls. Throws ClientVolumeError
   * CLIENT_VOLUME_NOT_SUPPORTED without GET_VOLUME_STATS, CLIENT_VOLUME_NOT_MOUNTED when
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
   * volume's other calls. Throws ClientVolumeError CLIENT_VOLUME_NOT_SUPPORTED without
   * EXPAND_VOLUME, CLIENT_VOLUME_NOT_MOUNTED when no publication is recorded, and
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
   * Throws only AbortedError/CLIENT_VOLUME_MANAGER_STOPPED.
   */
  reconcile(wanted: ReadonlyArray<VolumeAllocPair>, opts: { signal?: AbortSignal } = {}): Promise<ReconcileReport> {
    return this.#run(opts.signal, async (signal) => {
      const report: ReconcileReport = { kept: [], republished: [], awaitingMount: [], tornDown: [], unstaged: [], failed: [], removedDirs: 0 };
      const wantedPairs = new Set(wanted.map((w) => pairKey(w.volumeId, w.allocId)));
      const wantedVolumes = new Set(wanted.map((w) => w.volumeId));
      // Group by the plugin's volume ID: one volume's steps run in order, volumes run side by side.
      const byVolume = new Map<string, { publications: string[]; stages: string[] }>();
      const group = (externalId: string): { publications: string[]; stages: string[] } => {
        let g = byVolume.get(externalId);
        if (!g) byVolume.set(externalId, (g = { publications: [], stages: [] }));
        return g;
      };
      for (const { key, value } of this.#records.publications()) group(value.externalId).publications.push(key);
      for (const { key, value } of this.#records.stages()) group(value.externalId).stages.push(key);

      const work = [...byVolume.entries()];
      const worker = async (): Promise<void> => {
        for (let next = work.shift(); next; next = work.shift()) {
          const [externalId, g] = next;
          await this.#locks.with(externalId, signal, () => this.#reconcileVolume(g, wantedPairs, wantedVolumes, report, signal));
        }
      };
      await Promise.all(Array.from({ length: Math.min(RECONCILE_CONCURRENCY, work.length) }, worker));
      throwIfAborted(signal);
      report.removedDirs = await this.#removeLeftovers();
      this.#logger.info(
        {
          kept: report.kept.length,
          republished: report.republished.length,
          awaitingMount: report.awaitingMount.length,
          tornDown: report.tornDown.length,
          unstaged: report.unstaged.length,
          failed: report.failed.length,
          removedDirs: report.removedDirs,
        },
        'volumes reconciled',
      );
      return report;
    });
  }

  async #reconcileVolume(
    g: { publications: string[]; stages: string[] },
    wantedPairs: ReadonlySet<string>,
    wantedVolumes: ReadonlySet<string>,
    report: ReconcileReport,
    signal: AbortSignal,
  ): Promise<void> {
    for (const key of g.publications) {
      // Re-read under the lock: a mountVolume may have changed it since the listing.
      const rec = this.#records.getPublication(key);
      if (!rec) continue;
      const pair = { volumeId: rec.volumeId, allocId: rec.allocId };
      const log = this.#logger.child(pair);
      try {
        if (wantedPairs.has(pairKey(rec.volumeId, rec.allocId))) {
          if (rec.state === 'done') {
            report.kept.push(pair);
          } else if (!rec.replayable || !this.#stageReplayable(rec)) {
            report.awaitingMount.push(pair);
          } else {
            const spec = this.#specFromRecord(rec);
            if (rec.stageKey) await this.#stage(spec, signal, log);
            await this.#publish(spec, signal, log);
            report.republished.push(pair);
          }
        } else {
          await this.#unpublish(key, signal, log);
          report.tornDown.push(pair);
        }
      } catch (err) {
        if (err instanceof AbortedError) throw err;
        report.failed.push({ ...pair, code: err instanceof BerthError ? err.code : 'UNKNOWN', message: describeError(err) });
      }
    }
    for (const key of g.stages) {
      const rec = this.#records.getStage(key);
      if (!rec || wantedVolumes.has(rec.volumeId)) continue;
      const log = this.#logger.child({ volumeId: rec.volumeId });
      try {
        if (await this.#unstageIfUnused(key, signal, log)) report.unstaged.push({ volumeId: rec.volumeId, namespace: rec.namespace });
      } catch (err) {
        if (err instanceof AbortedError) throw err;
        report.failed.push({ volumeId: rec.volumeId, code: err instanceof BerthError ? err.code : 'UNKNOWN', message: describeError(err) });
      }
    }
  }

  /** False when the publication's staging must be redone and that needs what is never recorded. */
  #stageReplayable(rec: PublishRecord): boolean {
    const stage = rec.stageKey ? this.#records.getStage(rec.stageKey) : undefined;
    return !stage || (stage.state === 'done' && stage.op === 'stage') || stage.replayable;
  }

  /** Removes empty, unmounted directories under staging/ and per-alloc/ that no record names. */
  async #removeLeftovers(): Promise<number> {
    const paths = this.paths;
    const named = new Set<string>();
    for (const { value } of this.#records.publications()) named.add(value.targetPath);
    for (const { value } of this.#records.stages()) named.add(value.stagingPath);
    let removed = 0;
    for (const top of [paths.stagingRoot, paths.perAllocRoot]) {
      for (const a of await listDirs(top)) {
        for (const b of await listDirs(a)) {
          for (const c of await listDirs(b)) {
            if (named.has(c)) continue;
            if (await removeEmptyDir(c)) removed++;
          }
          if (await removeEmptyDir(b)) removed++;
        }
        if (await removeEmptyDir(a)) removed++;
      }
    }
    return removed;
  }

  // ---- steps ------------------------------------------------------------------

  #stages(): boolean {
    return this.#getCapabilities().includes('STAGE_UNSTAGE_VOLUME');
  }

  /** NodeStage unless the staging is recorded done. Call with the volume's lock held. */
  async #stage(spec: StepSpec, signal: AbortSignal, log: Logger): Promise<void> {
    const prev = this.#records.getStage(spec.stageKey);
    if (prev?.state === 'done' && prev.op === 'stage') return;
    throwIfAborted(signal);
    await mkdir(spec.staging.host, { recursive: true, mode: 0o750 });
    const rec: StageRecord = {
      ...this.#recordBase(spec),
      op: 'stage',
      state: 'pending',
      stagingPath: spec.staging.host,
      pluginStagingPath: spec.staging.plugin,
    };
    this.#records.putStage(spec.stageKey, rec);
    try {
      await this.#call(signal, (client, callOpts) =>
        client.nodeStageVolume(
          {
            volumeId: spec.externalId,
            publishContext: spec.publishContext,
            stagingTargetPath: spec.staging.plugin,
            volumeCapability: spec.capability,
            volumeContext: spec.volumeContext,
            ...(spec.secrets ? { secrets: spec.secrets } : {}),
          },
          callOpts,
        ),
      );
    } catch (err) {
      const failure = asFailure(err);
      if (failure.uncertain || prev) {
        // It may have happened (or an earlier attempt may have): NodeUnstage is owed on teardown.
        this.#records.putStage(spec.stageKey, { ...rec, state: 'uncertain', updatedAt: this.#clock.now() });
        log.warn({ stagingPath: spec.staging.host, err: describeError(failure.cause) }, 'volume stage is uncertain');
        throw stepError('CLIENT_VOLUME_MOUNT_UNCERTAIN', `staging volume ${spec.volumeId} may or may not have happened`, failure.cause);
      }
      this.#records.deleteStage(spec.stageKey);
      await removeEmptyDirs(spec.staging.host, this.paths.stagingRoot);
      log.warn({ stagingPath: spec.staging.host, err: describeError(failure.cause) }, 'volume stage failed');
      throw stepError('CLIENT_VOLUME_MOUNT_FAILED', `staging volume ${spec.volumeId} failed`, failure.cause);
    }
    this.#records.putStage(spec.stageKey, { ...rec, state: 'done', updatedAt: this.#clock.now() });
    log.info({ stagingPath: spec.staging.host }, 'volume staged');
  }

  /** NodePublish unless the publication is recorded done. Call with the volume's lock held. */
  async #publish(spec: PublishSpec, signal: AbortSignal, log: Logger): Promise<void> {
    const prev = this.#records.getPublication(spec.publishKey);
    if (prev?.state === 'done' && prev.op === 'publish') return;
    throwIfAborted(signal);
    // The CO makes the parent; the plugin makes the target itself.
    await mkdir(path.dirname(spec.target.host), { recursive: true, mode: 0o750 });
    const stages = spec.staged;
    const rec: PublishRecord = {
      ...this.#recordBase(spec),
      op: 'publish',
      state: 'pending',
      allocId: spec.allocId,
      targetPath: spec.target.host,
      pluginTargetPath: spec.target.plugin,
      ...(stages ? { stageKey: spec.stageKey } : {}),
    };
    this.#records.putPublication(spec.publishKey, rec);
    try {
      await this.#call(signal, (client, callOpts) =>
        client.nodePublishVolume(
          {
            volumeId: spec.externalId,
            publishContext: spec.publishContext,
            ...(stages ? { stagingTargetPath: spec.staging.plugin } : {}),
            targetPath: spec.target.plugin,
            volumeCapability: spec.capability,
            readonly: spec.readOnly,
            volumeContext: spec.volumeContext,
            ...(spec.secrets ? { secrets: spec.secrets } : {}),
          },
          callOpts,
        ),
      );
    } catch (err) {
      const failure = asFailure(err);
      if (failure.uncertain || prev) {
        this.#records.putPublication(spec.publishKey, { ...rec, state: 'uncertain', updatedAt: this.#clock.now() });
        log.warn({ targetPath: spec.target.host, err: describeError(failure.cause) }, 'volume publish is uncertain');
        throw stepError('CLIENT_VOLUME_MOUNT_UNCERTAIN', `publishing volume ${spec.volumeId} to allocation ${spec.allocId} may or may not have happened`, failure.cause);
      }
      this.#records.deletePublication(spec.publishKey);
      await removeEmptyDirs(spec.target.host, this.paths.perAllocRoot);
      log.warn({ targetPath: spec.target.host, err: describeError(failure.cause) }, 'volume publish failed');
      throw stepError('CLIENT_VOLUME_MOUNT_FAILED', `publishing volume ${spec.volumeId} to allocation ${spec.allocId} failed`, failure.cause);
    }
    this.#records.putPublication(spec.publishKey, { ...rec, state: 'done', updatedAt: this.#clock.now() });
    log.info({ targetPath: spec.target.host }, 'volume published');
  }

  /** NodeUnpublish of a recorded publication, if any. Call with the volume's lock held. */
  async #unpublish(key: string, signal: AbortSignal, log: Logger): Promise<void> {
    const prev = this.#records.getPublication(key);
    if (!prev) return;
    throwIfAborted(signal);
    const rec: PublishRecord = { ...prev, op: 'unpublish', state: 'pending', updatedAt: this.#clock.now() };
    this.#records.putPublication(key, rec);
    try {
      await this.#call(signal, (client, callOpts) => client.nodeUnpublishVolume(prev.externalId, prev.pluginTargetPath, callOpts));
    } catch (err) {
      const failure = asFailure(err);
      // A final code: nothing changed, the publication stands as it was. Otherwise it may be half gone.
      this.#records.putPublication(key, failure.uncertain ? { ...rec, state: 'uncertain', updatedAt: this.#clock.now() } : prev);
      log.warn({ targetPath: prev.targetPath, err: describeError(failure.cause) }, 'volume unpublish failed');
      throw stepError('CLIENT_VOLUME_UNMOUNT_FAILED', `unpublishing volume ${prev.volumeId} from allocation ${prev.allocId} failed`, failure.cause);
    }
    this.#records.deletePublication(key);
    await removeEmptyDirs(prev.targetPath, this.paths.perAllocRoot);
    log.info({ targetPath: prev.targetPath }, 'volume unpublished');
  }

  /**
   * NodeUnstage of a recorded staging that no publication uses. Resolves
   * true when it unstaged. Call with the volume's lock held.
   */
  async #unstageIfUnused(key: string, signal: AbortSignal, log: Logger): Promise<boolean> {
    const prev = this.#records.getStage(key);
    if (!prev) return false;
    if (this.#records.usersOf(key) > 0) return false;
    throwIfAborted(signal);
    const rec: StageRecord = { ...prev, op: 'unstage', state: 'pending', updatedAt: this.#clock.now() };
    this.#records.putStage(key, rec);
    try {
      await this.#call(signal, (client, callOpts) => client.nodeUnstageVolume(prev.externalId, prev.pluginStagingPath, callOpts));
    } catch (err) {
      const failure = asFailure(err);
      this.#records.putStage(key, failure.uncertain ? { ...rec, state: 'uncertain', updatedAt: this.#clock.now() } : prev);
      log.warn({ stagingPath: prev.stagingPath, err: describeError(failure.cause) }, 'volume unstage failed');
      throw stepError('CLIENT_VOLUME_UNMOUNT_FAILED', `unstaging volume ${prev.volumeId} failed`, failure.cause);
    }
    this.#records.deleteStage(key);
    await removeEmptyDirs(prev.stagingPath, this.paths.stagingRoot);
    log.info({ stagingPath: prev.stagingPath }, 'volume unstaged');
    return true;
  }

  /**
   * One plugin call with this manager's retries, each attempt on the client
   * serving at that moment. Rejects with StepFailure, which says whether
   * any attempt may have reached the plugin and acted.
   */
  async #call<T>(signal: AbortSignal, fn: (client: CsiClient, opts: CallOptions) => Promise<T>): Promise<T> {
    let uncertain = false;
    const callOpts: CallOptions = { signal, retry: false, ...(this.#deadlineMs ? { deadlineMs: this.#deadlineMs } : {}) };
    try {
      return await retry(
        async () => {
          let client: CsiClient;
          try {
            client = this.#getClient();
          } catch (err) {
            throw new NotSent(describeError(err), { cause: err });
          }
          try {
            return await fn(client, callOpts);
          } catch (err) {
            if (!isFinal(err)) uncertain = true;
            throw err;
          }
        },
        {
          policy: this.#backoff,
          clock: this.#clock,
          random: this.#random,
          signal,
          shouldRetry: (err) => (err instanceof CsiError && err.retryable) || err instanceof NotSent,
          onRetry: ({ err, attempt, delayMs }) =>
            this.#logger.debug({ attempt, delayMs, code: err instanceof BerthError ? err.code : undefined }, 'retrying volume step'),
        },
      );
    } catch (err) {
      throw new StepFailure(err instanceof NotSent ? err.cause : err, uncertain);
    }
  }

  // ---- specs ------------------------------------------------------------------

  #recordBase(spec: StepSpec): Omit<StageRecord, 'op' | 'state' | 'stagingPath' | 'pluginStagingPath'> {
    return {
      pluginId: this.pluginId,
      namespace: spec.namespace,
      volumeId: spec.volumeId,
      externalId: spec.externalId,
      usageKey: spec.usageKey,
      readOnly: spec.readOnly,
      capability: spec.recorded,
      publishContext: spec.publishContext,
      volumeContext: spec.recordContext,
      replayable: spec.replayable,
      updatedAt: this.#clock.now(),
    };
  }

  #publishSpec(volume: MountableVolume, allocId: string, usage: VolumeUsage, opts: MountVolumeOptions, staged = false): PublishSpec {
    const paths = this.paths;
    const namespace = volume.namespace ?? 'default';
    const externalId = volume.externalId ?? volume.id;
    if (externalId === '') throw new ClientVolumeError('CLIENT_VOLUME_BAD_REQUEST', 'volume ID must not be empty');
    const capability = capabilityOf(usage);
    const key = usageKey(usage);
    const context = recordableContext(volume.volumeContext ?? {});
    return {
      namespace,
      volumeId: volume.id,
      externalId,
      allocId,
      staged,
      usageKey: key,
      readOnly: usage.readOnly,
      capability,
      recorded: {
        accessMode: capability.accessMode,
        attachmentMode: capability.attachment,
        fsType: capability.fsType,
        volumeMountGroup: capability.volumeMountGroup,
        mountFlagCount: capability.mountFlagCount,
      },
      publishContext: { ...opts.publishContext },
      volumeContext: { ...volume.volumeContext },
      recordContext: context.context,
      replayable: !context.dropped && capability.mountFlagCount === 0 && (opts.secrets?.size ?? 0) === 0,
      ...(opts.secrets ? { secrets: opts.secrets } : {}),
      stageKey: this.#records.stageKey(namespace, volume.id, key),
      staging: paths.staging(namespace, volume.id, key),
      publishKey: this.#records.publishKey(allocId, namespace, volume.id, key),
      target: paths.target(allocId, volume.id, key),
    };
  }

  /** A spec to redo a replayable publication from its record alone. */
  #specFromRecord(rec: PublishRecord): PublishSpec {
    const c = rec.capability;
    const usage: VolumeUsage = {
      readOnly: rec.readOnly,
      attachmentMode: c.attachmentMode,
      accessMode: c.accessMode,
      mountOptions: { fsType: c.fsType, volumeMountGroup: c.volumeMountGroup },
    };
    const stageRec = rec.stageKey ? this.#records.getStage(rec.stageKey) : undefined;
    return this.#publishSpec(
      { id: rec.volumeId, namespace: rec.namespace, externalId: rec.externalId, volumeContext: rec.volumeContext },
      rec.allocId,
      usage,
      { publishContext: stageRec?.publishContext ?? rec.publishContext },
      rec.stageKey !== undefined,
    );
  }
}

function pairKey(volumeId: string, allocId: string): string {
  return `${volumeId}\u0000${allocId}`;
}

function capabilityOf(usage: VolumeUsage): VolumeCapability {
  if (usage.attachmentMode === 'block-device') return VolumeCapability.block(usage.accessMode);
  return VolumeCapability.mount(usage.accessMode, {
    fsType: usage.mountOptions?.fsType ?? '',
    mountFlags: usage.mountOptions?.mountFlags ?? [],
    volumeMountGroup: usage.mountOptions?.volumeMountGroup ?? '',
  });
}

/** True when an attempt's error proves the plugin did not act. */
function isFinal(err: unknown): boolean {
  if (err instanceof CsiError) return err.final;
  // Refused before sending, or aborted before sending: nothing reached the plugin.
  return err instanceof CsiRequestError || err instanceof AbortedError || err instanceof NotSent;
}

function asFailure(err: unknown): StepFailure {
  if (err instanceof StepFailure) return err;
  return new StepFailure(err, !isFinal(err));
}

function stepError(code: 'CLIENT_VOLUME_MOUNT_FAILED' | 'CLIENT_VOLUME_MOUNT_UNCERTAIN' | 'CLIENT_VOLUME_UNMOUNT_FAILED', what: string, cause: unknown): BerthError {
  // An abort before anything was sent stays an AbortedError: the caller asked for it.
  if (cause instanceof AbortedError && code !== 'CLIENT_VOLUME_MOUNT_UNCERTAIN') return cause;
  return new ClientVolumeError(code, `${what}: ${describeError(cause)}`, { cause });
}

async function listDirs(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory()).map((e) => path.join(dir, e.name));
  } catch {
    return [];
  }
}

/** rmdir when empty and not a mount point (the kernel refuses both). Resolves true when removed. */
async function removeEmptyDir(dir: string): Promise<boolean> {
  try {
    await rmdir(dir);
    return true;
  } catch {
    return false;
  }
}

/** Removes `dir` and then its parents while they are empty, stopping below `stopAt`. */
async function removeEmptyDirs(dir: string, stopAt: string): Promise<void> {
  for (let d = dir; d !== stopAt && d.startsWith(`${stopAt}/`); d = path.dirname(d)) {
    if (!(await removeEmptyDir(d))) {
      // A target the plugin removed itself is gone already; carry on to its parent.
      try {
        await readdir(d);
        return;
      } catch {
        continue;
      }
    }
  }
}
