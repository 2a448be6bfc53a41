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
export {
  TaskRunner,
  TaskRunnerError,
  TASK_RUNNERS_BUCKET,
  forgetTaskRunner,
  type TaskRunnerErrorCode,
  type TaskRunnerOptions,
  type TaskRunnerRecord,
  type TaskHook,
  type TaskHookContext,
  type TaskLifecycle,
  type PrestartRequest,
  type RestoreResult,
} from './task-runner.js';
export { RestartTracker, type RestartDecision, type RestartTrackerState, type TaskOutcome } from './restart-tracker.js';
export { TASK_EVENTS, MAX_TASK_EVENTS, newTaskState, appendEvent, describeExit, type TaskEventType } from './task-events.js';
export { IdentityHook, IdentityError, renewDelayMs, type IdentityHookOptions, type IdentitySigner } from './identity-hook.js';
export {
  PluginSupervisorHook,
  pluginPaths,
  type PluginSupervisorHookOptions,
} from './plugin-supervisor-hook.js';
