// The blocks inside a task group and a task, as Nomad's API writes them
// (api/tasks.go, api/jobs.go's UpdateStrategy, api/csi.go's mount options,
// api/task_sched.go). Durations are nanoseconds. Where Nomad's Canonicalize
// fills a default, the comment names it.

import { z } from 'zod';
import { int, list, nanos, ptr, stringMap, anyMap } from './_go.js';
import { lazySchema } from './lazy-schema.js';

/** Restarts in place (group, and per task since Nomad 1.8: the group's unless the task has its own). */
export const RestartPolicy = lazySchema(() => z.strictObject({
  Interval: ptr(nanos),
  Attempts: ptr(int),
  Delay: ptr(nanos),
  Mode: ptr(z.string()),
  RenderTemplates: ptr(z.boolean()),
}));
export type RestartPolicy = z.infer<typeof RestartPolicy>;

/** What happens to a group's allocations on a disconnected node. */
export const DisconnectStrategy = lazySchema(() => z.strictObject({
  LostAfter: ptr(nanos),
  StopOnClientAfter: ptr(nanos),
  Replace: ptr(z.boolean()),
  Reconcile: ptr(z.string()),
}));
export type DisconnectStrategy = z.infer<typeof DisconnectStrategy>;

/** Replacing failed allocations on another node. */
export const ReschedulePolicy = lazySchema(() => z.strictObject({
  Attempts: ptr(int),
  Interval: ptr(nanos),
  Delay: ptr(nanos),
  DelayFunction: ptr(z.string()),
  MaxDelay: ptr(nanos),
  Unlimited: ptr(z.boolean()),
}));
export type ReschedulePolicy = z.infer<typeof ReschedulePolicy>;

/** Canonicalize: Sticky false, Migrate false, SizeMB 300. */
export const EphemeralDisk = lazySchema(() => z.strictObject({
  Sticky: ptr(z.boolean()),
  Migrate: ptr(z.boolean()),
  SizeMB: ptr(int),
}));
export type EphemeralDisk = z.infer<typeof EphemeralDisk>;

/** How a drain moves a group's allocations (service jobs get 1, "checks", 10s, 5m). */
export const MigrateStrategy = lazySchema(() => z.strictObject({
  MaxParallel: ptr(int),
  HealthCheck: ptr(z.string()),
  MinHealthyTime: ptr(nanos),
  HealthyDeadline: ptr(nanos),
}));
export type MigrateStrategy = z.infer<typeof MigrateStrategy>;

/** How a changed group's allocations are replaced (api/jobs.go). */
export const UpdateStrategy = lazySchema(() => z.strictObject({
  Stagger: ptr(nanos),
  MaxParallel: ptr(int),
  HealthCheck: ptr(z.string()),
  MinHealthyTime: ptr(nanos),
  HealthyDeadline: ptr(nanos),
  ProgressDeadline: ptr(nanos),
  Canary: ptr(int),
  AutoRevert: ptr(z.boolean()),
  AutoPromote: ptr(z.boolean()),
}));
export type UpdateStrategy = z.infer<typeof UpdateStrategy>;

/** A CSI volume's mount options (api/csi.go); MountFlags may carry credentials. */
export const CSIMountOptions = lazySchema(() => z.strictObject({
  FSType: z.string(),
  MountFlags: list(z.string()),
}));
export type CSIMountOptions = z.infer<typeof CSIMountOptions>;

/** A group's `volume` block (a CSI or host volume), keyed by its name in TaskGroup.Volumes. */
export const VolumeRequest = lazySchema(() => z.strictObject({
  Name: z.string(),
  Type: z.string(),
  Source: z.string(),
  ReadOnly: z.boolean(),
  Sticky: z.boolean(),
  AccessMode: z.string(),
  AttachmentMode: z.string(),
  MountOptions: ptr(CSIMountOptions),
  PerAlloc: z.boolean(),
}));
export type VolumeRequest = z.infer<typeof VolumeRequest>;

/** A task's `volume_mount` (Canonicalize: ReadOnly false, PropagationMode "private", SELinuxLabel ""). */
export const VolumeMount = lazySchema(() => z.strictObject({
  Volume: ptr(z.string()),
  Destination: ptr(z.string()),
  ReadOnly: ptr(z.boolean()),
  PropagationMode: ptr(z.string()),
  SELinuxLabel: ptr(z.string()),
}));
export type VolumeMount = z.infer<typeof VolumeMount>;

/** Canonicalize: 10 files of 10 MB, not disabled. `Enabled` is Nomad's deprecated inverse of Disabled. */
export const LogConfig = lazySchema(() => z.strictObject({
  MaxFiles: ptr(int),
  MaxFileSizeMB: ptr(int),
  Enabled: ptr(z.boolean()),
  Disabled: ptr(z.boolean()),
}));
export type LogConfig = z.infer<typeof LogConfig>;

export const DispatchPayloadConfig = lazySchema(() => z.strictObject({
  File: z.string(),
}));
export type DispatchPayloadConfig = z.infer<typeof DispatchPayloadConfig>;

export const TaskLifecycle = lazySchema(() => z.strictObject({
  Hook: z.string(),
  Sidecar: z.boolean(),
}));
export type TaskLifecycle = z.infer<typeof TaskLifecycle>;

/** Canonicalize: GetterMode "any", GetterInsecure false, RelativeDest "local/" (or local/<file> in file mode). */
export const TaskArtifact = lazySchema(() => z.strictObject({
  GetterSource: ptr(z.string()),
  GetterOptions: stringMap,
  GetterHeaders: stringMap,
  GetterMode: ptr(z.string()),
  GetterInsecure: ptr(z.boolean()),
  RelativeDest: ptr(z.string()),
  Chown: z.boolean(),
}));
export type TaskArtifact = z.infer<typeof TaskArtifact>;

export const WaitConfig = lazySchema(() => z.strictObject({
  Min: ptr(nanos),
  Max: ptr(nanos),
}));
export type WaitConfig = z.infer<typeof WaitConfig>;

export const ChangeScript = lazySchema(() => z.strictObject({
  Command: ptr(z.string()),
  Args: list(z.string()),
  Timeout: ptr(nanos),
  FailOnError: ptr(z.boolean()),
  RunOnFirstRender: ptr(z.boolean()),
}));
export type ChangeScript = z.infer<typeof ChangeScript>;

/** A `template` block (Canonicalize: ChangeMode "restart", Splay 5s, Perms "0644", delimiters "{{" "}}"...). */
export const Template = lazySchema(() => z.strictObject({
  SourcePath: ptr(z.string()),
  DestPath: ptr(z.string()),
  EmbeddedTmpl: ptr(z.string()),
  ChangeMode: ptr(z.string()),
  ChangeScript: ptr(ChangeScript),
  ChangeSignal: ptr(z.string()),
  Once: ptr(z.boolean()),
  Splay: ptr(nanos),
  Perms: ptr(z.string()),
  Uid: ptr(int),
  Gid: ptr(int),
  LeftDelim: ptr(z.string()),
  RightDelim: ptr(z.string()),
  Envvars: ptr(z.boolean()),
  VaultGrace: ptr(nanos),
  Wait: ptr(WaitConfig),
  ErrMissingKey: ptr(z.boolean()),
}));
export type Template = z.infer<typeof Template>;

export const Vault = lazySchema(() => z.strictObject({
  Policies: list(z.string()),
  Role: z.string(),
  Namespace: ptr(z.string()),
  Cluster: z.string(),
  Env: ptr(z.boolean()),
  DisableFile: ptr(z.boolean()),
  ChangeMode: ptr(z.string()),
  ChangeSignal: ptr(z.string()),
  AllowTokenExpiration: ptr(z.boolean()),
}));
export type Vault = z.infer<typeof Vault>;

export const Secret = lazySchema(() => z.strictObject({
  Name: z.string(),
  Provider: z.string(),
  Path: z.string(),
  Config: anyMap,
  Env: stringMap,
}));
export type Secret = z.infer<typeof Secret>;

/** A task's `csi_plugin` block (Canonicalize: MountDir "/csi", StagePublishBaseDir "/local/csi", HealthTimeout 30s). */
export const TaskCSIPluginConfig = lazySchema(() => z.strictObject({
  ID: z.string(),
  Type: z.string(),
  MountDir: z.string(),
  StagePublishBaseDir: z.string(),
  HealthTimeout: nanos,
}));
export type TaskCSIPluginConfig = z.infer<typeof TaskCSIPluginConfig>;

export const WorkloadIdentity = lazySchema(() => z.strictObject({
  Name: z.string(),
  Audience: list(z.string()),
  ChangeMode: z.string(),
  ChangeSignal: z.string(),
  Env: z.boolean(),
  File: z.boolean(),
  Filepath: z.string(),
  ServiceName: z.string(),
  TTL: nanos,
  ExtraClaims: list(z.string()),
}));
export type WorkloadIdentity = z.infer<typeof WorkloadIdentity>;

export const Action = lazySchema(() => z.strictObject({
  Name: z.string(),
  Command: z.string(),
  Args: list(z.string()),
}));
export type Action = z.infer<typeof Action>;

export const TaskScheduleCron = lazySchema(() => z.strictObject({
  Start: z.string(),
  End: z.string(),
  Timezone: z.string(),
}));
export type TaskScheduleCron = z.infer<typeof TaskScheduleCron>;

/** A task's `schedule` block (Nomad Enterprise). */
export const TaskSchedule = lazySchema(() => z.strictObject({
  Cron: ptr(TaskScheduleCron),
}));
export type TaskSchedule = z.infer<typeof TaskSchedule>;
