// drivers: the task driver plugin interface, its gRPC client and its gRPC server.
export type * from './driver-plugin.js';
export { DriverPluginError, type DriverPluginErrorCode } from '../base/index.js';
export { DriverPluginClient, launchDriverPlugin, type DriverPluginClientOptions, type LaunchedDriverPlugin } from './driver-plugin-client.js';
export { serveDriverPlugin, type ServableDriver, type ServeDriverOptions } from './driver-plugin-server.js';
