// Evaluations, as Nomad's `api` package has them (api/evaluations.go):
// `GET /v1/evaluations` and `/v1/job/:id/evaluations` answer `Evaluation[]`
// (not stubs: Nomad's list sends whole evaluations), `GET /v1/evaluation/:id`
// one `Evaluation` (`RelatedEvals` filled with `?related=true`). Durations are integer
// nanoseconds, `CreateTime`/`ModifyTime` Unix nanoseconds, `WaitUntil` an
// RFC 3339 time ("0001-01-01T00:00:00Z", Go's zero time, when unset).

import { z } from 'zod';
import { int, int64, list, map, nanos, ptr, time, uint } from './_go.js';
import { AllocationMetric } from './alloc-metric.js';
import { PlanAnnotations } from './job-plan.js';
import { lazySchema } from './lazy-schema.js';

export const EVAL_STATUSES = ['blocked', 'pending', 'complete', 'failed', 'canceled'] as const;

/** An evaluation in brief, as `RelatedEvals` lists them (Nomad's EvaluationStub). */
export const EvaluationStub = lazySchema(() => z.strictObject({
  ID: z.string(),
  Priority: int,
  Type: z.string(),
  TriggeredBy: z.string(),
  Namespace: z.string(),
  JobID: z.string(),
  NodeID: z.string(),
  DeploymentID: z.string(),
  Status: z.string(),
  StatusDescription: z.string(),
  WaitUntil: time,
  NextEval: z.string(),
  PreviousEval: z.string(),
  BlockedEval: z.string(),
  CreateIndex: uint,
  ModifyIndex: uint,
  CreateTime: int64,
  ModifyTime: int64,
}));
export type EvaluationStub = z.infer<typeof EvaluationStub>;

export const Evaluation = lazySchema(() => z.strictObject({
  ID: z.string(),
  Priority: int,
  /** The scheduler: service, batch, system. */
  Type: z.string(),
  /** job-register, job-deregister, node-update, alloc-failure, deployment-watcher, ... */
  TriggeredBy: z.string(),
  Namespace: z.string(),
  JobID: z.string(),
  JobModifyIndex: uint,
  /** The node whose change triggered it (node-update), else "". */
  NodeID: z.string(),
  NodeModifyIndex: uint,
  DeploymentID: z.string(),
  Status: z.string(),
  StatusDescription: z.string(),
  /** Deprecated in Nomad (nanoseconds); always 0. */
  Wait: nanos,
  /** When a delayed evaluation (a reschedule) may run. */
  WaitUntil: time,
  /** The evaluation created to follow this one up. */
  NextEval: z.string(),
  /** The evaluation that created this one. */
  PreviousEval: z.string(),
  /** The blocked evaluation created for what this one could not place. */
  BlockedEval: z.string(),
  /** Evaluations linked by Next/Previous/BlockedEval, with `?related=true`; null otherwise. */
  RelatedEvals: list(EvaluationStub),
  /** Task group -> why its allocations could not all be placed. */
  FailedTGAllocs: map(AllocationMetric),
  /** The reconciler's plan, only on evaluations made to annotate a plan; Berth's evaluations have none (null). */
  PlanAnnotations: ptr(PlanAnnotations),
  ClassEligibility: map(z.boolean()),
  EscapedComputedClass: z.boolean(),
  QuotaLimitReached: z.string(),
  MissingNonNodeResources: list(z.string()),
  AnnotatePlan: z.boolean(),
  /** Task group -> allocations still to place when the evaluation ran. */
  QueuedAllocations: map(int),
  SnapshotIndex: uint,
  CreateIndex: uint,
  ModifyIndex: uint,
  CreateTime: int64,
  ModifyTime: int64,
  /** Berth's: allocations the evaluation placed (Nomad's clients read them from /v1/evaluation/:id/allocations). */
  BerthPlaced: int,
  /** Berth's: allocations the evaluation stopped. */
  BerthStopped: int,
  /** Berth's: allocations moved to the new job version without a restart (resources changed in place). */
  BerthUpdatedInPlace: int,
}));
export type Evaluation = z.infer<typeof Evaluation>;
