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
  /**
   * Present when the node asked with `since` (AllocIndexesInline) and the
   * server knows it: the allocations whose alloc modify index is above
   * `since`, as a pull would send them (without metrics, at most
   * ALLOC_PULL_MAX, by ID), and the current job of each, once, unless the
   * node named that version in `heldJobs`. Read from the same state as
   * `allocations`, so the node pulls only what this leaves out: with one
   * request an allocation change instead of two. A server older than this
   * field answers without it (the node then pulls, as before).
   */
  pulled?: { allocations: Allocation[]; jobs: Job[] };
}

/**
 * The query parameters of GET /v1/node/:id/allocation-indexes that ask for
 * `pulled` (Berth's node protocol; a client that sends neither gets the
 * indexes only). `since`: the index of the last answer the node acted on
 * (0 when it holds nothing): every allocation whose alloc modify index is
 * above it comes inline. `heldJobs`: JSON of the jobs the node holds, as
 * `[namespace, id, createIndex, version]` tuples.
 */
export interface AllocIndexesInline {
  since: number;
  heldJobs: HeldJob[];
}

/** The longest `heldJobs` query value a node sends (encoded); a node holding more jobs than fit pulls instead. */
export const ALLOC_INLINE_HELD_JOBS_MAX_CHARS = 6_000;

/** `heldJobs` as the query sends it. Pure. */
export function encodeHeldJobs(jobs: readonly HeldJob[]): string {
  return JSON.stringify(jobs.map((j) => [j.namespace, j.id, j.createIndex, j.version]));
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
