// What the job commands share about Nomad's job shapes: a job file's spec
// as Nomad's Job JSON (what `job run` sends and `-output` prints), Nomad's
// nanosecond times, and Nomad's `key = value` layout.

import type * as api from '../api/index.js';
import type { JobSpec } from '../structs/index.js';

/** Nomad's nanoseconds since the epoch -> milliseconds. */
export const msOfNanos = (ns: number): number => Math.round(ns / 1_000_000);

/**
 * A checked spec as Nomad's Job JSON, as Nomad's Go client sends a parsed
 * job file (structs' specToNomadJob, loaded with the spec parser, which
 * every caller has loaded already).
 */
export async function nomadJobOf(spec: JobSpec): Promise<api.Job> {
  const { specToNomadJob } = await import('../structs/index.js');
  return specToNomadJob(spec);
}

/** Nomad's formatKV: `Key   = value` lines, keys padded to the longest. */
export function formatKV(rows: ReadonlyArray<readonly [string, string]>): string[] {
  const width = Math.max(0, ...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)} = ${v}`);
}

/** A job's type as `nomad job status` lists it: `batch/periodic`, `batch/parameterized`. */
export function typeString(job: Pick<api.JobListStub, 'Type' | 'Periodic' | 'ParameterizedJob'>): string {
  if (job.Periodic) return `${job.Type}/periodic`;
  if (job.ParameterizedJob) return `${job.Type}/parameterized`;
  return job.Type;
}

/** A job's status as Nomad shows it: `dead (stopped)` for a stopped job. */
export function statusString(status: string, stop: boolean | null | undefined): string {
  return stop ? `${status} (stopped)` : status;
}
