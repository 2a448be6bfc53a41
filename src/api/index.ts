// The public API's wire shapes: Nomad's `/v1` API as Nomad's `api` package
// encodes it (PascalCase, every field present as Go's encoder writes it),
// each shape one zod schema with its TypeScript type inferred from it. The
// server's routes answer in these shapes, the CLI and the web UI read them
// (the UI imports types only), the contract tests check answers against
// them, and docs/reference is generated from them. What Berth adds beyond
// Nomad (volume usage and condition, drift, claim history) is extra fields
// on Nomad's shapes or shapes of its own, each marked where it is defined.
//
// Each route family has its own file; this door lists what each exports.

export {
  AgentMember,
  ServerMembers,
  AgentVersion,
  AgentConfig,
  AgentSelf,
  AgentHealth,
  AgentHealthResponse,
  StatusLeader,
  StatusPeers,
  Regions,
} from './agent.js';
export { NamespaceCapabilities, NamespaceClusterConfiguration, Namespace } from './namespaces.js';
export { ACLTokenRoleLink, ACLToken } from './acl.js';
export {
  PreemptionConfig,
  SchedulerAlgorithm,
  SchedulerConfiguration,
  SchedulerConfigurationResponse,
  SchedulerSetConfigurationResponse,
  GaugeValue,
  PointValue,
  SampledValue,
  MetricsSummary,
  SystemGcResult,
} from './operator.js';
export { ServiceRegistrationStub, ServiceRegistrationListStub, ServiceRegistration } from './services.js';
export {
  NOMAD_EVENT_TOPICS,
  SILENT_EVENT_TOPICS,
  BERTH_EVENT_TOPICS,
  EventTopic,
  EVENT_TYPES,
  Event,
  Events,
  EventHeartbeat,
  EVENT_PAYLOADS,
} from './events.js';
