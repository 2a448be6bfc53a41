// Deployments, as Nomad's `api` package has them (api/deployments.go):
// `GET /v1/deployments`, `/v1/job/:id/deployments` answer `Deployment[]`,
// `GET /v1/deployment/:id` and `/v1/job/:id/deployment` one `Deployment`
// (the latter null when the job has none); the writes under
// `/v1/deployment/{promote,fail,pause,allocation-health}/:id` take the
// requests below and answer a `DeploymentUpdateResponse`. Durations are
// integer nanoseconds, `CreateTime`/`ModifyTime` Unix nanoseconds,
// `RequireProgressBy` an RFC 3339 time (Go's zero time when unset).

import { z } from 'zod';

export const DEPLOYMENT_STATUSES = ['running', 'paused', 'failed', 'successful', 'cancelled', 'pending', 'blocked', 'unblocking'] as const;

/** One task group's progress within a deployment. */
export const DeploymentState = z.strictObject({
  /** The canaries placed so far, by allocation ID. */
  PlacedCanaries: z.array(z.string()).nullable(),
  AutoRevert: z.boolean(),
  /** Sent by Nomad's server (structs.DeploymentState), though the api package leaves it out. */
  AutoPromote: z.boolean(),
  /** Nanoseconds an allocation has to turn healthy before the deployment fails; 0: none. */
  ProgressDeadline: z.number().int(),
  /** When the group must have made progress by. */
  RequireProgressBy: z.string(),
  /** The canaries are promoted (or the group has none to promote). */
  Promoted: z.boolean(),
  DesiredCanaries: z.number().int(),
  DesiredTotal: z.number().int(),
  PlacedAllocs: z.number().int(),
  HealthyAllocs: z.number().int(),
  UnhealthyAllocs: z.number().int(),
});
export type DeploymentState = z.infer<typeof DeploymentState>;

export const Deployment = z.strictObject({
  ID: z.string(),
  Namespace: z.string(),
  JobID: z.string(),
  JobVersion: z.number().int(),
  /** The job's ModifyIndex at the version deployed. */
  JobModifyIndex: z.number().int(),
  /** The job's JobModifyIndex (its last change of spec) at the version deployed. */
  JobSpecModifyIndex: z.number().int(),
  /** The job's CreateIndex: a job stopped, purged and run again has new deployments. */
  JobCreateIndex: z.number().int(),
  IsMultiregion: z.boolean(),
  /** Task group -> its progress; only groups that roll out with an update block. */
  TaskGroups: z.record(z.string(), DeploymentState).nullable(),
  Status: z.string(),
  StatusDescription: z.string(),
  /** Sent by Nomad's server (structs.Deployment), though the api package leaves it out: the priority of the evaluations it creates. */
  EvalPriority: z.number().int(),
  CreateIndex: z.number().int(),
  ModifyIndex: z.number().int(),
  CreateTime: z.number().int(),
  ModifyTime: z.number().int(),
});
export type Deployment = z.infer<typeof Deployment>;

/**
 * The answer to a deployment write: the evaluation it created, the indexes
 * it wrote at, and the job version an auto-revert went back to (null when
 * none). `Index` is Nomad's server's WriteMeta, as its HTTP API sends it.
 */
export const DeploymentUpdateResponse = z.strictObject({
  EvalID: z.string(),
  EvalCreateIndex: z.number().int(),
  DeploymentModifyIndex: z.number().int(),
  RevertedJobVersion: z.number().int().nullable(),
  Index: z.number().int(),
});
export type DeploymentUpdateResponse = z.infer<typeof DeploymentUpdateResponse>;

// Requests: Nomad's clients send the WriteRequest fields (Region, Namespace,
// SecretID) too, so these are not strict; what they do not name is ignored.

/** `POST /v1/deployment/promote/:id`: promote every group's canaries (`All`) or those of `Groups`. */
export const DeploymentPromoteRequest = z.object({
  DeploymentID: z.string(),
  All: z.boolean().optional(),
  Groups: z.array(z.string()).nullable().optional(),
});
export type DeploymentPromoteRequest = z.infer<typeof DeploymentPromoteRequest>;

/** `POST /v1/deployment/pause/:id`: pause (`Pause` true) or resume it. */
export const DeploymentPauseRequest = z.object({
  DeploymentID: z.string(),
  Pause: z.boolean().optional(),
});
export type DeploymentPauseRequest = z.infer<typeof DeploymentPauseRequest>;

/** `POST /v1/deployment/fail/:id` (the body is optional; Nomad's client sends it). */
export const DeploymentFailRequest = z.object({
  DeploymentID: z.string().optional(),
});
export type DeploymentFailRequest = z.infer<typeof DeploymentFailRequest>;

/** `POST /v1/deployment/allocation-health/:id`: set allocations' health by hand (an unhealthy one fails the deployment). */
export const DeploymentAllocHealthRequest = z.object({
  DeploymentID: z.string(),
  HealthyAllocationIDs: z.array(z.string()).nullable().optional(),
  UnhealthyAllocationIDs: z.array(z.string()).nullable().optional(),
});
export type DeploymentAllocHealthRequest = z.infer<typeof DeploymentAllocHealthRequest>;
