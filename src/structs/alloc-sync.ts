// The node's incremental allocation sync (Nomad's Node.GetClientAllocs then
// Alloc.GetAllocs): a blocking read answers only each allocation's ID and
// its alloc modify index; the node then pulls, in one request, the
// allocations whose index differs from the one it holds, and a job only
// when it does not hold that version of it.

import type { Allocation } from './allocation.js';
import type { Job } from './stored-job.js';

/**
 * The fields of an allocation that only its node's status reports change
 * (the server's `updateAllocations`). Every other field is the server's: a
 * change to one of those is what makes a node pull the allocation again.
 */
export const CLIENT_ALLOC_FIELDS = ['clientStatus', 'clientDescription', 'taskStates', 'network', 'checks', 'modifyTime', 'modifyIndex'] as const;

/**
 * GET /v1/node/:id/allocation-indexes (blocking): each allocation of the
 * node by ID, with its alloc modify index: the modify index of the
 * allocation's version whose server fields (all but CLIENT_ALLOC_FIELDS) it
 * still has. The node's own status reports leave it alone; a server change
 * (stop, evict, migrate, a new job version, a deployment's verdict) moves
 * it. Two answers that give an allocation the same number mean the same
 * server fields, whichever server answered.
 */
export interface AllocIndexesAnswer {
  allocations: Record<string, number>;
}

/** A job version a node holds: the job's row (createIndex, so a purged and re-created job differs) and its spec version. */
export interface HeldJob {
  namespace: string;
  id: string;
  createIndex: number;
  version: number;
}

/** POST /v1/node/:id/allocations/pull. */
export interface AllocPullRequest {
  /** The allocations to send (at most ALLOC_PULL_MAX). */
  ids: string[];
  /** The index of the indexes answer that named them: the server answers from state at least this new. */
  minIndex?: number;
  /** Jobs the node holds already: not sent again while their version is the same. */
  heldJobs?: HeldJob[];
}

/**
 * The answer of a pull: the allocations asked for that are still on the
 * node (one missing was deleted meanwhile), without their placement
 * `metrics` (no node reads them), each one's alloc modify index
 * (see AllocIndexesAnswer), and the current job of each, once per job and
 * only when the node does not hold that version. `X-Nomad-Index` is the
 * state's allocation index, never below the `minIndex` asked for.
 */
export interface AllocPullAnswer {
  allocations: Allocation[];
  allocModifyIndex: Record<string, number>;
  jobs: Job[];
}

/** The most allocation IDs one pull may name. */
export const ALLOC_PULL_MAX = 1000;

/** Whether `job` is the version `held` names. Pure. */
export function isHeldJob(held: HeldJob, job: Pick<Job, 'namespace' | 'id' | 'createIndex' | 'version'>): boolean {
  return held.namespace === job.namespace && held.id === job.id && held.createIndex === job.createIndex && held.version === job.version;
}
