// The CSI manager: the node's CSI plugin instances, their health and fingerprints,
// and one volume manager per node plugin.
export {
  CsiManager,
  type CsiManagerOptions,
  type CsiManagerState,
  type PluginSource,
} from './csi-manager.js';
export { safeName, type VolumeManagerParams, type ManagedVolumeManager } from './node-volume-managers.js';
export { InstanceManager, type InstanceChange, type InstanceState, type InstanceManagerOptions } from './instance-manager.js';
export type { VolumeManagers, VolumeMounter, PluginWaitOptions } from './volume-managers.js';
export { CsiManagerError, type CsiManagerErrorCode } from './errors.js';
