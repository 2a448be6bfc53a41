// Checks a request against the spec before it goes on the wire, so that a
// request the spec calls invalid fails here with a clear error and no plugin
// round trip. Private to src/csi.

import type { VolumeCapability } from './capability.js';
import { CsiRequestError } from './errors.js';
import { checkBytes, checkMap, checkPath, checkRepeated, checkString, MAX_NODE_ID_BYTES } from './limits.js';
import type {
  CapacityRange,
  ControllerPublishRequest,
  ControllerUnpublishRequest,
  CreateSnapshotRequest,
  CreateVolumeRequest,
  ExpandVolumeRequest,
  NodeExpandVolumeRequest,
  NodePublishRequest,
  NodeStageRequest,
  ValidateRequest,
} from './types.js';

export function checkVolumeId(volumeId: string | undefined): void {
  checkString('volume_id', volumeId, { required: true });
}

export function checkCapability(field: string, cap: VolumeCapability | undefined): void {
  if (!cap) throw new CsiRequestError(`${field} is required`, field);
  checkString(`${field}.mount.fs_type`, cap.fsType);
  checkString(`${field}.mount.volume_mount_group`, cap.volumeMountGroup);
  checkRepeated(`${field}.mount.mount_flags`, cap.revealMountFlags());
}

function checkCapabilities(field: string, caps: readonly VolumeCapability[] | undefined): void {
  if (!caps?.length) throw new CsiRequestError(`${field} must hold at least one capability`, field);
  caps.forEach((c, i) => checkCapability(`${field}[${i}]`, c));
}

function checkCapacityRange(range: CapacityRange | undefined, required: boolean): void {
  if (!range) {
    if (required) throw new CsiRequestError('capacity_range is required', 'capacity_range');
    return;
  }
  checkBytes('capacity_range.required_bytes', range.requiredBytes);
  checkBytes('capacity_range.limit_bytes', range.limitBytes);
  const { requiredBytes = 0, limitBytes = 0 } = range;
  if (requiredBytes && limitBytes && limitBytes < requiredBytes) {
    throw new CsiRequestError(
      `capacity_range.limit_bytes (${limitBytes}) is below required_bytes (${requiredBytes})`,
      'capacity_range',
    );
  }
}

export function checkCreateVolume(req: CreateVolumeRequest): void {
  checkString('name', req.name, { required: true });
  checkCapacityRange(req.capacityRange, false);
  checkCapabilities('volume_capabilities', req.volumeCapabilities);
  checkMap('parameters', req.parameters);
  checkMap('secrets', req.secrets);
  checkMap('mutable_parameters', req.mutableParameters);
  if (req.contentSource) {
    if ('snapshotId' in req.contentSource) checkString('volume_content_source.snapshot.snapshot_id', req.contentSource.snapshotId, { required: true });
    else checkString('volume_content_source.volume.volume_id', req.contentSource.volumeId, { required: true });
  }
  for (const [i, t] of [...(req.accessibilityRequirements?.requisite ?? []), ...(req.accessibilityRequirements?.preferred ?? [])].entries()) {
    checkMap(`accessibility_requirements[${i}].segments`, t);
  }
}

export function checkControllerPublish(req: ControllerPublishRequest): void {
  checkVolumeId(req.volumeId);
  checkString('node_id', req.nodeId, { required: true, max: MAX_NODE_ID_BYTES });
  checkCapability('volume_capability', req.volumeCapability);
  checkMap('secrets', req.secrets);
  checkMap('volume_context', req.volumeContext);
}

export function checkControllerUnpublish(req: ControllerUnpublishRequest): void {
  checkVolumeId(req.volumeId);
  checkString('node_id', req.nodeId, { max: MAX_NODE_ID_BYTES });
  checkMap('secrets', req.secrets);
}

export function checkValidate(req: ValidateRequest): void {
  checkVolumeId(req.volumeId);
  checkCapabilities('volume_capabilities', req.volumeCapabilities);
  checkMap('volume_context', req.volumeContext);
  checkMap('parameters', req.parameters);
  checkMap('mutable_parameters', req.mutableParameters);
  checkMap('secrets', req.secrets);
}

export function checkNodeStage(req: NodeStageRequest): void {
  checkVolumeId(req.volumeId);
  checkMap('publish_context', req.publishContext);
  checkPath('staging_target_path', req.stagingTargetPath, { required: true });
  checkCapability('volume_capability', req.volumeCapability);
  checkMap('secrets', req.secrets);
  checkMap('volume_context', req.volumeContext);
}

export function checkNodePublish(req: NodePublishRequest): void {
  checkVolumeId(req.volumeId);
  checkMap('publish_context', req.publishContext);
  checkPath('staging_target_path', req.stagingTargetPath);
  checkPath('target_path', req.targetPath, { required: true });
  checkCapability('volume_capability', req.volumeCapability);
  checkMap('secrets', req.secrets);
  checkMap('volume_context', req.volumeContext);
}

export function checkControllerExpand(req: ExpandVolumeRequest): void {
  checkVolumeId(req.volumeId);
  checkCapacityRange(req.capacityRange, true);
  checkMap('secrets', req.secrets);
  if (req.volumeCapability) checkCapability('volume_capability', req.volumeCapability);
}

export function checkNodeExpand(req: NodeExpandVolumeRequest): void {
  checkVolumeId(req.volumeId);
  checkPath('volume_path', req.volumePath, { required: true });
  checkPath('staging_target_path', req.stagingTargetPath);
  checkCapacityRange(req.capacityRange, false);
  if (req.volumeCapability) checkCapability('volume_capability', req.volumeCapability);
  checkMap('secrets', req.secrets);
}

export function checkCreateSnapshot(req: CreateSnapshotRequest): void {
  checkString('source_volume_id', req.sourceVolumeId, { required: true });
  checkString('name', req.name, { required: true });
  checkMap('secrets', req.secrets);
  checkMap('parameters', req.parameters);
}

export function checkPaging(maxEntries: number | undefined): void {
  if (maxEntries !== undefined && (!Number.isInteger(maxEntries) || maxEntries < 0 || maxEntries > 2 ** 31 - 1)) {
    throw new CsiRequestError(`max_entries must be a whole number from 0, got ${maxEntries}`, 'max_entries');
  }
}
