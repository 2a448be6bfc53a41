// The HTTP API of the server: routes, bearer-token roles, error envelope,
// blocking queries and the event stream.
export { buildApi } from './api.js';
export { BURST_SETTLE_MS, RequestsInFlight } from './requests-in-flight.js';
export type { ApiDeps } from './route-context.js';
export { TokenTable, ROLES, type ApiToken, type Role, type Access } from './auth.js';
export { ApiError, toErrorResponse, statusForCode, type ErrorBody } from './api-error.js';
export { parseBlockingQuery, blockingRead, DEFAULT_WAIT_MS, MAX_WAIT_MS, type BlockingQuery } from './blocking.js';
export { FORWARDED_HEADER, LEADER_HEADER } from './leader-forward.js';
export { execRelay } from './client-forward.js';
export { registerMetricsRoute } from './metrics-routes.js';
export { checkStatuses } from './alloc-shapes.js';
export type { AgentInfo } from './route-context.js';
export { ApiReaders, ApiWorkers, MAX_PENDING_READS } from './api-workers/index.js';
export { NO_SCHEMA_COMPILERS } from './schema-compilers.js';
export { warmJobPath } from './warm-job-path.js';
