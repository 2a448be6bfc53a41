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
