// The client state store: the node agent's durable records.
export { type ClientStateStore, type Bucket, ClientStateError, type ClientStateErrorCode } from './client-state-store.js';
export { SqliteClientStateStore, CLIENT_STATE_SCHEMA_VERSION, DEFAULT_HEADROOM_BYTES, HEADROOM_FILE } from './sqlite-client-state-store.js';
