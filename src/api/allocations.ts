// PLACEHOLDER until the allocations family (branch api-allocs) lands its
// shapes: Nomad's AllocationListStub (api/allocations.go), with its nested
// structs typed loosely. Replaced by theirs at merge.

import { z } from 'zod';

const int = z.number().int();

export const AllocationListStub = z.strictObject({
  ID: z.string(),
  EvalID: z.string(),
  Name: z.string(),
  Namespace: z.string(),
  NodeID: z.string(),
  NodeName: z.string(),
  JobID: z.string(),
  JobType: z.string(),
  JobVersion: int.nonnegative(),
  TaskGroup: z.string(),
  AllocatedResources: z.unknown().optional(),
  DesiredStatus: z.string(),
  DesiredDescription: z.string(),
  ClientStatus: z.string(),
  ClientDescription: z.string(),
  TaskStates: z.record(z.string(), z.unknown()).nullable(),
  DeploymentStatus: z.unknown().nullable(),
  FollowupEvalID: z.string(),
  NextAllocation: z.string(),
  RescheduleTracker: z.unknown().nullable(),
  PreemptedAllocations: z.array(z.string()).nullable(),
  PreemptedByAllocation: z.string(),
  CreateIndex: int.nonnegative(),
  ModifyIndex: int.nonnegative(),
  CreateTime: int,
  ModifyTime: int,
});
export type AllocationListStub = z.infer<typeof AllocationListStub>;
