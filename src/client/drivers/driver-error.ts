import { BerthError } from '../../lib/index.js';

export type DriverErrorCode =
  | 'DRIVER_SHUT_DOWN'
  | 'TASK_NOT_FOUND'
  | 'TASK_EXISTS'
  | 'TASK_RUNNING'
  | 'TASK_NOT_RUNNING'
  | 'INVALID_SIGNAL'
  | 'TASK_NOT_RECOVERABLE'
  | 'MOUNTS_UNSUPPORTED'
  | 'INVALID_MOUNT'
  | 'NETWORK_UNSUPPORTED'
  | 'START_FAILED'
  | 'EXECUTOR_FAILED';

/** Every failure a task driver reports; `code` is stable, `message` names the task, never its env. */
export class DriverError extends BerthError {
  declare readonly code: DriverErrorCode;

  constructor(code: DriverErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
