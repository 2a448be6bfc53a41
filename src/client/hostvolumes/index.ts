// Dynamic host volumes on the node (Nomad 1.10): the host volume manager,
// the built-in `mkdir` plugin and external plugins run as Nomad runs them.
export { HostVolumeManager, HOST_VOLUMES_BUCKET, type HostVolumeManagerOptions, type HostVolumeRecord } from './host-volume-manager.js';
export { HostVolumeError, type HostVolumeErrorCode } from './errors.js';
export { MkdirPlugin, mkdirParams, type MkdirParams } from './mkdir-plugin.js';
export { ExternalPlugin, openExternalPlugin } from './external-plugin.js';
export type { HostVolumePlugin, HostVolumeRequest, HostVolumeCreated } from './host-volume-plugin.js';
