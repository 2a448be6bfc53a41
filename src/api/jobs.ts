// Jobs as Nomad's API writes them (api/jobs.go): the Job itself, its list
// stub and summary, and the bodies of the job routes (`/v1/jobs`,
// `/v1/job/:id` and below, `/v1/jobs/parse`, `/v1/validate/job`).
//
// Answers are checked against these with every field present as Go's
// encoder writes it. Request bodies are NOT: Nomad's server (Go's decoder)
// takes a body with fields missing (zero) or unknown (ignored), and an
// older client (Nomad 1.1's CLI) sends an older Job. Routes read a request's
// Job with `nomadJobToSpec` (src/structs), which takes missing fields as
// unset and refuses what Berth does not support by name at its Nomad path;
// the request schemas here type what Nomad's Go client writes (Berth's CLI
// sends them), fields added after Nomad 1.1 optional.
//
// The response fields `Index`, `LastContact`, `KnownLeader` and `NextToken`
// are the server's QueryMeta (WriteMeta: `Index`) that Nomad's server
// writes into the body beside the answer (its structs embed them).

import { z } from 'zod';
import { Affinity, Constraint, Spread } from './constraints.js';
import { AllocationMetric } from './alloc-metric.js';
import { Evaluation } from './evaluations.js';
import { JobDiff, PlanAnnotations } from './job-plan.js';
import { MigrateStrategy, ReschedulePolicy, UpdateStrategy } from './job-task-blocks.js';
import { TaskGroup } from './job-tasks.js';
import { bytes, int, int64, list, map, nanos, ptr, stringMap, time, uint } from './_go.js';
import { lazySchema } from './lazy-schema.js';

export const MultiregionStrategy = lazySchema(() => z.strictObject({
  MaxParallel: ptr(int),
  OnFailure: ptr(z.string()),
}));
export type MultiregionStrategy = z.infer<typeof MultiregionStrategy>;

export const MultiregionRegion = lazySchema(() => z.strictObject({
  Name: z.string(),
  Count: ptr(int),
  Datacenters: list(z.string()),
  NodePool: z.string(),
  Meta: stringMap,
}));
export type MultiregionRegion = z.infer<typeof MultiregionRegion>;

export const Multiregion = lazySchema(() => z.strictObject({
  Strategy: ptr(MultiregionStrategy),
  Regions: list(MultiregionRegion),
}));
export type Multiregion = z.infer<typeof Multiregion>;

/** A `periodic` block: `Spec` one cron expression, `Specs` several (Canonicalize: Enabled, SpecType "cron", TimeZone "UTC"). */
export const PeriodicConfig = lazySchema(() => z.strictObject({
  Enabled: ptr(z.boolean()),
  Spec: ptr(z.string()),
  Specs: list(z.string()),
  SpecType: ptr(z.string()),
  ProhibitOverlap: ptr(z.boolean()),
  TimeZone: ptr(z.string()),
}));
export type PeriodicConfig = z.infer<typeof PeriodicConfig>;

/** A `parameterized` block; Payload "optional", "required" or "forbidden". */
export const ParameterizedJobConfig = lazySchema(() => z.strictObject({
  Payload: z.string(),
  MetaRequired: list(z.string()),
  MetaOptional: list(z.string()),
}));
export type ParameterizedJobConfig = z.infer<typeof ParameterizedJobConfig>;

/** The job file a job was registered from (Format "hcl2" or "json"). */
export const JobSubmission = lazySchema(() => z.strictObject({
  Source: z.string(),
  Format: z.string(),
  VariableFlags: stringMap,
  Variables: z.string(),
}));
export type JobSubmission = z.infer<typeof JobSubmission>;

export const JobUILink = lazySchema(() => z.strictObject({
  Label: z.string(),
  URL: z.string(),
}));
export type JobUILink = z.infer<typeof JobUILink>;

export const JobUIConfig = lazySchema(() => z.strictObject({
  Description: z.string(),
  Links: list(JobUILink),
}));
export type JobUIConfig = z.infer<typeof JobUIConfig>;

export const JobVersionTag = lazySchema(() => z.strictObject({
  Name: z.string(),
  Description: z.string(),
  TaggedTime: int64,
}));
export type JobVersionTag = z.infer<typeof JobVersionTag>;

/**
 * A job. The first group of fields comes from the job file; the second is
 * the server's (`Status`, `Version`, the indexes, `SubmitTime` in
 * nanoseconds since the epoch...). Nomad's Canonicalize fills Name (the ID),
 * Namespace, Priority (50), Region ("global"), Type ("service"), AllAtOnce,
 * Stop and the server's fields' zero values.
 */
export const Job = lazySchema(() => z.strictObject({
  Region: ptr(z.string()),
  Namespace: ptr(z.string()),
  ID: ptr(z.string()),
  Name: ptr(z.string()),
  Type: ptr(z.string()),
  Priority: ptr(int),
  AllAtOnce: ptr(z.boolean()),
  Datacenters: list(z.string()),
  NodePool: ptr(z.string()),
  Constraints: list(Constraint),
  Affinities: list(Affinity),
  TaskGroups: list(TaskGroup),
  Update: ptr(UpdateStrategy),
  Multiregion: ptr(Multiregion),
  Spreads: list(Spread),
  Periodic: ptr(PeriodicConfig),
  ParameterizedJob: ptr(ParameterizedJobConfig),
  Reschedule: ptr(ReschedulePolicy),
  Migrate: ptr(MigrateStrategy),
  Meta: stringMap,
  UI: ptr(JobUIConfig),

  Stop: ptr(z.boolean()),
  ParentID: ptr(z.string()),
  Dispatched: z.boolean(),
  DispatchIdempotencyToken: ptr(z.string()),
  Payload: bytes,
  ConsulNamespace: ptr(z.string()),
  VaultNamespace: ptr(z.string()),
  NomadTokenID: ptr(z.string()),
  Status: ptr(z.string()),
  StatusDescription: ptr(z.string()),
  Stable: ptr(z.boolean()),
  Version: ptr(uint),
  SubmitTime: ptr(int64),
  CreateIndex: ptr(uint),
  ModifyIndex: ptr(uint),
  JobModifyIndex: ptr(uint),
  VersionTag: ptr(JobVersionTag),
}));
export type Job = z.infer<typeof Job>;

/** One group's allocations by state. */
export const TaskGroupSummary = lazySchema(() => z.strictObject({
  Queued: int,
  Complete: int,
  Failed: int,
  Running: int,
  Starting: int,
  Lost: int,
  Unknown: int,
}));
export type TaskGroupSummary = z.infer<typeof TaskGroupSummary>;

/** A periodic or parameterized job's children by status. */
export const JobChildrenSummary = lazySchema(() => z.strictObject({
  Pending: int,
  Running: int,
  Dead: int,
}));
export type JobChildrenSummary = z.infer<typeof JobChildrenSummary>;

/** GET /v1/job/:id/summary, and each JobListStub's JobSummary. */
export const JobSummary = lazySchema(() => z.strictObject({
  JobID: z.string(),
  Namespace: z.string(),
  Summary: map(TaskGroupSummary),
  Children: ptr(JobChildrenSummary),
  CreateIndex: uint,
  ModifyIndex: uint,
}));
export type JobSummary = z.infer<typeof JobSummary>;

/** One row of GET /v1/jobs. `Meta` only with `?meta=true`. */
export const JobListStub = lazySchema(() => z.strictObject({
  ID: z.string(),
  ParentID: z.string(),
  Name: z.string(),
  Namespace: z.string().optional(),
  Datacenters: list(z.string()),
  Type: z.string(),
  Priority: int,
  Periodic: z.boolean(),
  ParameterizedJob: z.boolean(),
  Stop: z.boolean(),
  Status: z.string(),
  StatusDescription: z.string(),
  JobSummary: ptr(JobSummary),
  CreateIndex: uint,
  ModifyIndex: uint,
  JobModifyIndex: uint,
  SubmitTime: int64,
  Meta: z.record(z.string(), z.string()).optional(),
}));
export type JobListStub = z.infer<typeof JobListStub>;

/** The QueryMeta Nomad's server writes into a read's (or a register's) answer. */
const queryMeta = () => ({
  Index: uint,
  LastContact: nanos,
  KnownLeader: z.boolean(),
  /** Since Nomad 1.2 (paging); Berth writes it, "" when there is no next page. */
  NextToken: z.string(),
});
/** The WriteMeta Nomad's server writes into a write's answer. */
const writeMeta = { Index: uint };
/** A write request's WriteRequest: Nomad's Go client writes it; the server also takes the query's. */
const writeRequest = () => ({
  Region: z.string().optional(),
  Namespace: z.string().optional(),
  SecretID: z.string().optional(),
});

/** PUT /v1/jobs/parse. */
export const JobsParseRequest = lazySchema(() => z.strictObject({
  JobHCL: z.string(),
  /** HCL2 variables, as the text of a variables file (Nomad 1.5+). */
  Variables: z.string().optional(),
  Canonicalize: z.boolean(),
}));
export type JobsParseRequest = z.infer<typeof JobsParseRequest>;

/** PUT /v1/jobs and POST /v1/job/:id. */
export const JobRegisterRequest = lazySchema(() => z.strictObject({
  Submission: ptr(JobSubmission).optional(),
  Job,
  EnforceIndex: z.boolean().optional(),
  JobModifyIndex: uint.optional(),
  PolicyOverride: z.boolean().optional(),
  PreserveCounts: z.boolean().optional(),
  PreserveResources: z.boolean().optional(),
  EvalPriority: int.optional(),
  ...writeRequest(),
}));
export type JobRegisterRequest = z.infer<typeof JobRegisterRequest>;

export const JobRegisterResponse = lazySchema(() => z.strictObject({
  EvalID: z.string(),
  EvalCreateIndex: uint,
  JobModifyIndex: uint,
  Warnings: z.string(),
  ...queryMeta(),
}));
export type JobRegisterResponse = z.infer<typeof JobRegisterResponse>;

/** DELETE /v1/job/:id. */
export const JobDeregisterResponse = lazySchema(() => z.strictObject({
  EvalID: z.string(),
  EvalCreateIndex: uint,
  JobModifyIndex: uint,
  VolumeEvalID: z.string(),
  VolumeEvalIndex: uint,
  ...queryMeta(),
}));
export type JobDeregisterResponse = z.infer<typeof JobDeregisterResponse>;

/** PUT /v1/validate/job. */
export const JobValidateRequest = lazySchema(() => z.strictObject({ Job, ...writeRequest() }));
export type JobValidateRequest = z.infer<typeof JobValidateRequest>;

export const JobValidateResponse = lazySchema(() => z.strictObject({
  DriverConfigValidated: z.boolean(),
  ValidationErrors: list(z.string()),
  Error: z.string(),
  Warnings: z.string(),
}));
export type JobValidateResponse = z.infer<typeof JobValidateResponse>;

/** PUT /v1/job/:id/plan. */
export const JobPlanRequest = lazySchema(() => z.strictObject({
  Job,
  Diff: z.boolean(),
  PolicyOverride: z.boolean(),
  ...writeRequest(),
}));
export type JobPlanRequest = z.infer<typeof JobPlanRequest>;

/** Berth's: one allocation a plan would place (its group, index and name, and the node). */
export const BerthPlannedPlacement = lazySchema(() => z.strictObject({
  Group: z.string(),
  Index: int,
  Name: z.string(),
  NodeID: z.string(),
  NodeName: z.string(),
}));
export type BerthPlannedPlacement = z.infer<typeof BerthPlannedPlacement>;

/** Berth's: one allocation a plan would stop. */
export const BerthPlannedStop = lazySchema(() => z.strictObject({
  AllocID: z.string(),
  Group: z.string(),
  Name: z.string(),
  Description: z.string(),
}));
export type BerthPlannedStop = z.infer<typeof BerthPlannedStop>;

export const JobPlanResponse = lazySchema(() => z.strictObject({
  Annotations: ptr(PlanAnnotations),
  FailedTGAllocs: map(AllocationMetric),
  JobModifyIndex: uint,
  CreatedEvals: list(Evaluation),
  Diff: ptr(JobDiff),
  /** The next launch of a periodic job; Go's zero time (`0001-01-01T00:00:00Z`) otherwise. */
  NextPeriodicLaunch: time,
  Warnings: z.string(),
  ...writeMeta,
  /** Berth's: where the dry run would place each new allocation (Nomad's plan answers only counts, in Annotations). */
  BerthPlacements: z.array(BerthPlannedPlacement).optional(),
  /** Berth's: the allocations the dry run would stop, and why. */
  BerthStops: z.array(BerthPlannedStop).optional(),
}));
export type JobPlanResponse = z.infer<typeof JobPlanResponse>;

/** PUT /v1/job/:id/dispatch (Payload base64). */
export const JobDispatchRequest = lazySchema(() => z.strictObject({
  JobID: z.string(),
  Payload: bytes,
  Meta: stringMap,
  IdPrefixTemplate: z.string().optional(),
  Priority: int.optional(),
}));
export type JobDispatchRequest = z.infer<typeof JobDispatchRequest>;

export const JobDispatchResponse = lazySchema(() => z.strictObject({
  DispatchedJobID: z.string(),
  EvalID: z.string(),
  EvalCreateIndex: uint,
  JobCreateIndex: uint,
  ...writeMeta,
}));
export type JobDispatchResponse = z.infer<typeof JobDispatchResponse>;

/** PUT /v1/job/:id/periodic/force. */
export const PeriodicForceResponse = lazySchema(() => z.strictObject({
  EvalID: z.string(),
  EvalCreateIndex: uint,
  ...writeMeta,
}));
export type PeriodicForceResponse = z.infer<typeof PeriodicForceResponse>;

/** GET /v1/job/:id/versions (Diffs with `?diffs=true`, null otherwise). */
export const JobVersionsResponse = lazySchema(() => z.strictObject({
  Versions: list(Job),
  Diffs: list(JobDiff),
  ...queryMeta(),
}));
export type JobVersionsResponse = z.infer<typeof JobVersionsResponse>;

/** PUT /v1/job/:id/revert. Answered with a JobRegisterResponse. */
export const JobRevertRequest = lazySchema(() => z.strictObject({
  JobID: z.string(),
  JobVersion: uint,
  EnforcePriorVersion: ptr(uint),
  ...writeRequest(),
}));
export type JobRevertRequest = z.infer<typeof JobRevertRequest>;

/** PUT /v1/job/:id/stable. */
export const JobStabilityRequest = lazySchema(() => z.strictObject({
  JobID: z.string(),
  JobVersion: uint,
  Stable: z.boolean(),
  ...writeRequest(),
}));
export type JobStabilityRequest = z.infer<typeof JobStabilityRequest>;

/** Nomad's server writes only its WriteMeta (the api package's JobModifyIndex stays 0). */
export const JobStabilityResponse = lazySchema(() => z.strictObject({ ...writeMeta }));
export type JobStabilityResponse = z.infer<typeof JobStabilityResponse>;

/** PUT /v1/job/:id/evaluate. Answered with a JobRegisterResponse. */
export const JobEvaluateRequest = lazySchema(() => z.strictObject({
  JobID: z.string(),
  EvalOptions: z.strictObject({ ForceReschedule: z.boolean() }),
  ...writeRequest(),
}));
export type JobEvaluateRequest = z.infer<typeof JobEvaluateRequest>;
