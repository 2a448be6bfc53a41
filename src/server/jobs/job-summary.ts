// A job's summary as Nomad keeps it in its `job_summary` table: per task
// group, how many allocations are queued, starting, running, complete,
// failed, lost; for a periodic or parameterized job, how many of its
// children are pending, running, dead. Berth keeps no summary table: it is
// counted from one store view (the job's allocations and children), for one
// job or for every job at once (GET /v1/jobs answers each job with its
// summary); structs' jobSummary writes it in Nomad's shape.

import type * as api from '../../api/index.js';
import { isClientTerminal, jobSummary, type Allocation, type Job } from '../../structs/index.js';
import { rowKey, type StateReader } from '../state/index.js';

/**
 * Per group, the allocations wanted but not placed: the count not met by
 * live allocations the server still wants (and, for batch, those that
 * completed). None for a stopped job, a system job (its count is per
 * node) or one that launches children. Pure.
 */
export function queuedAllocations(job: Job, allocs: readonly Allocation[]): Record<string, number> {
  const queued: Record<string, number> = {};
  if (job.stop || job.type === 'system' || job.periodic || job.parameterized) return queued;
  const counting = new Map<string, number>();
  for (const a of allocs) {
    const counts = a.desiredStatus === 'run' && (!isClientTerminal(a.clientStatus) || (job.type === 'batch' && a.clientStatus === 'complete'));
    if (counts) counting.set(a.taskGroup, (counting.get(a.taskGroup) ?? 0) + 1);
  }
  for (const g of job.groups) queued[g.name] = Math.max(0, g.count - (counting.get(g.name) ?? 0));
  return queued;
}

/** The summary of `job` from its allocations and children: its modify index the newest of theirs and the job's. Pure. */
function summarize(job: Job, allocs: readonly Allocation[], children: readonly Job[]): api.JobSummary {
  let modifyIndex = job.modifyIndex;
  for (const a of allocs) if (a.modifyIndex > modifyIndex) modifyIndex = a.modifyIndex;
  for (const c of children) if (c.modifyIndex > modifyIndex) modifyIndex = c.modifyIndex;
  return jobSummary(job, allocs, { queued: queuedAllocations(job, allocs), children, modifyIndex });
}

/** The summary of the job `namespace/jobId` in `reader`; undefined when there is no such job. Never blocks. */
export function jobSummaryIn(reader: StateReader, namespace: string, jobId: string): api.JobSummary | undefined {
  const job = reader.get('jobs', rowKey(namespace, jobId));
  if (!job) return undefined;
  const allocs = reader.list('allocations', { filter: (a) => a.jobId === jobId && a.namespace === namespace });
  const children = job.periodic || job.parameterized ? reader.list('jobs', { filter: (j) => j.parentId === jobId && j.namespace === namespace }) : [];
  return summarize(job, allocs, children);
}

/**
 * The summaries of `jobs` (all from `reader`), counted in one pass over the
 * allocations and one over the jobs, keyed by namespace, then job ID.
 * Never blocks.
 */
export function jobSummariesIn(reader: StateReader, jobs: readonly Job[]): Map<string, Map<string, api.JobSummary>> {
  type Counted = { job: Job; allocs: Allocation[]; children: Job[] };
  // Namespace -> job ID -> what is counted (plain maps: no row keys built per allocation).
  const counted = new Map<string, Map<string, Counted>>();
  for (const j of jobs) {
    let ns = counted.get(j.namespace);
    if (!ns) counted.set(j.namespace, (ns = new Map()));
    ns.set(j.id, { job: j, allocs: [], children: [] });
  }
  if (jobs.length === 0) return new Map();
  reader.list('allocations', {
    filter: (a) => {
      counted.get(a.namespace)?.get(a.jobId)?.allocs.push(a);
      return false;
    },
  });
  if (jobs.some((j) => j.periodic || j.parameterized)) {
    reader.list('jobs', {
      filter: (j) => {
        if (j.parentId !== undefined) counted.get(j.namespace)?.get(j.parentId)?.children.push(j);
        return false;
      },
    });
  }
  const out = new Map<string, Map<string, api.JobSummary>>();
  for (const [ns, byId] of counted) {
    const sums = new Map<string, api.JobSummary>();
    for (const [id, c] of byId) sums.set(id, summarize(c.job, c.allocs, c.children));
    out.set(ns, sums);
  }
  return out;
}
