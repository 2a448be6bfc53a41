// base: the base plugin service every Nomad-protocol plugin serves, the
// connection to a plugin process, and the error mapping at the gRPC edge.
export { DRIVER_API_VERSION, type AgentConfig, type BasePlugin, type CallOptions, type PluginConfig, type PluginInfo, type PluginType } from './base-plugin.js';
export { DriverPluginError, type DriverPluginErrorCode } from './errors.js';
export { PluginConnection, type WireCallOptions } from './connection.js';
export { BasePluginClient } from './base-plugin-client.js';
export { basePluginService, served } from './base-plugin-server.js';
