// base: the base plugin service every Nomad-protocol plugin serves.
export { DRIVER_API_VERSION, type AgentConfig, type BasePlugin, type CallOptions, type PluginConfig, type PluginInfo, type PluginType } from './base-plugin.js';
