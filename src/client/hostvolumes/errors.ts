import { BerthError } from '../../lib/index.js';

export type HostVolumeErrorCode =
  | 'CLIENT_HOST_VOLUME_PLUGIN_NOT_FOUND'
  | 'CLIENT_HOST_VOLUME_PLUGIN_NOT_EXECUTABLE'
  | 'CLIENT_HOST_VOLUME_PLUGIN_FAILED'
  | 'CLIENT_HOST_VOLUME_INVALID'
  | 'CLIENT_HOST_VOLUME_NAME_EXISTS'
  | 'CLIENT_HOST_VOLUME_PATH_MISSING';

/**
 * A host volume operation the node refused or a plugin failed. `final`: the
 * volume was certainly not made (the server changes nothing); every code
 * here is final except a plugin failure, which may have left a half-made
 * volume the plugin's next (idempotent) call finds.
 */
export class HostVolumeError extends BerthError<HostVolumeErrorCode> {
  readonly final: boolean;
  readonly retryable = false;

  constructor(code: HostVolumeErrorCode, message: string, opts: { cause?: unknown } = {}) {
    super(code, message, opts);
    this.final = code !== 'CLIENT_HOST_VOLUME_PLUGIN_FAILED';
  }
}
