// The volume manager: stages and publishes a node plugin's volumes for the
// allocations on this node, keeps durable records of every step, and
// recovers them after a restart (CSI-CO-RULES scenarios 6-8, 11-13, 16, 17).
export {
  VolumeManager,
  type VolumeManagerOptions,
  type VolumeManagerState,
  type MountableVolume,
  type MountVolumeOptions,
  type ReconcileReport,
  type VolumeAllocPair,
} from './volume-manager.js';
export { MountPaths, pathKey, usageKey, type VolumeUsage, type PluginPath } from './mount-paths.js';
export { ClientVolumeError, type ClientVolumeErrorCode } from './client-volume-error.js';
export { STAGE_BUCKET, PUBLISH_BUCKET, type StageRecord, type PublishRecord, type StepState, type RecordedCapability } from './volume-records.js';
