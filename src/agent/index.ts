// The agent layer: a Berth process's composition root (server and/or client,
// their listeners, the agent config file). The CLI's `berth agent` uses it.
export { leftBehind, describeLeftBehind, type LeftBehind, type LeftProcess } from './leftovers.js';
export { Agent, AgentError, mountsUnder, type AgentMode, type AgentOptions, type AgentAddress } from './agent.js';
export { loadAgentConfig, parseAgentConfig, emptyAgentConfig, AgentConfigError, ETCD_URL, type AgentConfig } from './agent-config.js';
export { registerClientRoutes } from './client-routes.js';
export type { ClientRoutesDeps } from './client-route-deps.js';
export { ClientListener, type ClientListenerOptions, type TokenVerdict } from './client-listener.js';
export { agentDriverPlugins, launchOverGrpc } from './driver-plugins.js';
/** The agent's own routes and metrics, registered alone (scripts/gen-reference.ts lists them). */
export { registerUiRoutes } from './ui-routes.js';
export { registerReclaimGauge, registerAllocationGauge } from './agent-gauges.js';
export { registerTaskMetrics } from './task-metrics.js';
export { startPhase } from './start-phases.js';
