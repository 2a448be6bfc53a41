// CSI volumes of an allocation (Nomad's csi_hook): prerun waits for the node
// plugin, claims each volume from the server, and mounts it through the
// plugin's volume manager with the publish context; postrun unmounts, then
// releases the claim. Every step is written down before it is taken.

import {
  AbortedError,
  backoffDelay,
  describeError,
  redactSecretLookingValues,
  type BackoffPolicy,
  type Clock,
  type Logger,
} from '../../lib/index.js';
import { isReadOnlyMode, type AccessMode, type AttachmentMode } from '../../csi/index.js';
import { volumeIdFor, volumeIsReadOnly, type GroupVolume } from '../../structs/index.js';
import type { CsiManager } from '../csimanager/index.js';
import type { MountableVolume, VolumeManager, VolumeUsage } from '../volumes/index.js';
import { TASK_EVENTS } from '../taskrunner/index.js';
import { AllocRunnerError, type AllocHook, type AllocHookContext } from './alloc-hook.js';
import type { CsiVolumeRecord } from './alloc-records.js';
import { CLAIM_RETRYABLE_CODES, type ClaimedVolume, type VolumeClaimer, type VolumeClaimRequest } from './volume-claimer.js';

/** Codes of the CSI manager and volume manager that mean "the plugin cannot serve yet": wait and retry. */
const PLUGIN_NOT_READY = new Set(['CSI_PLUGIN_NOT_FOUND', 'CSI_PLUGIN_UNHEALTHY', 'CLIENT_VOLUME_MOUNT_UNCERTAIN', 'CLIENT_VOLUME_MANAGER_STOPPED']);

export interface CsiHookOptions {
  csiManager: CsiManager;
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
      const mounter = await this.#mounter(ctx, rec.pluginId);
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
      rec.source = source;
      ctx.save();
      ctx.volumes.set(name, { source, readOnly: rec.readOnly });
    }
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
    let rec = ctx.record.csi[name];
    if (!rec) {
      rec = { volumeId, namespace: alloc.namespace, state: 'claiming', readOnly };
      ctx.record.csi[name] = rec;
      ctx.save();
    }
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
    rec.state = rec.state === 'mounted' ? 'mounted' : 'claimed';
    rec.pluginId = v.pluginId;
    rec.externalId = v.externalId;
    // Written down without credential-looking values; the raw context goes to the plugin below.
    rec.context = redactSecretLookingValues(v.context);
    rec.publishContext = { ...claim.publishContext };
    rec.accessMode = v.accessMode;
    rec.attachmentMode = v.attachmentMode;
    if (v.mountOptions?.fsType ?? vol.mountOptions?.fsType) rec.fsType = v.mountOptions?.fsType || vol.mountOptions?.fsType;
    ctx.save();
    if (!knownPlugin) await this.#waitForPlugin(ctx, v.pluginId, volumeId);

    // Mount flags (possibly credentials) are handed to the plugin, never written down.
    // A job read back from a public view carries "[REDACTED]" placeholders: never send those as flags.
    const usage = usageOf(rec, vol, mountFlagsOf(v, vol));
    const { source } = await this.#retrying(
      ctx,
      async () => {
        const mounter = await this.#mounter(ctx, v.pluginId);
        return mounter.mountVolume({ ...mountable(rec), volumeContext: v.context }, alloc.id, usage, {
          publishContext: rec.publishContext ?? {},
          ...(v.secrets ? { secrets: v.secrets } : {}),
          signal: ctx.signal,
        });
      },
      (err) => PLUGIN_NOT_READY.has((err as { code?: string }).code ?? ''),
      (err, delayMs) => log.warn({ err: describeError(err), delayMs }, 'volume not mounted yet; retrying'),
    ).catch((err: unknown) => {
      if (err instanceof AbortedError) throw err;
      throw new AllocRunnerError('ALLOC_VOLUME_MOUNT_FAILED', `cannot mount CSI volume "${volumeId}": ${describeError(err)}`, { cause: err });
    });
    rec.state = 'mounted';
    rec.source = source;
    ctx.save();
    log.info({ plugin: v.pluginId }, 'volume mounted');
    ctx.event(TASK_EVENTS.volumeMounted, `CSI volume "${volumeId}" mounted by plugin "${v.pluginId}"`, { volume: volumeId, plugin: v.pluginId });
    return source;
  }

  async #teardownOne(ctx: AllocHookContext, name: string, rec: CsiVolumeRecord): Promise<void> {
    const log = ctx.logger.child({ volume: name, volumeId: rec.volumeId });
    if (rec.pluginId && (rec.state === 'claimed' || rec.state === 'mounted')) {
      const pluginId = rec.pluginId;
      const vol = ctx.group.volumes[name];
      let attempt = 0;
      await this.#retrying(
        ctx,
        async () => {
          attempt += 1;
          const mounter = this.#o.csiManager.mounterForPlugin(pluginId);
          await mounter.unmountVolume(mountable(rec), ctx.alloc.id, usageOf(rec, vol), { signal: ctx.signal });
        },
        () => attempt < (this.#o.unmountAttempts ?? 8),
        (err, delayMs) => log.warn({ err: describeError(err), delayMs }, 'volume not unmounted yet; retrying'),
      ).catch((err: unknown) => {
        if (err instanceof AbortedError) throw err;
        ctx.event(TASK_EVENTS.volumeWaiting, `CSI volume "${rec.volumeId}" could not be unmounted: ${describeError(err)}`, { volume: rec.volumeId });
        throw new AllocRunnerError('ALLOC_VOLUME_UNMOUNT_FAILED', `cannot unmount CSI volume "${rec.volumeId}": ${describeError(err)}`, { cause: err });
      });
      if (rec.state === 'mounted') {
        ctx.event(TASK_EVENTS.volumeUnmounted, `CSI volume "${rec.volumeId}" unmounted`, { volume: rec.volumeId, plugin: pluginId });
      }
      rec.state = 'claimed';
      delete rec.source;
      ctx.save();
    }
    await this.#retrying(
      ctx,
      () => this.#o.claimer.release({ namespace: rec.namespace, volumeId: rec.volumeId, allocId: ctx.alloc.id }, { signal: ctx.signal }),
      claimRetryable,
      (err, delayMs) => log.warn({ err: describeError(err), delayMs }, 'claim not released yet; retrying'),
    );
    log.info('volume claim released');
    delete ctx.record.csi[name];
    ctx.save();
  }

  async #waitForPlugin(ctx: AllocHookContext, pluginId: string, volumeId: string): Promise<void> {
    const waiting = this.#o.csiManager.managerForPlugin(pluginId, { signal: ctx.signal });
    let settled = false;
    void waiting.then(
      () => (settled = true),
      () => (settled = true),
    );
    await Promise.resolve();
    await Promise.resolve();
    if (!settled) {
      ctx.event(TASK_EVENTS.volumeWaiting, `Waiting for CSI node plugin "${pluginId}" to be registered and healthy for volume "${volumeId}"`, {
        volume: volumeId,
        plugin: pluginId,
      });
    }
    await waiting;
  }

  /** The plugin's volume manager, waiting while it is not healthy or still loading. */
  async #mounter(ctx: AllocHookContext, pluginId: string): Promise<VolumeManager> {
    return this.#retrying(
      ctx,
      async () => {
        await this.#o.csiManager.managerForPlugin(pluginId, { signal: ctx.signal });
        return this.#o.csiManager.mounterForPlugin(pluginId);
      },
      (err) => PLUGIN_NOT_READY.has((err as { code?: string }).code ?? ''),
      () => undefined,
    );
  }

  /** Runs `fn` until it succeeds, retrying while `retryable`, with backoff on the clock. */
  async #retrying<T>(
    ctx: AllocHookContext,
    fn: () => Promise<T>,
    retryable: (err: unknown) => boolean,
    onRetry: (err: unknown, delayMs: number) => void,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      if (ctx.signal.aborted) throw new AbortedError('the allocation was stopped', { cause: ctx.signal.reason });
      try {
        return await fn();
      } catch (err) {
        if (ctx.signal.aborted || err instanceof AbortedError || !retryable(err)) throw err;
        const delayMs = backoffDelay(this.#o.backoff, attempt);
        onRetry(err, delayMs);
        await this.#o.clock.sleep(delayMs, ctx.signal);
      }
    }
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
