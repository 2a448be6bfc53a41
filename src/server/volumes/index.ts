// CSI volumes and claims: registration, controller operations, claims per
// access mode with routed ControllerPublish, the checkpointed release state
// machine and the claim watcher.
export {
  VolumeService,
  type VolumeServiceOptions,
  type VolumeRegistration,
  type VolumeCreation,
  type VolumeView,
  type ClaimRequest,
} from './volume-service.js';
export { ClaimWatcher, type ClaimWatcherOptions, type ClaimWatcherState } from './claim-watcher.js';
export { ControllerRouter, ControllerCallError, type ControllerRouterOptions } from './controller-router.js';
export { VolumeError } from './errors.js';
