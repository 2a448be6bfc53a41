// Allocations as Nomad's `api/allocations.go` and `api/tasks.go` encode
// them: the full Allocation (GET /v1/allocation/:id, /v1/node/:id/allocations),
// the AllocationListStub of every list (/v1/allocations,
// /v1/job/:id/allocations, /v1/evaluation/:id/allocations,
// /v1/deployment/allocations/:id), task states and events, and the bodies of
// stop, restart and signal. Every field Go's encoder writes is present; Go
// pointers, nil slices and nil maps are `null`; times are RFC 3339 strings
// (time.Time, the zero time "0001-01-01T00:00:00Z"), nanoseconds since the
// epoch (int64 CreateTime, ModifyTime, TaskEvent.Time) or nanoseconds
// (time.Duration).

import { z } from 'zod';
import { int, int64, list, map, nanos, ptr, stringMap, time as GoTime, uint } from './_go.js';
import { AllocationMetric } from './alloc-metric.js';
import { Job } from './jobs.js';
import { DNSConfig, NetworkResource, Resources } from './resources.js';
import { lazySchema } from './lazy-schema.js';

/** api.DesiredTransition: what the server asks of a live allocation beyond its desired status. */
export const DesiredTransition = lazySchema(() => z.strictObject({
  Migrate: ptr(z.boolean()),
  Reschedule: ptr(z.boolean()),
  ForceReschedule: ptr(z.boolean()),
  NoShutdownDelay: ptr(z.boolean()),
  MigrateDisablePlacement: ptr(z.boolean()),
}));
export type DesiredTransition = z.infer<typeof DesiredTransition>;

/** api.AllocDeploymentStatus: the allocation's health in its deployment (Healthy null while undecided). */
export const AllocDeploymentStatus = lazySchema(() => z.strictObject({
  Healthy: ptr(z.boolean()),
  Timestamp: GoTime,
  Canary: z.boolean(),
  ModifyIndex: uint,
}));
export type AllocDeploymentStatus = z.infer<typeof AllocDeploymentStatus>;

/** api.RescheduleEvent: one earlier allocation this one replaces. */
export const RescheduleEvent = lazySchema(() => z.strictObject({
  /** Nanoseconds since the epoch. */
  RescheduleTime: int64,
  PrevAllocID: z.string(),
  PrevNodeID: z.string(),
}));
export type RescheduleEvent = z.infer<typeof RescheduleEvent>;

/** api.RescheduleTracker. */
export const RescheduleTracker = lazySchema(() => z.strictObject({
  Events: list(RescheduleEvent),
  LastReschedule: z.string(),
}));
export type RescheduleTracker = z.infer<typeof RescheduleTracker>;

/** api.AllocNetworkStatus: the allocation's own address (bridge, cni). */
export const AllocNetworkStatus = lazySchema(() => z.strictObject({
  InterfaceName: z.string(),
  Address: z.string(),
  AddressIPv6: z.string(),
  DNS: ptr(DNSConfig),
}));
export type AllocNetworkStatus = z.infer<typeof AllocNetworkStatus>;

/** api.PortMapping: a port the scheduler gave the allocation (Value on HostIP, To inside its network). */
export const PortMapping = lazySchema(() => z.strictObject({
  Label: z.string(),
  Value: int,
  To: int,
  HostIP: z.string(),
}));
export type PortMapping = z.infer<typeof PortMapping>;

export const AllocatedCpuResources = lazySchema(() => z.strictObject({ CpuShares: int }));
export const AllocatedMemoryResources = lazySchema(() => z.strictObject({ MemoryMB: int, MemoryMaxMB: int }));
export const AllocatedDeviceResource = lazySchema(() => z.strictObject({
  Vendor: z.string(),
  Type: z.string(),
  Name: z.string(),
  DeviceIDs: list(z.string()),
}));

/** api.AllocatedTaskResources. */
export const AllocatedTaskResources = lazySchema(() => z.strictObject({
  Cpu: AllocatedCpuResources,
  Memory: AllocatedMemoryResources,
  Networks: list(NetworkResource),
  Devices: list(AllocatedDeviceResource),
}));
export type AllocatedTaskResources = z.infer<typeof AllocatedTaskResources>;

/** api.AllocatedSharedResources: the group's disk, network and ports. */
export const AllocatedSharedResources = lazySchema(() => z.strictObject({
  DiskMB: int,
  Networks: list(NetworkResource),
  Ports: list(PortMapping),
}));
export type AllocatedSharedResources = z.infer<typeof AllocatedSharedResources>;

/** api.AllocatedResources: what the allocation holds of its node. */
export const AllocatedResources = lazySchema(() => z.strictObject({
  Tasks: map(AllocatedTaskResources),
  Shared: AllocatedSharedResources,
}));
export type AllocatedResources = z.infer<typeof AllocatedResources>;

/**
 * api.TaskEvent: one thing that happened to a task. The fields after
 * `Message` are deprecated in Nomad (Details and DisplayMessage carry the
 * same) but still encoded; Berth fills ExitCode, Signal and the reasons
 * where its event says them, and leaves the rest zero.
 */
export const TaskEvent = lazySchema(() => z.strictObject({
  Type: z.string(),
  /** Nanoseconds since the epoch. */
  Time: int64,
  DisplayMessage: z.string(),
  Details: stringMap,
  Message: z.string(),
  FailsTask: z.boolean(),
  RestartReason: z.string(),
  SetupError: z.string(),
  DriverError: z.string(),
  DriverMessage: z.string(),
  ExitCode: int,
  Signal: int,
  KillReason: z.string(),
  /** Nanoseconds. */
  KillTimeout: nanos,
  KillError: z.string(),
  StartDelay: int,
  DownloadError: z.string(),
  ValidationError: z.string(),
  DiskLimit: int,
  DiskSize: int,
  FailedSibling: z.string(),
  VaultError: z.string(),
  TaskSignalReason: z.string(),
  TaskSignal: z.string(),
  GenericSource: z.string(),
}));
export type TaskEvent = z.infer<typeof TaskEvent>;

/** api.TaskState: `State` is pending, running or dead. */
export const TaskState = lazySchema(() => z.strictObject({
  State: z.string(),
  Failed: z.boolean(),
  Restarts: uint,
  LastRestart: GoTime,
  StartedAt: GoTime,
  FinishedAt: GoTime,
  Events: list(TaskEvent),
}));
export type TaskState = z.infer<typeof TaskState>;

/**
 * Berth's own (not Nomad's): a CSI volume the allocation uses, resolved to
 * its ID (a per_alloc volume's own), with its plugin and whether it only
 * reads. Nomad's allocation names its volumes only through its job.
 */
export const AllocCSIVolume = lazySchema(() => z.strictObject({
  VolumeID: z.string(),
  PluginID: z.string(),
  ReadOnly: z.boolean(),
}));
export type AllocCSIVolume = z.infer<typeof AllocCSIVolume>;

/**
 * api.AllocationListStub: an allocation in a list. `DesiredTransition` is
 * the server's (nomad/structs AllocListStub encodes it; api's stub decodes
 * without it). `AllocatedResources` only with `?resources=true`;
 * `TaskStates` null with `?task_states=false`.
 */
export const AllocationListStub = lazySchema(() => z.strictObject({
  ID: z.string(),
  EvalID: z.string(),
  Name: z.string(),
  Namespace: z.string(),
  NodeID: z.string(),
  NodeName: z.string(),
  JobID: z.string(),
  JobType: z.string(),
  JobVersion: uint,
  TaskGroup: z.string(),
  AllocatedResources: AllocatedResources.optional(),
  DesiredStatus: z.string(),
  DesiredDescription: z.string(),
  ClientStatus: z.string(),
  ClientDescription: z.string(),
  DesiredTransition: DesiredTransition,
  TaskStates: map(TaskState),
  DeploymentStatus: ptr(AllocDeploymentStatus),
  FollowupEvalID: z.string(),
  NextAllocation: z.string(),
  RescheduleTracker: ptr(RescheduleTracker),
  PreemptedAllocations: list(z.string()),
  PreemptedByAllocation: z.string(),
  CreateIndex: uint,
  ModifyIndex: uint,
  CreateTime: int64,
  ModifyTime: int64,
}));
export type AllocationListStub = z.infer<typeof AllocationListStub>;

/**
 * api.Allocation: one allocation in full, with the job at the version it
 * runs. `CSIVolumes` is Berth's (see AllocCSIVolume).
 */
export const Allocation = lazySchema(() => z.strictObject({
  ID: z.string(),
  Namespace: z.string(),
  EvalID: z.string(),
  Name: z.string(),
  NodeID: z.string(),
  NodeName: z.string(),
  JobID: z.string(),
  /** The job at the version the allocation runs (null once that version is no longer kept). */
  Job: ptr(Job),
  TaskGroup: z.string(),
  /** Deprecated in Nomad: the group's resources, summed. */
  Resources: ptr(Resources),
  /** Deprecated in Nomad: each task's resources. */
  TaskResources: map(Resources),
  AllocatedResources: ptr(AllocatedResources),
  Services: stringMap,
  Metrics: ptr(AllocationMetric),
  DesiredStatus: z.string(),
  DesiredDescription: z.string(),
  DesiredTransition: DesiredTransition,
  ClientStatus: z.string(),
  ClientDescription: z.string(),
  TaskStates: map(TaskState),
  DeploymentID: z.string(),
  DeploymentStatus: ptr(AllocDeploymentStatus),
  FollowupEvalID: z.string(),
  PreviousAllocation: z.string(),
  NextAllocation: z.string(),
  RescheduleTracker: ptr(RescheduleTracker),
  NetworkStatus: ptr(AllocNetworkStatus),
  PreemptedAllocations: list(z.string()),
  PreemptedByAllocation: z.string(),
  CreateIndex: uint,
  ModifyIndex: uint,
  AllocModifyIndex: uint,
  CreateTime: int64,
  ModifyTime: int64,
  /** Berth's: the CSI volumes the allocation uses (null when none). */
  CSIVolumes: list(AllocCSIVolume),
}));
export type Allocation = z.infer<typeof Allocation>;

/** api.AllocStopResponse: the evaluation that places the replacement, and the write's index. */
export const AllocStopResponse = lazySchema(() => z.strictObject({
  EvalID: z.string(),
  Index: uint,
}));
export type AllocStopResponse = z.infer<typeof AllocStopResponse>;

/**
 * structs.GenericResponse: the body of a restart or a signal (the write
 * index; 0 for these client calls, which write nothing on the servers).
 */
export const GenericResponse = lazySchema(() => z.strictObject({ Index: uint }));
export type GenericResponse = z.infer<typeof GenericResponse>;

/** api.AllocationRestartRequest: the body of POST /v1/client/allocation/:id/restart. */
export const AllocationRestartRequest = lazySchema(() => z.object({
  TaskName: z.string().optional(),
  AllTasks: z.boolean().optional(),
}));
export type AllocationRestartRequest = z.infer<typeof AllocationRestartRequest>;

/** api.AllocSignalRequest: the body of POST /v1/client/allocation/:id/signal. */
export const AllocSignalRequest = lazySchema(() => z.object({
  Task: z.string().optional(),
  Signal: z.string().optional(),
}));
export type AllocSignalRequest = z.infer<typeof AllocSignalRequest>;

/** api.AllocCheckStatus: the latest result of one of the allocation's service checks. */
export const AllocCheckStatus = lazySchema(() => z.strictObject({
  ID: z.string(),
  Check: z.string(),
  Group: z.string(),
  Mode: z.string(),
  Output: z.string(),
  Service: z.string(),
  Task: z.string(),
  Status: z.string(),
  StatusCode: int,
  /** Seconds since the epoch. */
  Timestamp: int,
}));
export type AllocCheckStatus = z.infer<typeof AllocCheckStatus>;

/** api.AllocCheckStatuses: by check ID (GET /v1/allocation/:id/checks). */
export const AllocCheckStatuses = lazySchema(() => z.record(z.string(), AllocCheckStatus));
export type AllocCheckStatuses = z.infer<typeof AllocCheckStatuses>;
