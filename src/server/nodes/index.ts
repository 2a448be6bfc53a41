// Client nodes: registration, heartbeats, and the TTL watcher that marks silent nodes down.
export { NodeService, type NodeServiceOptions, type NodeServiceState } from './node-service.js';
export { NodeError } from './errors.js';
