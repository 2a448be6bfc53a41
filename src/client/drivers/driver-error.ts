import { BerthError } from '../../lib/index.js';

export type DriverErrorCode =
  | 'DRIVER_SHUT_DOWN'
  | 'DRIVER_TASK_NOT_FOUND'
  | 'DRIVER_TASK_EXISTS'
  | 'DRIVER_TASK_RUNNING'
  | 'DRIVER_TASK_NOT_RUNNING'
  | 'DRIVER_INVALID_SIGNAL'
  | 'DRIVER_TASK_NOT_RECOVERABLE'
  | 'DRIVER_MOUNTS_UNSUPPORTED'
  | 'DRIVER_INVALID_MOUNT'
  | 'DRIVER_NETWORK_UNSUPPORTED'
  | 'DRIVER_START_FAILED'
  | 'DRIVER_EXECUTOR_FAILED';

/** Every failure a task driver reports; `code` is stable, `message` names the task, never its env. */
export class DriverError extends BerthError<DriverErrorCode> {}
