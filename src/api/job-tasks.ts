// A job's task groups and tasks as Nomad's API writes them (api/tasks.go).
// The `Berth...` fields are Berth's own, left out when unset.

import { z } from 'zod';
import { Affinity, Constraint, Spread } from './constraints.js';
import {
  Action,
  DisconnectStrategy,
  DispatchPayloadConfig,
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
  Template,
  UpdateStrategy,
  Vault,
  VolumeMount,
  VolumeRequest,
  WorkloadIdentity,
} from './job-task-blocks.js';
import { Consul, Service } from './job-services.js';
import { NetworkResource, Resources } from './resources.js';
import { ScalingPolicy } from './scaling.js';
import { anyMap, list, map, nanos, ptr, stringMap } from './_go.js';
import { lazySchema } from './lazy-schema.js';

/**
 * A task. Nomad's Canonicalize fills Resources, KillTimeout (5s), LogConfig,
 * and RestartPolicy (the group's, merged under the task's own).
 */
export const Task = lazySchema(() => z.strictObject({
  Name: z.string(),
  Driver: z.string(),
  User: z.string(),
  Lifecycle: ptr(TaskLifecycle),
  Config: anyMap,
  Constraints: list(Constraint),
  Affinities: list(Affinity),
  Env: stringMap,
  Services: list(Service),
  Resources: ptr(Resources),
  RestartPolicy: ptr(RestartPolicy),
  Meta: stringMap,
  KillTimeout: ptr(nanos),
  LogConfig: ptr(LogConfig),
  Artifacts: list(TaskArtifact),
  Vault: ptr(Vault),
  Consul: ptr(Consul),
  Templates: list(Template),
  DispatchPayload: ptr(DispatchPayloadConfig),
  VolumeMounts: list(VolumeMount),
  /** `json:",omitempty"` in Nomad: left out unless the task is a CSI plugin. */
  CSIPluginConfig: TaskCSIPluginConfig.optional(),
  Leader: z.boolean(),
  ShutdownDelay: nanos,
  KillSignal: z.string(),
  Kind: z.string(),
  ScalingPolicies: list(ScalingPolicy),
  Secrets: list(Secret),
  Identity: ptr(WorkloadIdentity),
  Identities: list(WorkloadIdentity),
  Actions: list(Action),
  Schedule: ptr(TaskSchedule),
  /** Berth's: a run of the task is killed once it has run this long, and fails (a job file's task `max_run_duration`), nanoseconds. */
  BerthMaxRunDuration: nanos.optional(),
}));
export type Task = z.infer<typeof Task>;

/**
 * A task group. Nomad's Canonicalize fills Count (1), EphemeralDisk,
 * Update (the job's merged under the group's), ReschedulePolicy and
 * RestartPolicy (the job type's defaults), and Migrate (service jobs).
 */
export const TaskGroup = lazySchema(() => z.strictObject({
  Name: ptr(z.string()),
  Count: ptr(z.number().int()),
  Constraints: list(Constraint),
  Affinities: list(Affinity),
  Tasks: list(Task),
  Spreads: list(Spread),
  Volumes: map(VolumeRequest),
  RestartPolicy: ptr(RestartPolicy),
  Disconnect: ptr(DisconnectStrategy),
  ReschedulePolicy: ptr(ReschedulePolicy),
  EphemeralDisk: ptr(EphemeralDisk),
  Update: ptr(UpdateStrategy),
  Migrate: ptr(MigrateStrategy),
  Networks: list(NetworkResource),
  Meta: stringMap,
  Services: list(Service),
  ShutdownDelay: ptr(nanos),
  MaxRunDuration: ptr(nanos),
  StopAfterClientDisconnect: ptr(nanos),
  MaxClientDisconnect: ptr(nanos),
  Scaling: ptr(ScalingPolicy),
  Consul: ptr(Consul),
  PreventRescheduleOnLost: ptr(z.boolean()),
}));
export type TaskGroup = z.infer<typeof TaskGroup>;
