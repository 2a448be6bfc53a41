// The fake node agent, for tests and benchmarks. Never used in production code.
export { FakeNodeAgent, type FakeNodeAgentOptions, type AgentCall } from './fake-node-agent.js';
export { socketBridge } from './socket-bridge.js';
