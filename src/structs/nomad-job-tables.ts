// The rows of Nomad's Job JSON <-> Berth's canonical job spec, one table per
// Nomad object (src/api's shapes name the fields; TableOf makes each table
// list all of them). nomad-job.ts reads and writes jobs with them.

import type {
  Affinity as NomadAffinity,
  CheckRestart as NomadCheckRestart,
  Constraint as NomadConstraint,
  CSIMountOptions,
  DNSConfig,
  EphemeralDisk,
  Job as NomadJob,
  JobUIConfig as NomadJobUI,
  JobUILink as NomadJobUILink,
  LogConfig,
  MigrateStrategy as NomadMigrate,
  NetworkResource,
  ParameterizedJobConfig,
  PeriodicConfig,
  Port,
  ReschedulePolicy as NomadReschedule,
  Resources,
  RestartPolicy as NomadRestart,
  ScalingPolicy as NomadScaling,
  Service,
  ServiceCheck,
  Spread as NomadSpread,
  SpreadTarget,
  Task as NomadTask,
  TaskArtifact,
  TaskCSIPluginConfig,
  TaskGroup as NomadGroup,
  TaskLifecycle,
  Template,
  UpdateStrategy as NomadUpdate,
  VolumeMount as NomadVolumeMount,
  VolumeRequest,
  DispatchPayloadConfig,
  WorkloadIdentity,
} from '../api/index.js';
import {
  attr,
  CUSTOM,
  DEFAULTED,
  DROP,
  duration,
  durationOrUnset,
  KEY,
  millis,
  millisOrUnset,
  onlyValue,
  unsetIfZero,
  unsupported,
  type Conv,
  type Rule,
  type TableOf,
} from './nomad-table.js';

/**
 * An UpdateStrategy duration in milliseconds. Nomad's server writes a job's
 * own Update as a stub (Stagger and MaxParallel, the rest 0) and a group's
 * in full; in a stub (no HealthyDeadline) a 0 is a field left unset, in a
 * full strategy it is a value (progress_deadline = 0: no deadline).
 */
const updateMillis: Conv = {
  in: (v, at, t, parent) => (v === 0 && !(typeof parent['HealthyDeadline'] === 'number' && parent['HealthyDeadline'] > 0) ? undefined : millis.in(v, at, t, parent)),
  out: millis.out,
};
/** Nomad's deprecated LogConfig.Enabled, read as the inverse of Disabled; never written (Disabled is). */
const logsEnabled: Conv = { in: (v) => (typeof v === 'boolean' ? !v : v), out: () => undefined };
/** Nomad's Cores are whole cores; Berth's `cores` may be fractional, and a fraction rides in BerthCores. */
const wholeCores: Conv = { in: unsetIfZero.in, out: (v) => (typeof v === 'number' && Number.isInteger(v) ? v : undefined) };
const fractionCores: Conv = { in: unsetIfZero.in, out: (v) => (typeof v === 'number' && !Number.isInteger(v) ? v : undefined) };

export const MIGRATE: TableOf<NomadMigrate> = {
  MaxParallel: attr('maxParallel', unsetIfZero),
  HealthCheck: attr('healthCheck'),
  MinHealthyTime: attr('minHealthyTimeMs', millis),
  HealthyDeadline: attr('healthyDeadlineMs', millis),
};
const RESTART: TableOf<NomadRestart> = {
  Attempts: attr('attempts'),
  Interval: attr('interval', duration),
  Delay: attr('delay', duration),
  Mode: attr('mode'),
  RenderTemplates: DEFAULTED,
};
const RESCHEDULE: TableOf<NomadReschedule> = {
  Attempts: attr('attempts'),
  Interval: attr('interval', duration),
  Delay: attr('delay', duration),
  DelayFunction: attr('delayFunction'),
  MaxDelay: attr('maxDelay', duration),
  Unlimited: attr('unlimited'),
};
const UPDATE: TableOf<NomadUpdate> = {
  MaxParallel: attr('maxParallel'),
  HealthCheck: attr('healthCheck'),
  MinHealthyTime: attr('minHealthyTimeMs', updateMillis),
  HealthyDeadline: attr('healthyDeadlineMs', updateMillis),
  ProgressDeadline: attr('progressDeadlineMs', updateMillis),
  AutoRevert: attr('autoRevert'),
  AutoPromote: attr('autoPromote'),
  Canary: attr('canary'),
  Stagger: attr('staggerMs', updateMillis),
};
export const MOUNT_OPTIONS: TableOf<CSIMountOptions> = { FSType: attr('fsType'), MountFlags: attr('mountFlags') };
const GROUP_VOLUME: TableOf<VolumeRequest> = {
  Name: KEY,
  Type: attr('type'),
  Source: attr('source'),
  ReadOnly: attr('readOnly'),
  AccessMode: attr('accessMode'),
  AttachmentMode: attr('attachmentMode'),
  MountOptions: { to: 'mountOptions', obj: MOUNT_OPTIONS },
  PerAlloc: attr('perAlloc'),
  Sticky: attr('sticky', { in: (v) => (v === false ? undefined : v), out: (v) => v ?? false }),
};
/** Nomad's Port: `Value` is the static port (0 in DynamicPorts), `To` the mapped one (0: unset). */
const PORT: TableOf<Port> = {
  Label: attr('label'),
  Value: attr('static', unsetIfZero),
  To: attr('to', unsetIfZero),
  HostNetwork: attr('hostNetwork'),
  IgnoreCollision: unsupported('ignore_collision on ports'),
};
const DNS: TableOf<DNSConfig> = { Servers: attr('servers'), Searches: attr('searches'), Options: attr('options') };
/** A group's network; its ports are Berth's one `ports` list split by whether they are static (nomad-job.ts joins and splits them). */
export const NETWORK: TableOf<NetworkResource> = {
  Mode: attr('mode'),
  ReservedPorts: { to: 'reservedPorts', list: PORT },
  DynamicPorts: { to: 'dynamicPorts', list: PORT },
  DNS: { to: 'dns', obj: DNS },
  Device: DEFAULTED,
  CIDR: DEFAULTED,
  IP: DEFAULTED,
  MBits: DEFAULTED,
  Hostname: DEFAULTED,
  CNI: unsupported('cni args'),
};
const CHECK_RESTART: TableOf<NomadCheckRestart> = { Limit: attr('limit'), Grace: attr('graceMs', millis), IgnoreWarnings: attr('ignoreWarnings') };
const CHECK: TableOf<ServiceCheck> = {
  Name: attr('name'),
  Type: attr('type'),
  Command: attr('command'),
  Args: attr('args'),
  Path: attr('path'),
  Protocol: attr('protocol'),
  PortLabel: attr('port'),
  AddressMode: attr('addressMode'),
  Interval: attr('intervalMs', millisOrUnset),
  Timeout: attr('timeoutMs', millisOrUnset),
  InitialStatus: attr('initialStatus'),
  Method: attr('method'),
  Header: attr('header'),
  CheckRestart: { to: 'checkRestart', obj: CHECK_RESTART },
  TaskName: attr('task'),
  SuccessBeforePassing: attr('successBeforePassing'),
  FailuresBeforeCritical: attr('failuresBeforeCritical'),
  BerthExpectedStatus: attr('expectedStatus'),
  FailuresBeforeWarning: unsupported('failures_before_warning'),
  Expose: unsupported('exposed checks (Consul Connect)'),
  Advertise: unsupported('check advertise addresses (Consul)'),
  GRPCService: unsupported('grpc checks'),
  GRPCUseTLS: DEFAULTED,
  TLSServerName: unsupported('https checks'),
  TLSSkipVerify: DEFAULTED,
  Body: unsupported('check request bodies'),
  Notes: DEFAULTED,
  OnUpdate: DEFAULTED,
};
const SERVICE: TableOf<Service> = {
  Name: attr('name'),
  TaskName: attr('taskName'),
  PortLabel: attr('port'),
  AddressMode: attr('addressMode'),
  Address: attr('address'),
  Tags: attr('tags'),
  Meta: attr('meta'),
  Provider: attr('provider'),
  Checks: { to: 'checks', list: CHECK },
  // Read (a service's checks default to it); Berth's spec keeps it on each check, so it is written there.
  CheckRestart: { to: 'checkRestart', obj: CHECK_RESTART },
  EnableTagOverride: DEFAULTED,
  CanaryTags: unsupported('canary tags'),
  CanaryMeta: unsupported('canary meta'),
  TaggedAddresses: unsupported('tagged addresses'),
  Connect: unsupported('Consul Connect'),
  Identity: unsupported('service identities (they are for Consul)'),
  Weights: unsupported('service weights (Consul)'),
  Kind: unsupported('service kinds (Consul)'),
  Cluster: DEFAULTED,
  OnUpdate: DEFAULTED,
  // Older Nomads' Consul namespace.
  Namespace: DEFAULTED,
};
// Placement rules: Nomad's LTarget/Operand/RTarget.
const CONSTRAINT: TableOf<NomadConstraint> = { LTarget: attr('attribute'), Operand: attr('operator'), RTarget: attr('value') };
const AFFINITY: TableOf<NomadAffinity> = { ...CONSTRAINT, Weight: attr('weight') };
const SPREAD_TARGET: TableOf<SpreadTarget> = { Value: attr('value'), Percent: attr('percent') };
const SPREAD: TableOf<NomadSpread> = { Attribute: attr('attribute'), Weight: attr('weight'), SpreadTarget: { to: 'targets', list: SPREAD_TARGET } };
const CONSTRAINTS: Rule = { to: 'constraints', list: CONSTRAINT };
const AFFINITIES: Rule = { to: 'affinities', list: AFFINITY };
const SPREADS: Rule = { to: 'spreads', list: SPREAD };

const RESOURCES: TableOf<Resources> = {
  CPU: attr('cpuMhz', unsetIfZero),
  Cores: attr('cores', wholeCores),
  BerthCores: attr('cores', fractionCores),
  MemoryMB: attr('memoryMb', unsetIfZero),
  MemoryMaxMB: attr('memoryMaxMb', unsetIfZero),
  BerthPidsMax: attr('pidsMax'),
  BerthMemoryEnforced: attr('memoryEnforced'),
  DiskMB: DEFAULTED,
  IOPS: DEFAULTED,
  SecretsMB: DEFAULTED,
  Networks: unsupported('task networks (give the group a network block)'),
  Devices: unsupported('devices'),
  NUMA: unsupported('NUMA placement'),
};
const LIFECYCLE: TableOf<TaskLifecycle> = { Hook: attr('hook'), Sidecar: attr('sidecar') };
const VOLUME_MOUNT: TableOf<NomadVolumeMount> = {
  Volume: attr('volume'),
  Destination: attr('destination'),
  ReadOnly: attr('readOnly'),
  PropagationMode: attr('propagationMode'),
  SELinuxLabel: attr('selinuxLabel'),
};
const CSI_PLUGIN: TableOf<TaskCSIPluginConfig> = {
  ID: attr('id'),
  Type: attr('type'),
  MountDir: attr('mountDir'),
  StagePublishBaseDir: attr('stagePublishBaseDir'),
  HealthTimeout: attr('healthTimeout', durationOrUnset),
};
const LOG_CONFIG: TableOf<LogConfig> = { MaxFiles: attr('maxFiles'), MaxFileSizeMB: attr('maxFileSizeMb'), Disabled: attr('disabled'), Enabled: attr('disabled', logsEnabled) };
const DISPATCH_PAYLOAD: TableOf<DispatchPayloadConfig> = { File: attr('file') };
const TEMPLATE: TableOf<Template> = {
  SourcePath: attr('source'),
  DestPath: attr('destination'),
  EmbeddedTmpl: attr('data'),
  ChangeMode: attr('changeMode'),
  ChangeSignal: attr('changeSignal'),
  Splay: attr('splay', duration),
  Perms: attr('perms'),
  Uid: attr('uid'),
  Gid: attr('gid'),
  Envvars: attr('env'),
  LeftDelim: attr('leftDelimiter'),
  RightDelim: attr('rightDelimiter'),
  ErrMissingKey: attr('errorOnMissingKey'),
  ChangeScript: unsupported('template change scripts'),
  VaultGrace: DEFAULTED,
  Wait: DEFAULTED,
  Once: DEFAULTED,
};
const ARTIFACT: TableOf<TaskArtifact> = {
  GetterSource: attr('source'),
  RelativeDest: attr('destination'),
  GetterOptions: attr('options'),
  GetterMode: attr('mode'),
  GetterHeaders: attr('headers'),
  GetterInsecure: DEFAULTED,
  Chown: unsupported('artifact chown'),
};
/** A task's `identity` block; Nomad keeps the default one in Task.Identity and the named ones in Task.Identities (nomad-job.ts splits and joins them). */
export const IDENTITY: TableOf<WorkloadIdentity> = {
  Name: attr('name'),
  Audience: attr('aud'),
  ChangeMode: attr('changeMode'),
  ChangeSignal: attr('changeSignal'),
  Env: attr('env'),
  File: attr('file'),
  Filepath: attr('filepath'),
  ServiceName: attr('serviceName'),
  TTL: attr('ttl', durationOrUnset),
  ExtraClaims: attr('extraClaims'),
};
const TASK: TableOf<NomadTask> = {
  Name: attr('name'),
  Driver: attr('driver'),
  Config: attr('config'),
  Env: attr('env'),
  User: attr('user'),
  Meta: attr('meta'),
  KillTimeout: attr('killTimeout', duration),
  KillSignal: attr('killSignal'),
  ShutdownDelay: attr('shutdownDelay', durationOrUnset),
  BerthMaxRunDuration: attr('maxRunDuration', duration),
  Lifecycle: { to: 'lifecycle', obj: LIFECYCLE },
  Resources: { to: 'resources', obj: RESOURCES },
  VolumeMounts: { to: 'volumeMounts', list: VOLUME_MOUNT },
  CSIPluginConfig: { to: 'csiPlugin', obj: CSI_PLUGIN },
  LogConfig: { to: 'logs', obj: LOG_CONFIG },
  DispatchPayload: { to: 'dispatchPayload', obj: DISPATCH_PAYLOAD },
  Templates: { to: 'templates', list: TEMPLATE },
  Artifacts: { to: 'artifacts', list: ARTIFACT },
  Constraints: CONSTRAINTS,
  Affinities: AFFINITIES,
  Services: { to: 'services', list: SERVICE },
  // The group's, as Nomad fills it in, is dropped before the table is read (nomad-job-defaults.ts); any other is the task's own.
  RestartPolicy: unsupported('a restart block on a task (give it to the group)'),
  Vault: unsupported('Vault'),
  Consul: unsupported('Consul'),
  // Berth's one `identities` list, split and joined by nomad-job.ts.
  Identity: CUSTOM,
  Identities: CUSTOM,
  Secrets: unsupported('secret blocks'),
  Kind: DEFAULTED,
  Leader: attr('leader'),
  ScalingPolicies: unsupported('scaling policies'),
  Schedule: unsupported('task schedules'),
  Actions: unsupported('task actions'),
};
/** A group's horizontal scaling policy; what the server derives (ID, target, type, indexes) is filled in on the way out (nomad-job-stored.ts). */
const SCALING: TableOf<NomadScaling> = {
  Min: attr('min'),
  Max: attr('max'),
  Policy: attr('policy'),
  Enabled: attr('enabled'),
  Type: onlyValue('horizontal', 'a group\'s scaling policy is "horizontal"'),
  ID: DEFAULTED,
  Namespace: DEFAULTED,
  Target: DEFAULTED,
  CreateIndex: DEFAULTED,
  ModifyIndex: DEFAULTED,
};
const EPHEMERAL_DISK: TableOf<EphemeralDisk> = { SizeMB: attr('size'), Sticky: attr('sticky'), Migrate: attr('migrate') };
export const GROUP: TableOf<NomadGroup> = {
  Name: attr('name'),
  Count: attr('count'),
  Tasks: { to: 'tasks', list: TASK },
  RestartPolicy: { to: 'restart', obj: RESTART },
  ReschedulePolicy: { to: 'reschedule', obj: RESCHEDULE },
  Volumes: { to: 'volumes', byName: GROUP_VOLUME },
  Meta: attr('meta'),
  ShutdownDelay: attr('shutdownDelay', duration),
  MaxRunDuration: attr('maxRunDuration', duration),
  // A list of at most one, and Berth's `network`: nomad-job.ts converts it.
  Networks: CUSTOM,
  EphemeralDisk: { to: 'ephemeralDisk', obj: EPHEMERAL_DISK },
  Update: { to: 'update', obj: UPDATE },
  Migrate: { to: 'migrate', obj: MIGRATE },
  Constraints: CONSTRAINTS,
  Affinities: AFFINITIES,
  Spreads: SPREADS,
  Services: { to: 'services', list: SERVICE },
  Scaling: { to: 'scaling', obj: SCALING },
  Consul: unsupported('Consul'),
  StopAfterClientDisconnect: unsupported('stop_after_client_disconnect'),
  MaxClientDisconnect: unsupported('max_client_disconnect'),
  PreventRescheduleOnLost: DEFAULTED,
  Disconnect: DEFAULTED,
};
const PERIODIC: TableOf<PeriodicConfig> = {
  Enabled: attr('enabled'),
  Spec: attr('cron'),
  Specs: attr('crons'),
  SpecType: onlyValue('cron', 'only "cron" periodic specs are supported'),
  ProhibitOverlap: attr('prohibitOverlap'),
  TimeZone: attr('timeZone'),
};
const PARAMETERIZED: TableOf<ParameterizedJobConfig> = { Payload: attr('payload'), MetaRequired: attr('metaRequired'), MetaOptional: attr('metaOptional') };

/** Fields of Nomad's Job the server keeps (`job inspect` prints them): dropped when read, written by nomad-job-stored.ts. */
const SERVER_FIELDS = [
  'Stop', 'Status', 'StatusDescription', 'Stable', 'Version', 'SubmitTime', 'CreateIndex', 'ModifyIndex', 'JobModifyIndex', 'ParentID', 'Dispatched',
  'DispatchIdempotencyToken', 'Payload', 'ConsulNamespace', 'VaultNamespace', 'NomadTokenID', 'VersionTag',
  // Written by older Nomads, or by Nomad's server-side structs.
  'ConsulToken', 'VaultToken', 'Tags',
] as const;

const UI: TableOf<NomadJobUI> = {
  Description: attr('description'),
  Links: { to: 'links', list: { Label: attr('label'), URL: attr('url') } satisfies TableOf<NomadJobUILink> },
};

/** The job object of Nomad's `{"Job": {...}}`. */
export const JOB: TableOf<NomadJob> = {
  ID: attr('id'),
  Name: attr('name'),
  Namespace: attr('namespace'),
  Region: attr('region'),
  Type: attr('type'),
  Priority: attr('priority', unsetIfZero),
  Datacenters: attr('datacenters'),
  TaskGroups: { to: 'groups', list: GROUP },
  Meta: attr('meta'),
  Periodic: { to: 'periodic', obj: PERIODIC },
  ParameterizedJob: { to: 'parameterized', obj: PARAMETERIZED },
  Update: { to: 'update', obj: UPDATE },
  Constraints: CONSTRAINTS,
  Affinities: AFFINITIES,
  Spreads: SPREADS,
  Migrate: { to: 'migrate', obj: MIGRATE },
  AllAtOnce: DEFAULTED,
  UI: { to: 'ui', obj: UI },
  NodePool: onlyValue('default', 'Berth has no node pools; leave NodePool out (or "default")'),
  Reschedule: { to: 'reschedule', obj: RESCHEDULE },
  Multiregion: unsupported('multiregion jobs'),
  Vault: unsupported('Vault'),
  Consul: unsupported('Consul'),
  ...(Object.fromEntries(SERVER_FIELDS.map((k) => [k, DROP])) as Record<(typeof SERVER_FIELDS)[number], Rule>),
};
