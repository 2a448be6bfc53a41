// The CSI manager: the node's CSI plugin instances, their health and fingerprints,
// and one volume manager per node plugin.
export {
  CsiManager,
  safeName,
  type CsiManagerOptions,
  type CsiManagerState,
  type PluginSource,
  type VolumeManagerParams,
  type ManagedVolumeManager,
} from './csi-manager.js';
export { InstanceManager, type InstanceChange, type InstanceState, type InstanceManagerOptions } from './instance-manager.js';
export type { VolumeManagers, VolumeMounter, PluginWaitOptions } from './volume-managers.js';
export { CsiManagerError, type CsiManagerErrorCode } from './errors.js';
