// The allocation runner: one per allocation on this node, with its hooks
// (alloc dir, network, CSI volumes, host volumes) and a task runner per task.
export {
  CLAIM_RETRYABLE_CODES,
  type VolumeClaimer,
  type VolumeClaimRequest,
  type ClaimedVolume,
  type AllocStatusSink,
  type AllocStatusUpdate,
} from './volume-claimer.js';
export type { AllocRunnerOptions } from './alloc-runner-options.js';
export { AllocRunner, type AllocRunnerStatus, type WantedMount } from './alloc-runner.js';
export { singleWriterHolders, singleWriterVolumes, type NodeAllocation } from './single-writer.js';
export { AllocRunnerError, type AllocRunnerErrorCode, type AllocHook, type AllocHookContext, type ResolvedVolume } from './alloc-hook.js';
export { ALLOC_RUNNERS_BUCKET, savedAllocRunners, jobWithoutMountFlags, type AllocRunnerRecord, type CsiVolumeRecord, type AllocPhase } from './alloc-records.js';
export { claimRetryable } from './csi-hook.js';
export { reconcileCsiVolumes, type ReconcileVolumesOptions } from './reconcile-volumes.js';
