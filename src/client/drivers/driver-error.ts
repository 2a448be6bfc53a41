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

/**
 * Every failure a task driver reports; `code` is stable, `message` names the
 * task, never its env. `recoverable` is false for a failure that no retry
 * can fix (the task's command does not exist): the task runner fails the
 * task at once instead of applying the restart policy.
 */
export class DriverError extends BerthError<DriverErrorCode> {
  readonly recoverable: boolean;

  constructor(code: DriverErrorCode, message: string, opts: { cause?: unknown; recoverable?: boolean } = {}) {
    super(code, message, { cause: opts.cause });
    this.recoverable = opts.recoverable ?? true;
  }
}
