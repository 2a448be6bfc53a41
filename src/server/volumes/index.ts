// CSI volumes and claims. VolumeService is the door over the parts that own
// the work: the volume registry (registration, controller operations), claim
// admission (a pure decision over state), the claim taker (routed
// ControllerPublish) and the checkpointed claim release; the claim watcher
// drives releases.
export { VolumeService, type VolumeServiceOptions } from './volume-service.js';
export type { VolumeView } from './volume-registry.js';
export type { ClaimRequest } from './claim-admission.js';
export { ClaimWatcher, type ClaimWatcherOptions, type ClaimWatcherState, type ClaimReleaser } from './claim-watcher.js';
export { ControllerRouter, ControllerCallError, type ControllerRouterOptions } from './controller-router.js';
export { VolumeError } from './errors.js';
export type { VolumeRegistration, VolumeCreation } from '../../structs/index.js';
