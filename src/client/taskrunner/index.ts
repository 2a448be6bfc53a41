// The task runner: one per task of an allocation, with its hooks, restart
// policy, task state and event trail.
export type {
  RunnerDriver,
  RunnerDriverCapabilities,
  RunnerTaskConfig,
  RunnerTaskHandle,
  RunnerExitResult,
  RunnerNetwork,
  TaskMount,
} from './driver-port.js';
