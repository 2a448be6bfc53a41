import { BerthError } from '../../lib/index.js';

export type CsiManagerErrorCode =
  /** No registration of that plugin (of that type) on this node. */
  | 'CSI_PLUGIN_NOT_FOUND'
  /** The plugin is registered but no instance of it is healthy now. */
  | 'CSI_PLUGIN_UNHEALTHY'
  /** The registration cannot be used as it is (e.g. a node plugin with no mount root). */
  | 'CSI_PLUGIN_MISCONFIGURED'
  /** The CSI manager is not running (not started, or stopped). */
  | 'CSI_MANAGER_STOPPED';

/** Why the CSI manager cannot hand out a plugin. The message names the plugin and the reason. */
export class CsiManagerError extends BerthError<CsiManagerErrorCode> {
  /** The plugin ID asked for. */
  readonly pluginId: string;

  constructor(code: CsiManagerErrorCode, pluginId: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.pluginId = pluginId;
  }
}
