// The error of a task that could not be started (the task runner's).

import { BerthError } from '../../lib/index.js';

export type TaskRunnerErrorCode = 'TASK_BAD_CONFIG' | 'TASK_DRIVER_FAILED';

/**
 * A task that could not be started. `recoverable` is false when no retry can
 * fix it (a config the driver cannot use, a command that does not exist):
 * the task fails at once, without the restart policy.
 */
export class TaskRunnerError extends BerthError {
  override readonly code: TaskRunnerErrorCode;
  readonly recoverable: boolean;
  constructor(code: TaskRunnerErrorCode, message: string, options?: { cause?: unknown; recoverable?: boolean }) {
    super(code, message, { cause: options?.cause });
    this.code = code;
    this.recoverable = options?.recoverable ?? true;
  }
}
