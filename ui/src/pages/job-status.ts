// A job's state in words for the jobs list and the job page, from the list
// row's JobSummary (no allocation read): a `dead` job that stopped or
// completed cleanly is told apart from one whose allocations failed. And the
// list's search and filters, kept in the URL's query. Pure.

import type { JobStub } from '../api-jobs';

/** What a job's badge says: Nomad's status, a dead job split by how it ended. */
export type JobState = 'pending' | 'running' | 'stopped' | 'complete' | 'failed';

export const JOB_STATES: ReadonlyArray<[JobState, string]> = [
  ['running', 'running'],
  ['pending', 'pending'],
  ['complete', 'dead (complete)'],
  ['stopped', 'dead (stopped)'],
  ['failed', 'dead (failed)'],
];

type Counts = { queued: number; starting: number; running: number; complete: number; failed: number; lost: number; unknown: number };

/** The job's allocations by state, summed over its groups (the list row's JobSummary). */
export function summaryCounts(job: Pick<JobStub, 'JobSummary'>): Counts {
  const c: Counts = { queued: 0, starting: 0, running: 0, complete: 0, failed: 0, lost: 0, unknown: 0 };
  for (const g of Object.values(job.JobSummary?.Summary ?? {})) {
    c.queued += g.Queued;
    c.starting += g.Starting;
    c.running += g.Running;
    c.complete += g.Complete;
    c.failed += g.Failed;
    c.lost += g.Lost;
    c.unknown += g.Unknown;
  }
  return c;
}

/** "2 running, 1 failed", or "none". */
export function countsText(c: Counts): string {
  return (Object.entries(c) as Array<[keyof Counts, number]>).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`).join(', ') || 'none';
}

/**
 * The job's state: `running`/`pending` as Nomad says; a `dead` job is
 * `failed` when any of its allocations failed or was lost, else `stopped`
 * when it was stopped, else `complete` (a batch job that finished).
 */
export function jobState(job: Pick<JobStub, 'Status' | 'Stop' | 'JobSummary'>): JobState {
  if (job.Status === 'running') return 'running';
  if (job.Status !== 'dead') return 'pending';
  const c = summaryCounts(job);
  if (c.failed + c.lost > 0) return 'failed';
  return job.Stop ? 'stopped' : 'complete';
}

/** The badge: the word shown and the tone's key for Badge (`failed` red; a clean dead job neutral). */
export function stateBadge(state: JobState): { value: string; label: string } {
  switch (state) {
    case 'running':
      return { value: 'running', label: 'running' };
    case 'pending':
      return { value: 'pending', label: 'pending' };
    case 'failed':
      return { value: 'failed', label: 'dead (failed)' };
    case 'stopped':
      return { value: 'stopped', label: 'dead (stopped)' };
    case 'complete':
      return { value: 'finished', label: 'dead (complete)' };
  }
}

/** The list's search and filters, as the URL's query has them. */
export interface JobFilter {
  q: string;
  status: string;
  type: string;
  namespace: string;
}

export function filterOf(query: Record<string, string | undefined>): JobFilter {
  return { q: query['q'] ?? '', status: query['status'] ?? '', type: query['type'] ?? '', namespace: query['namespace'] ?? '' };
}

/** The query string for a filter: empty fields left out. */
export function queryOf(f: JobFilter): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (v) p.set(k, v);
  const s = p.toString();
  return s ? `?${s}` : '';
}

/** The rows the filter keeps: the text is searched in ID and name (case-insensitive). */
export function applyFilter<T extends Pick<JobStub, 'ID' | 'Name' | 'Type' | 'Namespace'>>(rows: T[], f: JobFilter, stateOf: (row: T) => JobState): T[] {
  const text = f.q.trim().toLowerCase();
  return rows.filter(
    (j) =>
      (!text || j.ID.toLowerCase().includes(text) || j.Name.toLowerCase().includes(text)) &&
      (!f.type || j.Type === f.type) &&
      (!f.namespace || (j.Namespace ?? 'default') === f.namespace) &&
      (!f.status || stateOf(j) === f.status),
  );
}
