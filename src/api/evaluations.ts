// Evaluations and placement metrics as Nomad's API writes them
// (api/evaluations.go, api/allocations.go's AllocationMetric): a job plan
// answers with the evaluations it created and, per group, why placements
// failed; an allocation carries its placement metrics.

import { z } from 'zod';
import { PlanAnnotations } from './job-plan.js';
import { Resources } from './resources.js';
import { float, int, int64, list, map, nanos, ptr, time, uint } from './_go.js';

/** How the scheduler scored one node. */
export const NodeScoreMeta = z.strictObject({
  NodeID: z.string(),
  Scores: map(float),
  NormScore: float,
});
export type NodeScoreMeta = z.infer<typeof NodeScoreMeta>;

/** What placement looked at for one allocation (or one group's failed placements). */
export const AllocationMetric = z.strictObject({
  NodesEvaluated: int,
  NodesFiltered: int,
  NodesInPool: int,
  NodePool: z.string(),
  NodesAvailable: map(int),
  ClassFiltered: map(int),
  ConstraintFiltered: map(int),
  NodesExhausted: int,
  ClassExhausted: map(int),
  DimensionExhausted: map(int),
  QuotaExhausted: list(z.string()),
  ResourcesExhausted: map(Resources),
  /** Deprecated (Nomad): ScoreMetaData replaces it. */
  Scores: map(float),
  AllocationTime: nanos,
  CoalescedFailures: int,
  ScoreMetaData: list(NodeScoreMeta),
});
export type AllocationMetric = z.infer<typeof AllocationMetric>;

/** An evaluation as listed in another's RelatedEvals. */
export const EvaluationStub = z.strictObject({
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
});
export type EvaluationStub = z.infer<typeof EvaluationStub>;

/** An evaluation (CreateTime and ModifyTime in nanoseconds since the epoch). */
export const Evaluation = z.strictObject({
  ID: z.string(),
  Priority: int,
  Type: z.string(),
  TriggeredBy: z.string(),
  Namespace: z.string(),
  JobID: z.string(),
  JobModifyIndex: uint,
  NodeID: z.string(),
  NodeModifyIndex: uint,
  DeploymentID: z.string(),
  Status: z.string(),
  StatusDescription: z.string(),
  Wait: nanos,
  WaitUntil: time,
  NextEval: z.string(),
  PreviousEval: z.string(),
  BlockedEval: z.string(),
  RelatedEvals: list(EvaluationStub),
  FailedTGAllocs: map(AllocationMetric),
  PlanAnnotations: ptr(PlanAnnotations),
  ClassEligibility: map(z.boolean()),
  EscapedComputedClass: z.boolean(),
  QuotaLimitReached: z.string(),
  MissingNonNodeResources: list(z.string()),
  AnnotatePlan: z.boolean(),
  QueuedAllocations: map(int),
  SnapshotIndex: uint,
  CreateIndex: uint,
  ModifyIndex: uint,
  CreateTime: int64,
  ModifyTime: int64,
});
export type Evaluation = z.infer<typeof Evaluation>;
