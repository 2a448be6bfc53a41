// Server-to-node calls over connections the node agents opened (so nodes
// behind NAT work). Message shapes and method names: src/structs/node-rpc.ts.
export { NodeConnections, type NodeTransport, type CallOpts, type NodeConnectionsOptions } from './node-connections.js';
export { NodeRpcCallError } from './errors.js';
