// A job's summary as Nomad keeps it (its `job_summary` table): per task
// group, how many allocations are queued, starting, running, complete,
// failed, lost; for a periodic or parameterized job, how many of its
// children are pending, running, dead. Berth keeps no summary table: it is
// counted from the allocations and child jobs of one store view, for one job
// or for every job at once (GET /v1/jobs answers each job with its summary).

import { isClientTerminal, type Allocation, type Job } from '../../structs/index.js';
import { rowKey, type StateReader } from '../state/index.js';

/** One task group's allocations by state (Nomad's TaskGroupSummary). */
export interface GroupSummary {
  /** Wanted but not placed yet (the count not met by live allocations). */
  queued: number;
  complete: number;
  failed: number;
  running: number;
  /** Placed, not running yet (client status pending). */
  starting: number;
  lost: number;
  unknown: number;
}

/** A job's summary (Nomad's JobSummary). */
export interface JobSummary {
  namespace: string;
  jobId: string;
  groups: Record<string, GroupSummary>;
  /** Children of a periodic or parameterized job by status; undefined for other jobs. */
  children?: { pending: number; running: number; dead: number };
  createIndex: number;
  /** The newest index among the job and what its summary counts. */
  modifyIndex: number;
}

const emptyGroup = (): GroupSummary => ({ queued: 0, complete: 0, failed: 0, running: 0, starting: 0, lost: 0, unknown: 0 });

/** A job and what its summary is counted from. */
interface Counted {
  allocs: Allocation[];
  children: Job[];
}

/** The summary of `job`, from `allocs` (its allocations) and `children` (its child jobs). Pure. */
export function summarize(job: Job, allocs: readonly Allocation[], children: readonly Job[]): JobSummary {
  const groups: Record<string, GroupSummary> = {};
  for (const g of job.groups) groups[g.name] = emptyGroup();
  let modifyIndex = job.modifyIndex;
  const liveByGroup = new Map<string, number>();
  for (const a of allocs) {
    modifyIndex = Math.max(modifyIndex, a.modifyIndex);
    const g = groups[a.taskGroup];
    if (!g) continue;
    if (a.clientStatus === 'pending') g.starting++;
    else g[a.clientStatus]++;
    // What counts toward the group's count: live allocations the server still wants (and, for batch, those that completed).
    const counts = a.desiredStatus === 'run' && (!isClientTerminal(a.clientStatus) || (job.type === 'batch' && a.clientStatus === 'complete'));
    if (counts) liveByGroup.set(a.taskGroup, (liveByGroup.get(a.taskGroup) ?? 0) + 1);
  }
  // A system job's count is per node, and a periodic or parameterized job places nothing itself.
  const places = !job.stop && job.type !== 'system' && !job.periodic && !job.parameterized;
  if (places) for (const g of job.groups) (groups[g.name] as GroupSummary).queued = Math.max(0, g.count - (liveByGroup.get(g.name) ?? 0));
  const out: JobSummary = { namespace: job.namespace, jobId: job.id, groups, createIndex: job.createIndex, modifyIndex };
  if (job.periodic || job.parameterized) {
    const byStatus = { pending: 0, running: 0, dead: 0 };
    for (const c of children) {
      byStatus[c.status]++;
      out.modifyIndex = Math.max(out.modifyIndex, c.modifyIndex);
    }
    out.children = byStatus;
  }
  return out;
}

/** The summary of the job `namespace/jobId` in `reader`; undefined when there is no such job. Never blocks. */
export function jobSummary(reader: StateReader, namespace: string, jobId: string): JobSummary | undefined {
  const job = reader.get('jobs', rowKey(namespace, jobId));
  if (!job) return undefined;
  const allocs = reader.list('allocations', { filter: (a) => a.jobId === jobId && a.namespace === namespace });
  const children = job.periodic || job.parameterized ? reader.list('jobs', { filter: (j) => j.parentId === jobId && j.namespace === namespace }) : [];
  return summarize(job, allocs, children);
}

/**
 * The summaries of `jobs` (all from `reader`), counted in one pass over the
 * allocations and one over the jobs, keyed by `rowKey(namespace, id)`.
 * Never blocks.
 */
export function jobSummaries(reader: StateReader, jobs: readonly Job[]): Map<string, JobSummary> {
  const counted = new Map<string, Counted>();
  for (const j of jobs) counted.set(rowKey(j.namespace, j.id), { allocs: [], children: [] });
  if (counted.size === 0) return new Map();
  reader.list('allocations', {
    filter: (a) => {
      counted.get(rowKey(a.namespace, a.jobId))?.allocs.push(a);
      return false;
    },
  });
  if (jobs.some((j) => j.periodic || j.parameterized)) {
    reader.list('jobs', {
      filter: (j) => {
        if (j.parentId !== undefined) counted.get(rowKey(j.namespace, j.parentId))?.children.push(j);
        return false;
      },
    });
  }
  const out = new Map<string, JobSummary>();
  for (const j of jobs) {
    const c = counted.get(rowKey(j.namespace, j.id)) as Counted;
    out.set(rowKey(j.namespace, j.id), summarize(j, c.allocs, c.children));
  }
  return out;
}
