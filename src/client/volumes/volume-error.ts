import { BerthError } from '../../lib/index.js';

/**
 * Stable codes of the volume manager's errors.
 * - VOLUME_BAD_REQUEST: the request cannot be served as asked (empty ID, bad path); nothing was sent.
 * - VOLUME_NOT_SUPPORTED: the plugin lacks the capability (stats, expand).
 * - VOLUME_NOT_MOUNTED: stats/expand for a (volume, allocation, usage) that is not published here.
 * - VOLUME_MOUNT_FAILED: the plugin refused the step with a final code; the step did not happen.
 * - VOLUME_MOUNT_UNCERTAIN: the step may have happened (non-final code after the retries);
 *   it is recorded as uncertain and its negation call will be sent on teardown.
 * - VOLUME_UNMOUNT_FAILED: a teardown step failed; the record stays so it can be retried.
 * - VOLUME_MANAGER_STOPPED: called before start() or after stop().
 */
export type VolumeErrorCode =
  | 'VOLUME_BAD_REQUEST'
  | 'VOLUME_NOT_SUPPORTED'
  | 'VOLUME_NOT_MOUNTED'
  | 'VOLUME_MOUNT_FAILED'
  | 'VOLUME_MOUNT_UNCERTAIN'
  | 'VOLUME_UNMOUNT_FAILED'
  | 'VOLUME_MANAGER_STOPPED';

/**
 * An error of the volume manager. `cause` holds the CsiError (or other
 * error) behind it. Messages name volumes and paths, never secrets or mount
 * flags.
 */
export class VolumeError extends BerthError {
  override readonly code: VolumeErrorCode;

  constructor(code: VolumeErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.code = code;
  }
}
