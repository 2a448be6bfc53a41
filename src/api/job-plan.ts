// A job plan's diff and annotations as Nomad's API writes them (api/jobs.go):
// what `nomad job plan` prints (`+/-` fields, objects, groups and tasks) and
// what the scheduler would do to each group.

import { z } from 'zod';
import { list, map, uint } from './_go.js';
import { lazySchema } from './lazy-schema.js';

/** One field's change: Type "Added", "Deleted", "Edited" or "None". */
export const FieldDiff = lazySchema(() => z.strictObject({
  Type: z.string(),
  Name: z.string(),
  Old: z.string(),
  New: z.string(),
  Annotations: list(z.string()),
}));
export type FieldDiff = z.infer<typeof FieldDiff>;

/** A block's change, nested as the blocks are. */
export type ObjectDiff = {
  Type: string;
  Name: string;
  Fields: FieldDiff[] | null;
  Objects: ObjectDiff[] | null;
};
export const ObjectDiff: z.ZodType<ObjectDiff> = lazySchema(() => z.strictObject({
  Type: z.string(),
  Name: z.string(),
  Fields: list(FieldDiff),
  Objects: list(z.lazy(() => ObjectDiff)),
}));

export const TaskDiff = lazySchema(() => z.strictObject({
  Type: z.string(),
  Name: z.string(),
  Fields: list(FieldDiff),
  Objects: list(ObjectDiff),
  Annotations: list(z.string()),
}));
export type TaskDiff = z.infer<typeof TaskDiff>;

/** A group's change; Updates counts the scheduler's decisions by kind ("create", "destroy", "in-place update"...). */
export const TaskGroupDiff = lazySchema(() => z.strictObject({
  Type: z.string(),
  Name: z.string(),
  Fields: list(FieldDiff),
  Objects: list(ObjectDiff),
  Tasks: list(TaskDiff),
  Updates: map(uint),
}));
export type TaskGroupDiff = z.infer<typeof TaskGroupDiff>;

export const JobDiff = lazySchema(() => z.strictObject({
  Type: z.string(),
  ID: z.string(),
  Fields: list(FieldDiff),
  Objects: list(ObjectDiff),
  TaskGroups: list(TaskGroupDiff),
}));
export type JobDiff = z.infer<typeof JobDiff>;

/** What the scheduler would do to one group's allocations. */
export const DesiredUpdates = lazySchema(() => z.strictObject({
  Ignore: uint,
  Place: uint,
  Migrate: uint,
  Stop: uint,
  InPlaceUpdate: uint,
  DestructiveUpdate: uint,
  Canary: uint,
  Preemptions: uint,
  Disconnect: uint,
  Reconnect: uint,
  RescheduleNow: uint,
  RescheduleLater: uint,
}));
export type DesiredUpdates = z.infer<typeof DesiredUpdates>;

export const PlanAnnotations = lazySchema(() => z.strictObject({
  DesiredTGUpdates: map(DesiredUpdates),
  /**
   * Nomad: []*AllocationListStub, the allocations the plan would preempt.
   * Berth does not preempt, so its answers carry null (or []).
   */
  PreemptedAllocs: list(z.never()),
}));
export type PlanAnnotations = z.infer<typeof PlanAnnotations>;
