// Evaluations, as Nomad's `api` package has them (api/evaluations.go):
// `GET /v1/evaluations` and `/v1/job/:id/evaluations` answer `Evaluation[]`
// (not stubs: Nomad's list sends whole evaluations), `GET /v1/evaluation/:id`
// one `Evaluation` (`RelatedEvals` filled with `?related=true`). Durations are integer
// nanoseconds, `CreateTime`/`ModifyTime` Unix nanoseconds, `WaitUntil` an
// RFC 3339 time ("0001-01-01T00:00:00Z", Go's zero time, when unset).

import { z } from 'zod';
import { AllocationMetric } from './alloc-metric.js';

export const EVAL_STATUSES = ['blocked', 'pending', 'complete', 'failed', 'canceled'] as const;

/** Go's zero time.Time as encoding/json writes it: "no time". */
export const GO_ZERO_TIME = '0001-01-01T00:00:00Z';

/** An evaluation in brief, as `RelatedEvals` lists them (Nomad's EvaluationStub). */
export const EvaluationStub = z.strictObject({
  ID: z.string(),
  Priority: z.number().int(),
  Type: z.string(),
  TriggeredBy: z.string(),
  Namespace: z.string(),
  JobID: z.string(),
  NodeID: z.string(),
  DeploymentID: z.string(),
  Status: z.string(),
  StatusDescription: z.string(),
  WaitUntil: z.string(),
  NextEval: z.string(),
  PreviousEval: z.string(),
  BlockedEval: z.string(),
  CreateIndex: z.number().int(),
  ModifyIndex: z.number().int(),
  CreateTime: z.number().int(),
  ModifyTime: z.number().int(),
});
export type EvaluationStub = z.infer<typeof EvaluationStub>;

export const Evaluation = z.strictObject({
  ID: z.string(),
  Priority: z.number().int(),
  /** The scheduler: service, batch, system. */
  Type: z.string(),
  /** job-register, job-deregister, node-update, alloc-failure, deployment-watcher, ... */
  TriggeredBy: z.string(),
  Namespace: z.string(),
  JobID: z.string(),
  JobModifyIndex: z.number().int(),
  /** The node whose change triggered it (node-update), else "". */
  NodeID: z.string(),
  NodeModifyIndex: z.number().int(),
  DeploymentID: z.string(),
  Status: z.string(),
  StatusDescription: z.string(),
  /** Deprecated in Nomad (nanoseconds); always 0. */
  Wait: z.number().int(),
  /** When a delayed evaluation (a reschedule) may run. */
  WaitUntil: z.string(),
  /** The evaluation created to follow this one up. */
  NextEval: z.string(),
  /** The evaluation that created this one. */
  PreviousEval: z.string(),
  /** The blocked evaluation created for what this one could not place. */
  BlockedEval: z.string(),
  /** Evaluations linked by Next/Previous/BlockedEval, with `?related=true`; null otherwise. */
  RelatedEvals: z.array(EvaluationStub).nullable(),
  /** Task group -> why its allocations could not all be placed. */
  FailedTGAllocs: z.record(z.string(), AllocationMetric).nullable(),
  /** The reconciler's plan, only on evaluations made to annotate a plan; Berth's evaluations have none. */
  PlanAnnotations: z.null(),
  ClassEligibility: z.record(z.string(), z.boolean()).nullable(),
  EscapedComputedClass: z.boolean(),
  QuotaLimitReached: z.string(),
  MissingNonNodeResources: z.array(z.string()).nullable(),
  AnnotatePlan: z.boolean(),
  /** Task group -> allocations still to place when the evaluation ran. */
  QueuedAllocations: z.record(z.string(), z.number().int()).nullable(),
  SnapshotIndex: z.number().int(),
  CreateIndex: z.number().int(),
  ModifyIndex: z.number().int(),
  CreateTime: z.number().int(),
  ModifyTime: z.number().int(),
});
export type Evaluation = z.infer<typeof Evaluation>;
