// The node agent's conversation with the server: registration and
// heartbeats, the allocation watch, status reports, volume claims over HTTP,
// and the node connection answering the server's controller and node calls.
export {
  ServerApi,
  ServerConnError,
  type ServerConnErrorCode,
  type ServerApiOptions,
  type NodeAllocation,
  type AllocStatusReport,
} from './server-api.js';
export { NodeRegistration, type NodeRegistrationOptions, type NodeRegistrationState } from './node-registration.js';
export { AllocWatcher, type AllocWatcherOptions, type AllocUpdate, type AllocWatcherCounts } from './alloc-watcher.js';
export { StatusReporter, type StatusReporterOptions } from './status-reporter.js';
export { HttpVolumeClaimer } from './http-volume-claimer.js';
export { NodeRpcHandler, NodeRpcHandlerError, type NodeRpcHandlerOptions, type CsiPluginSource } from './node-rpc-handler.js';
export {
  controllerCallHandlers,
  capabilityFromWire,
  capabilityToWire,
  errorAnswer,
  type ControllerClientOf,
  type ControllerRpcMethod,
  type NodeRpcHandlers,
} from './controller-calls.js';
export { NodeConnection, connectionLivenessMs, type NodeConnectionOptions, type NodeConnectionState } from './node-connection.js';
