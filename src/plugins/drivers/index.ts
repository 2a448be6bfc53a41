// drivers: the task driver plugin interface, its gRPC client and its gRPC server.
export type * from './driver-plugin.js';
export { DriverPluginError, type DriverPluginErrorCode } from './errors.js';
