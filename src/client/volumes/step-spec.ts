// Everything one volume step needs, built from a mountVolume call or, to
// redo a step after a restart, from its record alone. Pure: no I/O.

import { VolumeCapability } from '../../csi/index.js';
import type { SecretMap } from '../../lib/index.js';
import { usageKey, type MountPaths, type PluginPath, type VolumeUsage } from './mount-paths.js';
import { ClientVolumeError } from './client-volume-error.js';
import { recordableContext, usageOfRecord, type PublishRecord, type RecordedCapability, type StageRecord, type VolumeRecords } from './volume-records.js';
import type { MountableVolume, MountVolumeOptions } from './volume-types.js';

/**
 * Everything one step needs, from a mountVolume call or from a record: the
 * fields its record keeps, and what goes on the wire but is never written down.
 */
export interface StepSpec extends Pick<StageRecord, 'namespace' | 'volumeId' | 'externalId' | 'usageKey' | 'readOnly' | 'publishContext' | 'replayable'> {
  /** With the mount flags, for the wire. */
  capability: VolumeCapability;
  /** Without them, for the record. */
  recorded: RecordedCapability;
  /** What goes on the wire. */
  volumeContext: Record<string, string>;
  /** What may be written down. */
  recordContext: Record<string, string>;
  secrets?: SecretMap;
  stageKey: string;
  staging: PluginPath;
}

export interface PublishSpec extends StepSpec {
  allocId: string;
  /** Whether this publication goes through a staging (STAGE_UNSTAGE_VOLUME, or recorded so). */
  staged: boolean;
  publishKey: string;
  target: PluginPath;
}

/** Where specs find the paths and record keys of one plugin. */
export interface SpecContext {
  paths: MountPaths;
  records: Pick<VolumeRecords, 'stageKey' | 'publishKey' | 'getStage'>;
}

/**
 * The spec of publishing `volume` to `allocId` with `usage`. Throws
 * ClientVolumeError VOLUME_BAD_REQUEST for an empty volume ID (or an empty
 * namespace or allocation ID, through the path keys).
 */
export function publishSpec(
  ctx: SpecContext,
  volume: MountableVolume,
  allocId: string,
  usage: VolumeUsage,
  opts: Omit<MountVolumeOptions, 'signal'>,
  staged = false,
): PublishSpec {
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
    stageKey: ctx.records.stageKey(namespace, volume.id, key),
    staging: ctx.paths.staging(namespace, volume.id, key),
    publishKey: ctx.records.publishKey(allocId, namespace, volume.id, key),
    target: ctx.paths.target(allocId, volume.id, key),
  };
}

/** A spec to redo a replayable publication from its record alone. */
export function specFromRecord(ctx: SpecContext, rec: PublishRecord): PublishSpec {
  const stageRec = rec.stageKey ? ctx.records.getStage(rec.stageKey) : undefined;
  return publishSpec(
    ctx,
    { id: rec.volumeId, namespace: rec.namespace, externalId: rec.externalId, volumeContext: rec.volumeContext },
    rec.allocId,
    usageOfRecord(rec),
    { publishContext: stageRec?.publishContext ?? rec.publishContext },
    rec.stageKey !== undefined,
  );
}

function capabilityOf(usage: VolumeUsage): VolumeCapability {
  if (usage.attachmentMode === 'block-device') return VolumeCapability.block(usage.accessMode);
  return VolumeCapability.mount(usage.accessMode, {
    fsType: usage.mountOptions?.fsType ?? '',
    mountFlags: usage.mountOptions?.mountFlags ?? [],
    volumeMountGroup: usage.mountOptions?.volumeMountGroup ?? '',
  });
}
