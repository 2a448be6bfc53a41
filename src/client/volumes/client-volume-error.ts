import { BerthError } from '../../lib/index.js';

/**
 * Stable codes of the volume manager's errors.
 * - CLIENT_VOLUME_BAD_REQUEST: the request cannot be served as asked (empty ID, bad path); nothing was sent.
 * - CLIENT_VOLUME_NOT_SUPPORTED: the plugin lacks the capability (stats, expand).
 * - CLIENT_VOLUME_NOT_MOUNTED: stats/expand for a (volume, allocation, usage) that is not published here.
 * - CLIENT_VOLUME_MOUNT_FAILED: the plugin refused the step with a final code; the step did not happen.
 * - CLIENT_VOLUME_MOUNT_UNCERTAIN: the step may have happened (non-final code after the retries);
 *   it is recorded as uncertain and its negation call will be sent on teardown.
 * - CLIENT_VOLUME_UNMOUNT_FAILED: a teardown step failed; the record stays so it can be retried.
 * - CLIENT_VOLUME_MANAGER_STOPPED: called before start() or after stop().
 */
export type ClientVolumeErrorCode =
  | 'CLIENT_VOLUME_BAD_REQUEST'
  | 'CLIENT_VOLUME_NOT_SUPPORTED'
  | 'CLIENT_VOLUME_NOT_MOUNTED'
  | 'CLIENT_VOLUME_MOUNT_FAILED'
  | 'CLIENT_VOLUME_MOUNT_UNCERTAIN'
  | 'CLIENT_VOLUME_UNMOUNT_FAILED'
  | 'CLIENT_VOLUME_MANAGER_STOPPED';

/**
 * An error of the client's volume manager (the server's volume errors are
 * VolumeServiceError, with the HTTP API's codes). `cause` holds the CsiError (or other
 * error) behind it. Messages name volumes and paths, never secrets or mount
 * flags.
 */
export class ClientVolumeError extends BerthError<ClientVolumeErrorCode> {}
