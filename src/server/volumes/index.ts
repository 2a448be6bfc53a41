// CSI volumes and claims: the volume registry (registration, controller
// operations), claim admission (a pure decision over state), claims with
// routed ControllerPublish, the checkpointed release state machine, the
// claim watcher, and the VolumeService door over them.
export { VolumeService, type VolumeServiceOptions } from './volume-service.js';
export { VolumeRegistry, type VolumeRegistryOptions, type VolumeView } from './volume-registry.js';
export { admitClaim, type AdmissionState, type AdmissionDecision, type ClaimRequest } from './claim-admission.js';
export { ClaimTaker, admissionState, type ClaimTakerOptions } from './claim-taker.js';
export { ClaimRelease, type ClaimReleaseOptions } from './claim-release.js';
export { ClaimWatcher, type ClaimWatcherOptions, type ClaimWatcherState, type ClaimReleaser } from './claim-watcher.js';
export { ControllerRouter, ControllerCallError, type ControllerRouterOptions } from './controller-router.js';
export { VolumeError } from './errors.js';
export type { VolumeRegistration, VolumeCreation } from '../../structs/index.js';
