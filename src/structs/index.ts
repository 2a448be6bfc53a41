// The structs layer: plain types shared by the client and the server, which
// never import each other and talk over the wire.
export type { CsiPluginType, CsiPluginReport, NodeEvent } from './csi-plugin-report.js';
export type { NodeStatus, DriverInfo, Resources, NodeFingerprint, Node, NetworkMode, HostNetwork, SchedulingEligibility, DrainStrategy, DrainMetadata, NodeHistoryEvent } from './node.js';
export { isEligible, isNetworkMode, supportsNetworkMode, withNodeEvent, MAX_NODE_EVENTS } from './node.js';
export type { AllocFileInfo } from './alloc-file.js';
export {
  HOST_VOLUME_ACCESS_MODES,
  HOST_VOLUME_ATTACHMENT_MODES,
  MKDIR_PLUGIN_ID,
  MKDIR_PLUGIN_VERSION,
  hostVolumePluginAttribute,
  hostVolumeState,
  requestedHostAccess,
  type HostVolume,
  type HostVolumeAccessMode,
  type HostVolumeAttachmentMode,
  type HostVolumeCapability,
  type HostVolumeClaim,
  type HostVolumeConstraint,
  type HostVolumeState,
  type NodeHostVolume,
} from './host-volume.js';
export { hostVolumeSpecSchema, parseHostVolumeSpec, type HostVolumeSpec } from './host-volume-spec.js';
export {
  isClientTerminal,
  type AllocDesiredStatus,
  type AllocClientStatus,
  type TaskState,
  type Allocation,
  type AllocNetworkStatus,
  type AllocatedPort,
} from './allocation.js';
export { CLIENT_ALLOC_FIELDS, ALLOC_PULL_MAX, ALLOC_INLINE_HELD_JOBS_MAX_CHARS, encodeHeldJobs, isHeldJob, type AllocIndexesAnswer, type AllocIndexesInline, type AllocPullRequest, type AllocPullAnswer, type HeldJob } from './alloc-sync.js';
export {
  jobSpecSchema,
  migrateSchema,
  type MigrateStrategy,
  durationMs,
  volumeIsReadOnly,
  volumeIdFor,
  type JobSpec,
  type JobSpecInput,
  type JobType,
  type TaskGroup,
  type Task,
  type GroupVolume,
  type VolumeMount,
  type TaskTemplate,
  type TaskArtifact,
  type TaskIdentity,
  type TaskLifecycle,
  type GroupNetwork,
  type NetworkPort,
} from './job.js';
export {
  defaultReschedulePolicy,
  defaultRestartPolicy,
  groupReschedulePolicy,
  groupRestartPolicy,
  rescheduleProblems,
  type RescheduleInput,
  type ReschedulePolicy,
  type RestartInput,
  type RestartPolicy,
} from './restart-policy.js';
export {
  parseJobSpec,
  checkedJobSpec,
  adoptCheckedJobSpec,
  formatPath,
  JobValidationError,
  type JobProblem,
} from './job-parse.js';
export {
  publicJob,
  specOfJob,
  jobModifyIndex,
  SERVER_JOB_FIELDS,
  type Job,
  type JobStatus,
} from './stored-job.js';
export { rescheduleDelayMs, unsupportedMessage, LIFECYCLE_HOOKS, DELAY_FUNCTIONS, KILL_SIGNALS, type LifecycleHook, type DelayFunction } from './job-blocks.js';
export {
  describePlacementFailure,
  type Evaluation,
  type EvalStatus,
  type EvalTrigger,
  type PlacementFailure,
} from './evaluation.js';
export {
  claimConflicts,
  SINGLE_NODE_MODES,
  SINGLE_WRITER_MODES,
  type ClaimConflict,
  type ClaimHolder,
  type ClaimWant,
} from './claim-rules.js';
export {
  publicVolume,
  publicClaim,
  redactMap,
  nodeClaimAnswer,
  modeAllows,
  type NodeClaimVolume,
  type NodeClaimAnswer,
  type Volume,
  type PublicVolume,
  type VolumeCapabilitySpec,
  type VolumeMountOptions,
  type VolumeTopologyRequest,
  type VolumeClaim,
  type ClaimMode,
  type ClaimState,
  type ControllerPublishState,
} from './volume.js';
export {
  csiNodeEligibility,
  csiPluginInstance,
  instanceOf as csiInstanceOf,
  withNodeInstances,
  pluginSchedulable,
  type CsiPlugin,
  type CsiPluginRow,
  type CsiPluginInstance,
  type CsiPluginAllocation,
  type CsiPluginExhaustion,
} from './plugin.js';
export {
  NODE_RPC_METHODS,
  type CapabilityWire,
  type NodeRpcMethods,
  type NodeRpcMethod,
  type NodeRpcParams,
  type NodeRpcResult,
  type NodeRpcError,
  type NodeRpcRequest,
  type NodeRpcResponse,
} from './node-rpc.js';
export {
  volumeSpecSchema,
  parseVolumeSpec,
  parseSizeBytes,
  VolumeSpecValidationError,
  type VolumeSpec,
  type VolumeSpecInput,
} from './volume-spec.js';
export {
  volumeRegistrationSchema,
  volumeCreationSchema,
  volumeExpansionSchema,
  snapshotCreationSchema,
  snapshotDeletionSchema,
  snapshotListingSchema,
  checkVolumeInput,
  type VolumeRegistration,
  type VolumeCreation,
  type VolumeInputProblem,
} from './volume-input.js';
export {
  MAX_GROUP_COUNT,
  MAX_JOB_COUNT,
  MAX_NESTING_DEPTH,
  MAX_SPEC_FILE_BYTES,
  MAX_REQUEST_BODY_BYTES,
  nestingProblem,
  type NestingProblem,
} from './limits.js';
export {
  taskConfigProblems,
  jobTaskConfigProblems,
  withConvertedTaskConfigs,
  BUILTIN_DRIVER_CONFIG_SCHEMAS,
  type DriverConfigSchema,
} from './task-config.js';
export {
  DOCKER_TASK_CONFIG_SCHEMA,
  DOCKER_PLUGIN_CONFIG_SCHEMA,
  defaultDockerPluginConfig,
  DOCKER_DEFAULT_ALLOW_CAPS,
  type DockerTaskConfig,
  type DockerMount,
  type DockerPluginConfig,
} from './docker-config.js';
export { atNomadPaths, fromNomadPaths, nanosToDuration, type NomadTranslation } from './nomad-table.js';
export { nomadVolumeToSpec, isNomadVolumeJson } from './nomad-json.js';
// Nomad's Job JSON <-> the canonical job spec (both ways, by one table), and a stored job as Nomad's answers.
export { nomadJobToSpec, isNomadJobJson, readNomadJobQuick, specToNomadJob, type NomadJobOptions, type QuickNomadRead } from './nomad-job.js';
export { jobToNomad, jobListStub, jobSummary, type StoredJobOptions, type JobListStubOptions, type JobSummaryInputs } from './nomad-job-stored.js';
export { HORIZONTAL, scalingBoundsProblem, scalingPolicies, scalingPolicyId, scalingPolicyOf, scalingPolicyStub } from './scaling-policy.js';
export { cronProblem, nextLaunch, launchesChildren, PERIODIC_LAUNCH_SUFFIX, DISPATCH_LAUNCH_SUFFIX, MAX_DISPATCH_PAYLOAD_BYTES } from './periodic.js';
export {
  DRIFT_KINDS,
  type UsageFigures,
  type VolumeConditionReport,
  type VolumeStatsReport,
  type NodeVolumeUsage,
  type VolumeUsageSample,
  type SourcedCondition,
  type VolumeConditionRow,
  type DriftKind,
  type DriftFinding,
  type DriftCheckError,
  type DriftReport,
  type DriftRow,
  type NodeMountRecord,
  type NodeMountInventory,
} from './volume-health.js';
export {
  serviceSchema,
  checkName,
  defaultServiceName,
  registrationHealthy,
  registrationId,
  CHECK_TYPES,
  ADDRESS_MODES,
  type ServiceSpec,
  type CheckSpec,
  type CheckRestart,
  type CheckStatus,
  type CheckResult,
  type ServiceRegistration,
  type ServiceReport,
} from './service-spec.js';
export { parsePortList, portEnvKey, DEFAULT_MIN_DYNAMIC_PORT, DEFAULT_MAX_DYNAMIC_PORT, MAX_PORT, PORT_LABEL } from './network-spec.js';
export {
  CONSTRAINT_OPERATORS,
  constraintsSchema,
  describeConstraint,
  unknownTarget,
  type Constraint,
  type Affinity,
  type Spread,
  type AllocMetric,
} from './placement-rules.js';
export type { DiffType, FieldDiff, ObjectDiff, TaskDiff, GroupDiff, JobDiff, JobPlan } from './job-plan.js';
export {
  DEFAULT_UPDATE,
  HEALTH_CHECKS,
  mergeUpdate,
  rolls,
  type HealthCheck,
  type UpdateStrategy,
} from './update-strategy.js';
export {
  isActiveDeployment,
  DEPLOYMENT_STATUSES,
  type Deployment,
  type DeploymentStatus,
  type DeploymentGroupState,
  type JobVersion,
} from './deployment.js';
export { SCHEDULER_CONFIG_ID, DEFAULT_SCHEDULER_CONFIG, type SchedulerConfig, type SchedulerAlgorithmName } from './scheduler-config.js';
export {
  ALL_NAMESPACES,
  DEFAULT_NAMESPACE,
  DEFAULT_NAMESPACE_DESCRIPTION,
  DEFAULT_NAMESPACE_ROW,
  MAX_NAMESPACE_DESCRIPTION,
  NAMESPACE_NAME_PATTERN,
  namespaceProblems,
  type Namespace,
} from './namespace.js';
export {
  DEFAULT_IDENTITY_AUD,
  DEFAULT_IDENTITY_FILE,
  DEFAULT_IDENTITY_NAME,
  IDENTITY_ENV,
  identityEnv,
  identityFile,
  type IdentityRejection,
  type IdentityRequest,
  type IdentitySignAnswer,
  type SignedIdentity,
  type WorkloadIdentitySpec,
} from './workload-identity.js';
export { ROOT_KEY_ALGORITHM, publicRootKey, type Jwk, type RootKey } from './root-key.js';
