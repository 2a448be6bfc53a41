import { type Spec } from '../hclspec/index.js';

/**
 * The base plugin service every Nomad-protocol plugin serves
 * (plugins/base/base.go BasePlugin), in plain TypeScript types.
 */

/** The plugin API version Berth speaks (Nomad's drivers' `ApiVersion010`). */
export const DRIVER_API_VERSION = 'v0.1.0';

/** What kind of plugin a binary is (base.proto PluginType). */
export type PluginType = 'driver' | 'device' | 'unknown';

/** PluginInfo's answer: the agent decides from it whether to load the plugin. */
export interface PluginInfo {
  readonly type: PluginType;
  /** The plugin API versions the plugin speaks (e.g. `['v0.1.0']`). */
  readonly pluginApiVersions: readonly string[];
  readonly pluginVersion: string;
  /** The name the plugin registers under (a driver's name: `raw_exec`, `docker`...). */
  readonly name: string;
}

/** The agent-side config the protocol carries with SetConfig (base.proto NomadConfig). */
export interface AgentConfig {
  readonly driver?: {
    /** The loopback port range plugin subsystems may use. */
    readonly clientMinPort: number;
    readonly clientMaxPort: number;
  };
}

/** SetConfig's argument (base.go Config). */
export interface PluginConfig {
  /** The negotiated plugin API version. */
  readonly apiVersion: string;
  /** go-cty msgpack of the plugin's `config {}` block decoded against ConfigSchema (see hclspec). */
  readonly pluginConfig: Uint8Array;
  readonly agentConfig?: AgentConfig;
}

/** Options every call takes: an AbortSignal that cancels the call (and the RPC). */
export interface CallOptions {
  readonly signal?: AbortSignal;
}

/** The base plugin (Nomad base.BasePlugin), served by every plugin. */
export interface BasePlugin {
  pluginInfo(opts?: CallOptions): Promise<PluginInfo>;
  /** The schema of the plugin's `config {}` block; undefined when it takes none. */
  configSchema(opts?: CallOptions): Promise<Spec | undefined>;
  setConfig(config: PluginConfig, opts?: CallOptions): Promise<void>;
}
