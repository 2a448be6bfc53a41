// A group's `scaling` block and a job's scale status, as Nomad's API writes
// them (api/scaling.go; GET /v1/job/:id/scale answers JobScaleStatusResponse).

import { z } from 'zod';
import { anyMap, int, int64, list, map, ptr, stringMap, uint } from './_go.js';
import { lazySchema } from './lazy-schema.js';

/** A `scaling` block; ID, Namespace, Target and the indexes are the server's. */
export const ScalingPolicy = lazySchema(() => z.strictObject({
  Min: ptr(int),
  Max: ptr(int),
  Policy: anyMap,
  Enabled: ptr(z.boolean()),
  Type: z.string(),
  ID: z.string(),
  Namespace: z.string(),
  Target: stringMap,
  CreateIndex: uint,
  ModifyIndex: uint,
}));
export type ScalingPolicy = z.infer<typeof ScalingPolicy>;

/** One change of a group's count (Time in nanoseconds since the epoch). */
export const ScalingEvent = lazySchema(() => z.strictObject({
  Count: ptr(int),
  PreviousCount: int,
  Error: z.boolean(),
  Message: z.string(),
  Meta: anyMap,
  EvalID: ptr(z.string()),
  Time: int64,
  CreateIndex: uint,
}));
export type ScalingEvent = z.infer<typeof ScalingEvent>;

export const TaskGroupScaleStatus = lazySchema(() => z.strictObject({
  Desired: int,
  Placed: int,
  Running: int,
  Healthy: int,
  Unhealthy: int,
  Events: list(ScalingEvent),
}));
export type TaskGroupScaleStatus = z.infer<typeof TaskGroupScaleStatus>;

/** GET /v1/job/:id/scale. */
export const JobScaleStatusResponse = lazySchema(() => z.strictObject({
  JobID: z.string(),
  Namespace: z.string(),
  JobCreateIndex: uint,
  JobModifyIndex: uint,
  JobStopped: z.boolean(),
  TaskGroups: map(TaskGroupScaleStatus),
}));
export type JobScaleStatusResponse = z.infer<typeof JobScaleStatusResponse>;

/** A row of GET /v1/scaling/policies. */
export const ScalingPolicyListStub = lazySchema(() => z.strictObject({
  ID: z.string(),
  Enabled: z.boolean(),
  Type: z.string(),
  Target: stringMap,
  CreateIndex: uint,
  ModifyIndex: uint,
}));
export type ScalingPolicyListStub = z.infer<typeof ScalingPolicyListStub>;
