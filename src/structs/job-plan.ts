// What `job plan` answers (PUT /v1/job/:id/plan): the job's diff against the
// version the cluster runs, in Nomad's shape (Added/Deleted/Edited/None at
// every level), what the scheduler would do, and the Job Modify Index that
// `job run -check-index` takes back.

import type { PlacementFailure } from './evaluation.js';

export type DiffType = 'Added' | 'Deleted' | 'Edited' | 'None';

export interface FieldDiff {
  type: DiffType;
  name: string;
  old: string;
  new: string;
}

export interface ObjectDiff {
  type: DiffType;
  name: string;
  fields: FieldDiff[];
  objects: ObjectDiff[];
}

export interface TaskDiff extends ObjectDiff {
  /** "forces create/destroy update", "forces in-place update" (Nomad's task annotations). */
  annotations: string[];
}

export interface GroupDiff extends ObjectDiff {
  tasks: TaskDiff[];
  /** What the scheduler would do with the group's allocations: create, destroy, in-place update, ignore. */
  updates: Record<string, number>;
}

export interface JobDiff extends ObjectDiff {
  groups: GroupDiff[];
}

export interface JobPlan {
  diff: JobDiff;
  /** The job's index now (0: no such job): `job run -check-index` refuses to run if it moved. */
  jobModifyIndex: number;
  /** Allocations it would place: group, index, node. */
  placements: Array<{ group: string; index: number; nodeId: string; nodeName: string; name: string }>;
  /** Allocations it would stop, with why. */
  stops: Array<{ allocId: string; group: string; name: string; description: string }>;
  /** Allocations whose tasks would get new resources in place. */
  inPlaceUpdates: number;
  /** Task group -> why some allocations could not be placed. */
  failedPlacements: Record<string, PlacementFailure>;
  /** True when the job or its allocations would change (`job plan` exits 1). */
  changes: boolean;
}
