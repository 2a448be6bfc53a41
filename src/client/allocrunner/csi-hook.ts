// CSI volumes of an allocation (Nomad's csi_hook): prerun waits for the node
// plugin, claims each volume from the server, and mounts it through the
// plugin's volume manager with the publish context; postrun unmounts, then
// releases the claim. Every step is written down before it is taken: each
// volume's record moves only through csiVolumeTransition (csi-volume-state.ts).
// It needs of the CSI manager only VolumeManagers (waitForPlugin,
// volumeManagerFor), as Nomad's csi_hook needs csimanager.Manager.

import { AbortedError, describeError, retry, type BackoffPolicy, type Clock, type Logger } from '../../lib/index.js';
import { isReadOnlyMode, type AccessMode, type AttachmentMode } from '../../csi/index.js';
import { volumeIdFor, volumeIsReadOnly, type GroupVolume } from '../../structs/index.js';
import type { VolumeManagers, VolumeMounter } from '../csimanager/index.js';
import type { MountableVolume, VolumeUsage } from '../volumes/index.js';
import { TASK_EVENTS } from '../taskrunner/index.js';
import { AllocRunnerError, type AllocHook, type AllocHookContext } from './alloc-hook.js';
import type { CsiVolumeRecord } from './alloc-records.js';
import { csiVolumeTransition, type CsiVolumeEvent } from './csi-volume-state.js';
import { CLAIM_RETRYABLE_CODES, type ClaimedVolume, type VolumeClaimer, type VolumeClaimRequest } from './volume-claimer.js';

/** Codes of the CSI manager and volume manager that mean "the plugin cannot serve yet": wait and retry. */
const PLUGIN_NOT_READY = new Set(['CSI_PLUGIN_NOT_FOUND', 'CSI_PLUGIN_UNHEALTHY', 'CLIENT_VOLUME_MOUNT_UNCERTAIN', 'CLIENT_VOLUME_MANAGER_STOPPED']);

function pluginNotReady(err: unknown): boolean {
  return PLUGIN_NOT_READY.has((err as { code?: string }).code ?? '');
}

export interface CsiHookOptions {
  /** The node plugins' volume managers (CsiManager). */
  csiManager: VolumeManagers;
  claimer: VolumeClaimer;
  clock: Clock;
  logger: Logger;
  backoff: BackoffPolicy;
  /** Unmount attempts in postrun before giving up (the record stays for reconcile). Default 8. */
  unmountAttempts?: number;
}

/** Whether a claimer error means "try again later". */
export function claimRetryable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { retryable?: unknown; code?: unknown; cause?: unknown; name?: unknown };
  if (e.retryable === true) return true;
  if (e.retryable === false) return false;
  if (typeof e.code === 'string' && CLAIM_RETRYABLE_CODES.includes(e.code)) return true;
  // fetch() wraps socket errors: TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } }).
  if (e.cause && e.cause !== err) return claimRetryable(e.cause);
  return false;
}

export class CsiHook implements AllocHook {
  readonly name = 'csi';
  readonly #o: CsiHookOptions;

  constructor(opts: CsiHookOptions) {
    this.#o = opts;
  }

  /**
   * Claims and mounts every CSI volume of the group, one after the other.
   * Waits (does not fail) while the plugin is not registered or not healthy
   * and while claims are exhausted or the server is unreachable. Throws
   * AllocRunnerError ALLOC_VOLUME_CLAIM_FAILED / ALLOC_VOLUME_MOUNT_FAILED on a
   * final error, AbortedError when the allocation is stopped meanwhile.
   */
  async prerun(ctx: AllocHookContext): Promise<void> {
    for (const [name, vol] of Object.entries(ctx.group.volumes)) {
      if (vol.type !== 'csi') continue;
      const source = await this.#mountOne(ctx, name, vol);
      ctx.volumes.set(name, { source, readOnly: volumeIsReadOnly(vol) });
    }
  }

  restore(ctx: AllocHookContext): void {
    for (const [name, rec] of Object.entries(ctx.record.csi)) {
      if (rec.state === 'mounted' && rec.source) ctx.volumes.set(name, { source: rec.source, readOnly: rec.readOnly });
    }
  }

  /**
   * Unmounts each volume (NodeUnpublish, NodeUnstage when last), then
   * releases its claim. A volume whose unmount keeps failing is not
   * released (a claim never goes while the volume may be mounted); its
   * record stays and the error is thrown after the others were handled.
   */
  async postrun(ctx: AllocHookContext): Promise<void> {
    let firstError: unknown;
    for (const [name, rec] of Object.entries(ctx.record.csi).reverse()) {
      try {
        await this.#teardownOne(ctx, name, rec);
      } catch (err) {
        if (err instanceof AbortedError) throw err;
        firstError ??= err;
        ctx.logger.error({ volume: name, volumeId: rec.volumeId, err: describeError(err) }, 'volume teardown failed');
      }
    }
    if (firstError) throw firstError;
  }

  /**
   * Mounts again, from the record, the volumes of a runner restored after an
   * agent restart (call after VolumeManager.reconcile): steps recorded intact
   * send nothing. `reclaim(volumeId)` names the volumes whose redone step
   * needs what is never recorded (reconcile's `awaitingMount`).
   */
  async remount(ctx: AllocHookContext, opts: { reclaim?: (volumeId: string) => boolean } = {}): Promise<void> {
    for (const [name, rec] of Object.entries(ctx.record.csi)) {
      if (rec.state !== 'mounted' || !rec.pluginId) continue;
      const vol = ctx.group.volumes[name];
      // Secrets, mount flags and credential-looking context values are never
      // written down. A mount that must be redone with them (`reclaim`) asks
      // the server again: the allocation's claim answers as before. Without
      // an answer, what the record has is used.
      const fresh = vol && opts.reclaim?.(rec.volumeId)
        ? await this.#o.claimer.claim(this.#claimRequest(ctx, rec, vol), { signal: ctx.signal }).catch((err: unknown) => {
            if (err instanceof AbortedError) throw err;
            ctx.logger.warn({ volume: name, volumeId: rec.volumeId, err: describeError(err) }, 'volume claim not answered on remount; using the record');
            return undefined;
          })
        : undefined;
      const mounter = await this.#volumeManager(ctx, rec.pluginId);
      const { source } = await mounter.mountVolume(
        fresh ? { ...mountable(rec), volumeContext: fresh.volume.context } : mountable(rec),
        ctx.alloc.id,
        usageOf(rec, vol, mountFlagsOf(fresh?.volume, vol)),
        {
          publishContext: fresh?.publishContext ?? rec.publishContext ?? {},
          ...(fresh?.volume.secrets ? { secrets: fresh.volume.secrets } : {}),
          signal: ctx.signal,
        },
      );
      if (ctx.record.csi[name] !== rec) {
        // The allocation's postrun moved the volume on meanwhile (unmounted, released): what it wrote stands.
        ctx.logger.info({ volume: name, volumeId: rec.volumeId }, 'volume moved on during remount; its record is left as it is');
        continue;
      }
      this.#apply(ctx, name, { type: 'mounted', source });
      ctx.volumes.set(name, { source, readOnly: rec.readOnly });
    }
  }

  /** Moves volume `name` through csiVolumeTransition and saves the record. Returns the new record (undefined once released). */
  #apply(ctx: AllocHookContext, name: string, event: Exclude<CsiVolumeEvent, { type: 'released' }>): CsiVolumeRecord;
  #apply(ctx: AllocHookContext, name: string, event: CsiVolumeEvent): CsiVolumeRecord | undefined;
  #apply(ctx: AllocHookContext, name: string, event: CsiVolumeEvent): CsiVolumeRecord | undefined {
    const next = csiVolumeTransition(ctx.record.csi[name], event);
    if (next) ctx.record.csi[name] = next;
    else delete ctx.record.csi[name];
    ctx.save();
    return next;
  }

  #claimRequest(ctx: AllocHookContext, rec: CsiVolumeRecord, vol: GroupVolume): VolumeClaimRequest {
    return {
      namespace: rec.namespace,
      volumeId: rec.volumeId,
      allocId: ctx.alloc.id,
      mode: rec.readOnly ? 'read' : 'write',
      accessMode: vol.accessMode,
      attachmentMode: vol.attachmentMode,
    };
  }

  async #mountOne(ctx: AllocHookContext, name: string, vol: GroupVolume): Promise<string> {
    const { alloc } = ctx;
    const volumeId = volumeIdFor(vol, alloc.index ?? 0);
    const readOnly = volumeIsReadOnly(vol);
    const rec = ctx.record.csi[name] ?? this.#apply(ctx, name, { type: 'claiming', volumeId, namespace: alloc.namespace, readOnly });
    const log = ctx.logger.child({ volume: name, volumeId });
    const knownPlugin = alloc.csiVolumes?.find((v) => v.volumeId === volumeId)?.pluginId;
    if (knownPlugin) await this.#waitForPlugin(ctx, knownPlugin, volumeId);

    const claim = await this.#retrying(
      ctx,
      () => this.#o.claimer.claim(this.#claimRequest(ctx, rec, vol), { signal: ctx.signal }),
      claimRetryable,
      (err, delayMs) => {
        log.warn({ err: describeError(err), delayMs }, 'volume claim not granted yet; retrying');
        ctx.event(TASK_EVENTS.volumeWaiting, `Waiting to claim CSI volume "${volumeId}": ${describeError(err)}`, { volume: volumeId });
      },
    ).catch((err: unknown) => {
      if (err instanceof AbortedError) throw err;
      throw new AllocRunnerError('ALLOC_VOLUME_CLAIM_FAILED', `cannot claim CSI volume "${volumeId}": ${describeError(err)}`, { cause: err });
    });
    const v = claim.volume;
    const claimed = this.#apply(ctx, name, { type: 'claimed', volume: v, publishContext: claim.publishContext, groupFsType: vol.mountOptions?.fsType });
    if (!knownPlugin) await this.#waitForPlugin(ctx, v.pluginId, volumeId);

    // Mount flags (possibly credentials) are handed to the plugin, never written down.
    // A job read back from a public view carries "[REDACTED]" placeholders: never send those as flags.
    const usage = usageOf(claimed, vol, mountFlagsOf(v, vol));
    const { source } = await this.#retrying(
      ctx,
      async () => {
        const mounter = await this.#volumeManager(ctx, v.pluginId);
        return mounter.mountVolume({ ...mountable(claimed), volumeContext: v.context }, alloc.id, usage, {
          publishContext: claimed.publishContext ?? {},
          ...(v.secrets ? { secrets: v.secrets } : {}),
          signal: ctx.signal,
        });
      },
      pluginNotReady,
      (err, delayMs) => log.warn({ err: describeError(err), delayMs }, 'volume not mounted yet; retrying'),
    ).catch((err: unknown) => {
      if (err instanceof AbortedError) throw err;
      throw new AllocRunnerError('ALLOC_VOLUME_MOUNT_FAILED', `cannot mount CSI volume "${volumeId}": ${describeError(err)}`, { cause: err });
    });
    this.#apply(ctx, name, { type: 'mounted', source });
    log.info({ plugin: v.pluginId }, 'volume mounted');
    ctx.event(TASK_EVENTS.volumeMounted, `CSI volume "${volumeId}" mounted by plugin "${v.pluginId}"`, { volume: volumeId, plugin: v.pluginId });
    return source;
  }

  async #teardownOne(ctx: AllocHookContext, name: string, rec: CsiVolumeRecord): Promise<void> {
    const log = ctx.logger.child({ volume: name, volumeId: rec.volumeId });
    if (rec.pluginId && (rec.state === 'claimed' || rec.state === 'mounted')) {
      const pluginId = rec.pluginId;
      const vol = ctx.group.volumes[name];
      await this.#retrying(
        ctx,
        () => this.#o.csiManager.volumeManagerFor(pluginId).unmountVolume(mountable(rec), ctx.alloc.id, usageOf(rec, vol), { signal: ctx.signal }),
        () => true,
        (err, delayMs) => log.warn({ err: describeError(err), delayMs }, 'volume not unmounted yet; retrying'),
        this.#o.unmountAttempts ?? 8,
      ).catch((err: unknown) => {
        if (err instanceof AbortedError) throw err;
        ctx.event(TASK_EVENTS.volumeWaiting, `CSI volume "${rec.volumeId}" could not be unmounted: ${describeError(err)}`, { volume: rec.volumeId });
        throw new AllocRunnerError('ALLOC_VOLUME_UNMOUNT_FAILED', `cannot unmount CSI volume "${rec.volumeId}": ${describeError(err)}`, { cause: err });
      });
      if (rec.state === 'mounted') {
        ctx.event(TASK_EVENTS.volumeUnmounted, `CSI volume "${rec.volumeId}" unmounted`, { volume: rec.volumeId, plugin: pluginId });
      }
      this.#apply(ctx, name, { type: 'unmounted' });
    }
    await this.#retrying(
      ctx,
      () => this.#o.claimer.release({ namespace: rec.namespace, volumeId: rec.volumeId, allocId: ctx.alloc.id }, { signal: ctx.signal }),
      claimRetryable,
      (err, delayMs) => log.warn({ err: describeError(err), delayMs }, 'claim not released yet; retrying'),
    );
    log.info('volume claim released');
    this.#apply(ctx, name, { type: 'released' });
  }

  /**
   * Waits until the node plugin serves, telling the allocation's tasks that
   * it waits when (and only when) the CSI manager says it has to.
   */
  async #waitForPlugin(ctx: AllocHookContext, pluginId: string, volumeId: string): Promise<void> {
    await this.#o.csiManager.waitForPlugin(pluginId, {
      signal: ctx.signal,
      onWaiting: () =>
        ctx.event(TASK_EVENTS.volumeWaiting, `Waiting for CSI node plugin "${pluginId}" to be registered and healthy for volume "${volumeId}"`, {
          volume: volumeId,
          plugin: pluginId,
        }),
    });
  }

  /** The plugin's volume manager, waiting while it is not healthy or still loading. */
  async #volumeManager(ctx: AllocHookContext, pluginId: string): Promise<VolumeMounter> {
    return this.#retrying(
      ctx,
      async () => {
        await this.#o.csiManager.waitForPlugin(pluginId, { signal: ctx.signal });
        return this.#o.csiManager.volumeManagerFor(pluginId);
      },
      pluginNotReady,
      () => undefined,
    );
  }

  /**
   * Runs `fn` until it succeeds, retrying while `retryable` (never an abort)
   * with the hook's backoff on its clock, at most `maxAttempts` times
   * (default: until the allocation is stopped).
   */
  #retrying<T>(
    ctx: AllocHookContext,
    fn: () => Promise<T>,
    retryable: (err: unknown) => boolean,
    onRetry: (err: unknown, delayMs: number) => void,
    maxAttempts = Infinity,
  ): Promise<T> {
    return retry(fn, {
      policy: { ...this.#o.backoff, maxAttempts },
      clock: this.#o.clock,
      signal: ctx.signal,
      shouldRetry: (err) => !(err instanceof AbortedError) && retryable(err),
      onRetry: ({ err, delayMs }) => onRetry(err, delayMs),
    });
  }
}

/**
 * The mount flags to send: the claimed volume's, else the group volume's.
 * A job read back from a public view carries "[REDACTED]" placeholders:
 * those are never sent as flags.
 */
function mountFlagsOf(claimed: ClaimedVolume | undefined, vol: GroupVolume | undefined): string[] {
  const flags = claimed?.mountOptions?.mountFlags?.length ? claimed.mountOptions.mountFlags : (vol?.mountOptions?.mountFlags ?? []);
  return flags.filter((f) => f !== '[REDACTED]');
}

function mountable(rec: CsiVolumeRecord): MountableVolume {
  const v: MountableVolume = { id: rec.volumeId, namespace: rec.namespace };
  if (rec.externalId) v.externalId = rec.externalId;
  if (rec.context) v.volumeContext = rec.context;
  return v;
}

function usageOf(rec: CsiVolumeRecord, vol: GroupVolume | undefined, mountFlags: readonly string[] = []): VolumeUsage {
  const accessMode = (rec.accessMode ?? vol?.accessMode ?? 'single-node-writer') as AccessMode;
  const usage: VolumeUsage = {
    readOnly: rec.readOnly || isReadOnlyMode(accessMode),
    attachmentMode: (rec.attachmentMode ?? vol?.attachmentMode ?? 'file-system') as AttachmentMode,
    accessMode,
  };
  if (usage.attachmentMode === 'file-system' && (rec.fsType || mountFlags.length)) {
    usage.mountOptions = {};
    if (rec.fsType) usage.mountOptions.fsType = rec.fsType;
    if (mountFlags.length) usage.mountOptions.mountFlags = mountFlags;
  }
  return usage;
}
