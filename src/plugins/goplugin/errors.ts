import { BerthError } from '../../lib/index.js';

/**
 * Codes of launching and talking to a go-plugin process. Every message names
 * the plugin (its path).
 * - `GOPLUGIN_BAD_HANDSHAKE`: the handshake line is not `core|app|network|addr|protocol` (garbage, truncated);
 * - `GOPLUGIN_COOKIE_REJECTED`: the plugin refused to run because the magic cookie did not match;
 * - `GOPLUGIN_VERSION_UNSUPPORTED`: core or app protocol version Berth does not speak, or not gRPC;
 * - `GOPLUGIN_NETWORK_UNSUPPORTED`: the plugin listens on something other than a unix socket;
 * - `GOPLUGIN_HANDSHAKE_TIMEOUT`: no handshake line before the deadline;
 * - `GOPLUGIN_EXITED`: the process exited before (or while) handshaking;
 * - `GOPLUGIN_START_FAILED`: the executable could not be started;
 * - `GOPLUGIN_UNHEALTHY`: the gRPC health check of service "plugin" did not answer SERVING;
 * - `GOPLUGIN_NOT_A_PLUGIN`: (serve side) the process was run without the host's magic cookie.
 */
export type GoPluginErrorCode =
  | 'GOPLUGIN_BAD_HANDSHAKE'
  | 'GOPLUGIN_COOKIE_REJECTED'
  | 'GOPLUGIN_VERSION_UNSUPPORTED'
  | 'GOPLUGIN_NETWORK_UNSUPPORTED'
  | 'GOPLUGIN_HANDSHAKE_TIMEOUT'
  | 'GOPLUGIN_EXITED'
  | 'GOPLUGIN_START_FAILED'
  | 'GOPLUGIN_UNHEALTHY'
  | 'GOPLUGIN_NOT_A_PLUGIN';

export class GoPluginError extends BerthError<GoPluginErrorCode> {}
