// The Berth server: state, nodes, plugins, volumes and claims, jobs and
// placement, served over the HTTP API. `Server` builds and runs them all.
export { Server, ServerError, type ServerOptions, type ServerState, type ServerAddress } from './server.js';
export { checkStatuses, registerMetricsRoute, type AgentInfo, type ApiToken, type Role } from './http/index.js';
/** The API's routes and the server's metrics registry, built alone (scripts/gen-reference.ts lists them). */
export { buildApi, execRelay, NO_SCHEMA_COMPILERS, type ApiDeps } from './http/index.js';
export { ServerMetrics } from './metrics/index.js';
export {
  SqliteStateStore,
  openEtcdStateStore,
  StateStoreError,
  saveSnapshot,
  restoreSnapshot,
  type StateStore,
  type SnapshotSummary,
} from './state/index.js';
