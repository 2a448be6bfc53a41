// Deployments, as Nomad's `api` package has them (api/deployments.go):
// `GET /v1/deployments`, `/v1/job/:id/deployments` answer `Deployment[]`,
// `GET /v1/deployment/:id` and `/v1/job/:id/deployment` one `Deployment`
// (the latter null when the job has none); the writes under
// `/v1/deployment/{promote,fail,pause,allocation-health}/:id` take the
// requests below and answer a `DeploymentUpdateResponse`. Durations are
// integer nanoseconds, `CreateTime`/`ModifyTime` Unix nanoseconds,
// `RequireProgressBy` an RFC 3339 time (Go's zero time when unset).

import { z } from 'zod';
import { int, int64, list, map, nanos, time, uint } from './_go.js';
import { lazySchema } from './lazy-schema.js';

export const DEPLOYMENT_STATUSES = ['running', 'paused', 'failed', 'successful', 'cancelled', 'pending', 'blocked', 'unblocking'] as const;

/** One task group's progress within a deployment. */
export const DeploymentState = lazySchema(() => z.strictObject({
  /** The canaries placed so far, by allocation ID. */
  PlacedCanaries: list(z.string()),
  AutoRevert: z.boolean(),
  /** Sent by Nomad's server (structs.DeploymentState), though the api package leaves it out. */
  AutoPromote: z.boolean(),
  /** Nanoseconds an allocation has to turn healthy before the deployment fails; 0: none. */
  ProgressDeadline: nanos,
  /** When the group must have made progress by. */
  RequireProgressBy: time,
  /** The canaries are promoted (or the group has none to promote). */
  Promoted: z.boolean(),
  DesiredCanaries: int,
  DesiredTotal: int,
  PlacedAllocs: int,
  HealthyAllocs: int,
  UnhealthyAllocs: int,
}));
export type DeploymentState = z.infer<typeof DeploymentState>;

export const Deployment = lazySchema(() => z.strictObject({
  ID: z.string(),
  Namespace: z.string(),
  JobID: z.string(),
  JobVersion: uint,
  /** The job's ModifyIndex at the version deployed. */
  JobModifyIndex: uint,
  /** The job's JobModifyIndex (its last change of spec) at the version deployed. */
  JobSpecModifyIndex: uint,
  /** The job's CreateIndex: a job stopped, purged and run again has new deployments. */
  JobCreateIndex: uint,
  IsMultiregion: z.boolean(),
  /** Task group -> its progress; only groups that roll out with an update block. */
  TaskGroups: map(DeploymentState),
  Status: z.string(),
  StatusDescription: z.string(),
  /** Sent by Nomad's server (structs.Deployment), though the api package leaves it out: the priority of the evaluations it creates. */
  EvalPriority: int,
  CreateIndex: uint,
  ModifyIndex: uint,
  CreateTime: int64,
  ModifyTime: int64,
}));
export type Deployment = z.infer<typeof Deployment>;

/**
 * The answer to a deployment write: the evaluation it created, the indexes
 * it wrote at, and the job version an auto-revert went back to (null when
 * none). `Index` is Nomad's server's WriteMeta, as its HTTP API sends it.
 */
export const DeploymentUpdateResponse = lazySchema(() => z.strictObject({
  EvalID: z.string(),
  EvalCreateIndex: uint,
  DeploymentModifyIndex: uint,
  RevertedJobVersion: uint.nullable(),
  Index: uint,
}));
export type DeploymentUpdateResponse = z.infer<typeof DeploymentUpdateResponse>;

// Requests: Nomad's clients send the WriteRequest fields (Region, Namespace,
// SecretID) too, so these are not strict; what they do not name is ignored.

/** `POST /v1/deployment/promote/:id`: promote every group's canaries (`All`) or those of `Groups`. */
export const DeploymentPromoteRequest = lazySchema(() => z.object({
  DeploymentID: z.string(),
  All: z.boolean().optional(),
  Groups: z.array(z.string()).nullable().optional(),
}));
export type DeploymentPromoteRequest = z.infer<typeof DeploymentPromoteRequest>;

/** `POST /v1/deployment/pause/:id`: pause (`Pause` true) or resume it. */
export const DeploymentPauseRequest = lazySchema(() => z.object({
  DeploymentID: z.string(),
  Pause: z.boolean().optional(),
}));
export type DeploymentPauseRequest = z.infer<typeof DeploymentPauseRequest>;

/** `POST /v1/deployment/fail/:id` (the body is optional; Nomad's client sends it). */
export const DeploymentFailRequest = lazySchema(() => z.object({
  DeploymentID: z.string().optional(),
}));
export type DeploymentFailRequest = z.infer<typeof DeploymentFailRequest>;

/** `POST /v1/deployment/allocation-health/:id`: set allocations' health by hand (an unhealthy one fails the deployment). */
export const DeploymentAllocHealthRequest = lazySchema(() => z.object({
  DeploymentID: z.string(),
  HealthyAllocationIDs: z.array(z.string()).nullable().optional(),
  UnhealthyAllocationIDs: z.array(z.string()).nullable().optional(),
}));
export type DeploymentAllocHealthRequest = z.infer<typeof DeploymentAllocHealthRequest>;
