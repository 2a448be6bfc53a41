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

export { lazySchema } from './lazy-schema.js';
export { AllocationMetric, NodeScoreMeta } from './alloc-metric.js';
export { GO_ZERO_TIME } from './_go.js';
export { EVAL_STATUSES, Evaluation, EvaluationStub } from './evaluations.js';
export {
  DEPLOYMENT_STATUSES,
  Deployment,
  DeploymentState,
  DeploymentUpdateResponse,
  DeploymentPromoteRequest,
  DeploymentPauseRequest,
  DeploymentFailRequest,
  DeploymentAllocHealthRequest,
} from './deployments.js';

// Jobs (src/api/jobs.ts and the files it is built from): the Job, its task
// groups, tasks and their blocks, services, resources, placement rules, and
// the job routes' bodies. Berth's own fields are `Berth...`.
export { Affinity, Constraint, Spread, SpreadTarget } from './constraints.js';
export { CNIConfig, DNSConfig, NetworkResource, NUMAResource, Port, RequestedDevice, Resources } from './resources.js';
export {
  Action,
  ChangeScript,
  CSIMountOptions,
  DispatchPayloadConfig,
  DisconnectStrategy,
  EphemeralDisk,
  LogConfig,
  MigrateStrategy,
  ReschedulePolicy,
  RestartPolicy,
  Secret,
  TaskArtifact,
  TaskCSIPluginConfig,
  TaskLifecycle,
  TaskSchedule,
  TaskScheduleCron,
  Template,
  UpdateStrategy,
  Vault,
  VolumeMount,
  VolumeRequest,
  WaitConfig,
  WorkloadIdentity,
} from './job-task-blocks.js';
export {
  CheckRestart,
  Consul,
  ConsulConnect,
  ConsulExposeConfig,
  ConsulExposePath,
  ConsulGateway,
  ConsulGatewayBindAddress,
  ConsulGatewayProxy,
  ConsulGatewayTLSConfig,
  ConsulGatewayTLSSDSConfig,
  ConsulHTTPHeaderModifiers,
  ConsulIngressConfigEntry,
  ConsulIngressListener,
  ConsulIngressService,
  ConsulLinkedService,
  ConsulMeshConfigEntry,
  ConsulMeshGateway,
  ConsulProxy,
  ConsulSidecarService,
  ConsulTerminatingConfigEntry,
  ConsulTransparentProxy,
  ConsulUpstream,
  Service,
  ServiceCheck,
  ServiceWeights,
  SidecarTask,
} from './job-services.js';
export { Task, TaskGroup } from './job-tasks.js';
export { JobScaleStatusResponse, ScalingEvent, ScalingPolicy, ScalingPolicyListStub, TaskGroupScaleStatus } from './scaling.js';
export { DesiredUpdates, FieldDiff, JobDiff, ObjectDiff, PlanAnnotations, TaskDiff, TaskGroupDiff } from './job-plan.js';
// Search (src/api/search.ts): Nomad's prefix and fuzzy search.
export { FuzzyMatch, FuzzySearchRequest, FuzzySearchResponse, SearchContext, SearchRequest, SearchResponse } from './search.js';
export {
  BerthPlannedPlacement,
  BerthPlannedStop,
  Job,
  JobChildrenSummary,
  JobDeregisterResponse,
  JobDispatchRequest,
  JobDispatchResponse,
  JobEvaluateRequest,
  JobListStub,
  JobPlanRequest,
  JobPlanResponse,
  JobRegisterRequest,
  JobRegisterResponse,
  JobRevertRequest,
  JobStabilityRequest,
  JobStabilityResponse,
  JobSubmission,
  JobSummary,
  JobsParseRequest,
  JobUIConfig,
  JobUILink,
  JobValidateRequest,
  JobValidateResponse,
  JobVersionsResponse,
  JobVersionTag,
  Multiregion,
  MultiregionRegion,
  MultiregionStrategy,
  ParameterizedJobConfig,
  PeriodicConfig,
  PeriodicForceResponse,
  TaskGroupSummary,
} from './jobs.js';

// CSI volumes, snapshots and plugins (Nomad's api/csi.go).
export {
  CSIVolumeAccessMode,
  CSIVolumeAttachmentMode,
  CSITopology,
  CSITopologyRequest,
  CSIVolumeCapability,
  CSIVolume,
  CSIVolumeListStub,
  CSIVolumeSubmission,
  CSIVolumeRegisterRequest,
  CSIVolumeRegisterResponse,
  CSIVolumeCreateRequest,
  CSIVolumeCreateResponse,
  CSIVolumeDeregisterRequest,
  CSIVolumeDeleteRequest,
  CSISnapshot,
  CSISnapshotSubmission,
  CSISnapshotCreateRequest,
  CSISnapshotCreateResponse,
  CSISnapshotListResponse,
  CSIVolumeExternalStub,
  CSIVolumeListExternalResponse,
  CSIControllerInfo,
  CSINodeInfo,
  CSIInfo,
  CSIPluginExhaustion,
  CSIPlugin,
  CSIPluginListStub,
} from './csi.js';
// Dynamic host volumes (Nomad 1.10).
export {
  HostVolume,
  HostVolumeStub,
  HostVolumeState,
  HostVolumeCapability,
  HostVolumeSubmission,
  HostVolumeCreateRequest,
  HostVolumeCreateResponse,
  type HostVolumeRegisterRequest,
  type HostVolumeRegisterResponse,
} from './host-volumes.js';
// Berth's additions to the CSI API (usage, condition, claims, drift, doctor).
export {
  UsageFigures,
  NodeVolumeUsage,
  SourcedCondition,
  VolumeCondition,
  VolumeConditionEvent,
  VolumeClaimState,
  VolumeClaimListStub,
  VolumeClaimDeleteResponse,
  CSIVolumeDetachResponse,
  CSIVolumeExpandRequest,
  VolumeUsageSample,
  VolumeUsageHistory,
  DriftKind,
  DriftFinding,
  DriftReport,
  VolumeDrift,
} from './csi-berth.js';
// The cluster-wide routes: agent, status, regions, namespaces, the token,
// operator (scheduler configuration, metrics, system), services and the event stream.
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
export { NamespaceCapabilities, NamespaceClusterConfiguration, Namespace, NamespaceWriteRequest } from './namespaces.js';
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
  RaftServer,
  RaftConfiguration,
  AutopilotConfiguration,
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
// Allocations (src/api/allocations.ts) and what node agents answer about
// them (src/api/alloc-client.ts: usage, files, stream frames, exec frames).
export {
  AllocCSIVolume,
  AllocCheckStatus,
  AllocCheckStatuses,
  AllocDeploymentStatus,
  AllocNetworkStatus,
  AllocSignalRequest,
  AllocStopResponse,
  AllocatedCpuResources,
  AllocatedDeviceResource,
  AllocatedMemoryResources,
  AllocatedResources,
  AllocatedSharedResources,
  AllocatedTaskResources,
  Allocation,
  AllocationListStub,
  AllocationRestartRequest,
  DesiredTransition,
  GenericResponse,
  PortMapping,
  RescheduleEvent,
  RescheduleTracker,
  TaskEvent,
  TaskState,
} from './allocations.js';
export {
  AllocFileInfo,
  AllocResourceUsage,
  CpuStats,
  DeviceGroupStats,
  ExecStreamingExitResult,
  ExecStreamingIOOperation,
  ExecStreamingInput,
  ExecStreamingOutput,
  FILE_EVENT,
  MemoryStats,
  ResourceUsage,
  StatObject,
  StatValue,
  StreamFrame,
  TaskResourceUsage,
  TerminalSize,
  WsHandshakeMessage,
} from './alloc-client.js';
// Nodes (src/api/nodes.ts): Node, NodeListStub and what they carry, the node writes' bodies and
// answers, and the node agent's meta (/v1/client/metadata).
export {
  NodeResources,
  NodeReservedResources,
  NodeDeviceResource,
  DriverInfo,
  HostVolumeInfo,
  HostNetworkInfo,
  DrainSpec,
  DrainStrategy,
  DrainStatus,
  DrainMetadata,
  NodeEvent,
  NodeStatus,
  SchedulingEligibility,
  Node,
  NodeListStub,
  NodeUpdateDrainRequest,
  NodeUpdateEligibilityRequest,
  NodeDrainUpdateResponse,
  NodeEligibilityUpdateResponse,
  NodeUpdateResponse,
  NodePurgeResponse,
  NodeMetaApplyRequest,
  NodeMetaResponse,
} from './nodes.js';
