// Nomad's objects as the job writer (nomad-table.ts writeObject) writes them:
// each field in Go's order with the zero value Go's encoder writes for it,
// and the nested objects the tables (nomad-job-tables.ts) descend into.
// Made from src/api's zod schemas by nomad-job-shapes.test.ts, which also
// checks this file against them; do not edit by hand. After a change to a
// schema or a table:
//   BERTH_WRITE_SHAPES=1 node --import tsx --test src/structs/nomad-job-shapes.test.ts

import type { NomadShape } from './nomad-table.js';

const Constraint: NomadShape = {
  zero: {
    LTarget: '',
    RTarget: '',
    Operand: '',
  },
};

const Affinity: NomadShape = {
  zero: {
    LTarget: '',
    RTarget: '',
    Operand: '',
    Weight: null,
  },
};

const TaskLifecycle: NomadShape = {
  zero: {
    Hook: '',
    Sidecar: false,
  },
};

const CheckRestart: NomadShape = {
  zero: {
    Limit: 0,
    Grace: null,
    IgnoreWarnings: false,
  },
};

const ServiceCheck: NomadShape = {
  zero: {
    Name: '',
    Type: '',
    Command: '',
    Args: null,
    Path: '',
    Protocol: '',
    PortLabel: '',
    Expose: false,
    AddressMode: '',
    Advertise: '',
    Interval: 0,
    Timeout: 0,
    InitialStatus: '',
    Notes: '',
    TLSServerName: '',
    TLSSkipVerify: false,
    Header: null,
    Method: '',
    CheckRestart: null,
    GRPCService: '',
    GRPCUseTLS: false,
    TaskName: '',
    SuccessBeforePassing: 0,
    FailuresBeforeCritical: 0,
    FailuresBeforeWarning: 0,
    Body: '',
    OnUpdate: '',
    BerthExpectedStatus: undefined,
  },
  nested: { CheckRestart },
};

const Service: NomadShape = {
  zero: {
    Name: '',
    Tags: null,
    CanaryTags: null,
    EnableTagOverride: false,
    PortLabel: '',
    AddressMode: '',
    Address: '',
    Checks: null,
    CheckRestart: null,
    Connect: null,
    Meta: null,
    CanaryMeta: null,
    TaggedAddresses: null,
    TaskName: '',
    OnUpdate: '',
    Identity: null,
    Weights: null,
    Provider: '',
    Cluster: '',
    Kind: '',
  },
  nested: { Checks: ServiceCheck, CheckRestart },
};

const Resources: NomadShape = {
  zero: {
    CPU: null,
    Cores: null,
    MemoryMB: null,
    MemoryMaxMB: null,
    DiskMB: null,
    Networks: null,
    Devices: null,
    NUMA: null,
    SecretsMB: null,
    IOPS: null,
    BerthCores: undefined,
    BerthPidsMax: undefined,
    BerthMemoryEnforced: undefined,
  },
};

const LogConfig: NomadShape = {
  zero: {
    MaxFiles: null,
    MaxFileSizeMB: null,
    Enabled: null,
    Disabled: null,
  },
};

const TaskArtifact: NomadShape = {
  zero: {
    GetterSource: null,
    GetterOptions: null,
    GetterHeaders: null,
    GetterMode: null,
    GetterInsecure: null,
    RelativeDest: null,
    Chown: false,
  },
};

const Template: NomadShape = {
  zero: {
    SourcePath: null,
    DestPath: null,
    EmbeddedTmpl: null,
    ChangeMode: null,
    ChangeScript: null,
    ChangeSignal: null,
    Once: null,
    Splay: null,
    Perms: null,
    Uid: null,
    Gid: null,
    LeftDelim: null,
    RightDelim: null,
    Envvars: null,
    VaultGrace: null,
    Wait: null,
    ErrMissingKey: null,
  },
};

const DispatchPayloadConfig: NomadShape = {
  zero: {
    File: '',
  },
};

const VolumeMount: NomadShape = {
  zero: {
    Volume: null,
    Destination: null,
    ReadOnly: null,
    PropagationMode: null,
    SELinuxLabel: null,
  },
};

const TaskCSIPluginConfig: NomadShape = {
  zero: {
    ID: '',
    Type: '',
    MountDir: '',
    StagePublishBaseDir: '',
    HealthTimeout: 0,
  },
};

const Task: NomadShape = {
  zero: {
    Name: '',
    Driver: '',
    User: '',
    Lifecycle: null,
    Config: null,
    Constraints: null,
    Affinities: null,
    Env: null,
    Services: null,
    Resources: null,
    RestartPolicy: null,
    Meta: null,
    KillTimeout: null,
    LogConfig: null,
    Artifacts: null,
    Vault: null,
    Consul: null,
    Templates: null,
    DispatchPayload: null,
    VolumeMounts: null,
    CSIPluginConfig: undefined,
    Leader: false,
    ShutdownDelay: 0,
    KillSignal: '',
    Kind: '',
    ScalingPolicies: null,
    Secrets: null,
    Identity: null,
    Identities: null,
    Actions: null,
    Schedule: null,
    BerthMaxRunDuration: undefined,
  },
  nested: { Lifecycle: TaskLifecycle, Constraints: Constraint, Affinities: Affinity, Services: Service, Resources, LogConfig, Artifacts: TaskArtifact, Templates: Template, DispatchPayload: DispatchPayloadConfig, VolumeMounts: VolumeMount, CSIPluginConfig: TaskCSIPluginConfig },
};

const SpreadTarget: NomadShape = {
  zero: {
    Value: '',
    Percent: 0,
  },
};

const Spread: NomadShape = {
  zero: {
    Attribute: '',
    Weight: null,
    SpreadTarget: null,
  },
  nested: { SpreadTarget },
};

const CSIMountOptions: NomadShape = {
  zero: {
    FSType: '',
    MountFlags: null,
  },
};

const VolumeRequest: NomadShape = {
  zero: {
    Name: '',
    Type: '',
    Source: '',
    ReadOnly: false,
    Sticky: false,
    AccessMode: '',
    AttachmentMode: '',
    MountOptions: null,
    PerAlloc: false,
  },
  nested: { MountOptions: CSIMountOptions },
};

const RestartPolicy: NomadShape = {
  zero: {
    Interval: null,
    Attempts: null,
    Delay: null,
    Mode: null,
    RenderTemplates: null,
  },
};

const ReschedulePolicy: NomadShape = {
  zero: {
    Attempts: null,
    Interval: null,
    Delay: null,
    DelayFunction: null,
    MaxDelay: null,
    Unlimited: null,
  },
};

const EphemeralDisk: NomadShape = {
  zero: {
    Sticky: null,
    Migrate: null,
    SizeMB: null,
  },
};

const UpdateStrategy: NomadShape = {
  zero: {
    Stagger: null,
    MaxParallel: null,
    HealthCheck: null,
    MinHealthyTime: null,
    HealthyDeadline: null,
    ProgressDeadline: null,
    Canary: null,
    AutoRevert: null,
    AutoPromote: null,
  },
};

const MigrateStrategy: NomadShape = {
  zero: {
    MaxParallel: null,
    HealthCheck: null,
    MinHealthyTime: null,
    HealthyDeadline: null,
  },
};

const ScalingPolicy: NomadShape = {
  zero: {
    Min: null,
    Max: null,
    Policy: null,
    Enabled: null,
    Type: '',
    ID: '',
    Namespace: '',
    Target: null,
    CreateIndex: 0,
    ModifyIndex: 0,
  },
};

const TaskGroup: NomadShape = {
  zero: {
    Name: null,
    Count: null,
    Constraints: null,
    Affinities: null,
    Tasks: null,
    Spreads: null,
    Volumes: null,
    RestartPolicy: null,
    Disconnect: null,
    ReschedulePolicy: null,
    EphemeralDisk: null,
    Update: null,
    Migrate: null,
    Networks: null,
    Meta: null,
    Services: null,
    ShutdownDelay: null,
    MaxRunDuration: null,
    StopAfterClientDisconnect: null,
    MaxClientDisconnect: null,
    Scaling: null,
    Consul: null,
    PreventRescheduleOnLost: null,
  },
  nested: { Constraints: Constraint, Affinities: Affinity, Tasks: Task, Spreads: Spread, Volumes: VolumeRequest, RestartPolicy, ReschedulePolicy, EphemeralDisk, Update: UpdateStrategy, Migrate: MigrateStrategy, Services: Service, Scaling: ScalingPolicy },
};

const PeriodicConfig: NomadShape = {
  zero: {
    Enabled: null,
    Spec: null,
    Specs: null,
    SpecType: null,
    ProhibitOverlap: null,
    TimeZone: null,
  },
};

const ParameterizedJobConfig: NomadShape = {
  zero: {
    Payload: '',
    MetaRequired: null,
    MetaOptional: null,
  },
};

const JobUILink: NomadShape = {
  zero: {
    Label: '',
    URL: '',
  },
};

const JobUIConfig: NomadShape = {
  zero: {
    Description: '',
    Links: null,
  },
  nested: { Links: JobUILink },
};

const Job: NomadShape = {
  zero: {
    Region: null,
    Namespace: null,
    ID: null,
    Name: null,
    Type: null,
    Priority: null,
    AllAtOnce: null,
    Datacenters: null,
    NodePool: null,
    Constraints: null,
    Affinities: null,
    TaskGroups: null,
    Update: null,
    Multiregion: null,
    Spreads: null,
    Periodic: null,
    ParameterizedJob: null,
    Reschedule: null,
    Migrate: null,
    Meta: null,
    UI: null,
    Stop: null,
    ParentID: null,
    Dispatched: false,
    DispatchIdempotencyToken: null,
    Payload: null,
    ConsulNamespace: null,
    VaultNamespace: null,
    NomadTokenID: null,
    Status: null,
    StatusDescription: null,
    Stable: null,
    Version: null,
    SubmitTime: null,
    CreateIndex: null,
    ModifyIndex: null,
    JobModifyIndex: null,
    VersionTag: null,
  },
  nested: { Constraints: Constraint, Affinities: Affinity, TaskGroups: TaskGroup, Update: UpdateStrategy, Spreads: Spread, Periodic: PeriodicConfig, ParameterizedJob: ParameterizedJobConfig, Reschedule: ReschedulePolicy, Migrate: MigrateStrategy, UI: JobUIConfig },
};

const DNSConfig: NomadShape = {
  zero: {
    Servers: null,
    Searches: null,
    Options: null,
  },
};

const Port: NomadShape = {
  zero: {
    Label: '',
    Value: 0,
    To: 0,
    HostNetwork: '',
    IgnoreCollision: false,
  },
};

const NetworkResource: NomadShape = {
  zero: {
    Mode: '',
    Device: '',
    CIDR: '',
    IP: '',
    DNS: null,
    ReservedPorts: null,
    DynamicPorts: null,
    Hostname: '',
    MBits: null,
    CNI: null,
  },
  nested: { DNS: DNSConfig, ReservedPorts: Port, DynamicPorts: Port },
};

const WorkloadIdentity: NomadShape = {
  zero: {
    Name: '',
    Audience: null,
    ChangeMode: '',
    ChangeSignal: '',
    Env: false,
    File: false,
    Filepath: '',
    ServiceName: '',
    TTL: 0,
    ExtraClaims: null,
  },
};

/** The shapes the writer starts from: a job, a group network, a workload identity. */
export const NOMAD_SHAPES = { Job, NetworkResource, WorkloadIdentity } as const;
