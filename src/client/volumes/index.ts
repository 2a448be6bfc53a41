// The volume manager: stages and publishes a node plugin's volumes for the
// allocations on this node, keeps durable records of every step, and
// recovers them after a restart (docs/csi-rules.md scenarios 6-8, 11-13, 16, 17).
// The records themselves stay private: others ask RecordedVolumes.
export { VolumeManager, type VolumeManagerOptions, type VolumeManagerState } from './volume-manager.js';
export type { MountableVolume, MountVolumeOptions, ReconcileReport, UnmountReport, VolumeAllocPair } from './volume-types.js';
export type { AgentUnmount, AgentUnmountReason } from './agent-unmount.js';
export { RecordedVolumes, type RecordFilter, type RecordedPublication, type RecordedStaging, type RecordedMount, type StepState } from './volume-records.js';
export { takeMountInventory, unmountStray, type PluginMountRoot } from './mount-inventory.js';
export { MountPaths, pathKey, usageKey, type VolumeUsage, type PluginPath } from './mount-paths.js';
export { ClientVolumeError, type ClientVolumeErrorCode } from './client-volume-error.js';
