import { BerthError } from '../../lib/index.js';

/**
 * Codes a driver plugin call fails with (gRPC status -> Berth error, at the
 * edge in DriverPluginClient):
 * - `DRIVER_PLUGIN_SHUTDOWN`: the plugin process has exited or its connection is gone ("plugin shut down");
 * - `DRIVER_PLUGIN_TASK_NOT_FOUND`: the plugin does not know the task ID (gRPC NOT_FOUND);
 * - `DRIVER_PLUGIN_UNSUPPORTED`: the plugin does not implement the RPC (gRPC UNIMPLEMENTED);
 * - `DRIVER_PLUGIN_INVALID`: the plugin answered something Berth cannot read (or rejected an argument);
 * - `DRIVER_PLUGIN_FAILED`: any other error the plugin returned (its message kept).
 */
export type DriverPluginErrorCode =
  | 'DRIVER_PLUGIN_SHUTDOWN'
  | 'DRIVER_PLUGIN_TASK_NOT_FOUND'
  | 'DRIVER_PLUGIN_UNSUPPORTED'
  | 'DRIVER_PLUGIN_INVALID'
  | 'DRIVER_PLUGIN_FAILED';

/**
 * An error from a driver plugin call. `recoverable` is the protocol's
 * RecoverableError detail (StartTask): true means the restart policy may
 * retry the task; a plugin that shut down is recoverable too.
 */
export class DriverPluginError extends BerthError<DriverPluginErrorCode> {
  readonly recoverable: boolean;

  constructor(code: DriverPluginErrorCode, message: string, options?: { cause?: unknown; recoverable?: boolean }) {
    super(code, message, options);
    this.recoverable = options?.recoverable ?? code === 'DRIVER_PLUGIN_SHUTDOWN';
  }
}
