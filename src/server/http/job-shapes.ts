// Berth's jobs in Nomad's shapes (src/api/jobs.ts): a stored job as Nomad's
// Job (its spec through the jobshape converter, then the server's fields),
// its list stub and summary, and the answers of the job writes. Typed with
// the src/api types, so a field missing here fails typecheck.

import type * as api from '../../api/index.js';
import { publicJob, specOfJob, type Job, type JobSpec } from '../../structs/index.js';
import type { JobSummary } from '../jobs/index.js';
import { TODO_CONVERTER } from './_converter.js';

/** Milliseconds since the epoch -> Nomad's nanoseconds. */
export const nanos = (ms: number): number => Math.round(ms) * 1_000_000;

/** A spec in Nomad's Job shape (mount flags redacted), none of the server's fields set. */
export function nomadSpec(spec: JobSpec): api.Job {
  return TODO_CONVERTER(publicJob(spec));
}

/** The index `job run -check-index` compares and Nomad's JobModifyIndex: the job's latest registration. */
export function jobModifyIndexOf(job: Job): number {
  return job.submitIndex ?? job.modifyIndex;
}

/**
 * A stored job as Nomad's Job: its spec, and the server's fields (status,
 * version, `stable` from its kept version, indexes, submit time in
 * nanoseconds, a dispatched child's parent and payload). Pure.
 */
export function jobOut(job: Job, stable = false): api.Job {
  return {
    ...nomadSpec(specOfJob(job)),
    Stop: job.stop,
    ParentID: job.parentId ?? '',
    Dispatched: job.dispatched ?? false,
    Payload: job.payload ?? null,
    Status: job.status,
    StatusDescription: '',
    Stable: stable,
    Version: job.version,
    SubmitTime: nanos(job.submitTime),
    CreateIndex: job.createIndex,
    ModifyIndex: job.modifyIndex,
    JobModifyIndex: jobModifyIndexOf(job),
  };
}

/** A job's summary as Nomad's JobSummary. Pure. */
export function summaryOut(s: JobSummary): api.JobSummary {
  const groups: Record<string, api.TaskGroupSummary> = {};
  for (const [name, g] of Object.entries(s.groups)) {
    groups[name] = { Queued: g.queued, Complete: g.complete, Failed: g.failed, Running: g.running, Starting: g.starting, Lost: g.lost, Unknown: g.unknown };
  }
  return {
    JobID: s.jobId,
    Namespace: s.namespace,
    Summary: groups,
    Children: s.children ? { Pending: s.children.pending, Running: s.children.running, Dead: s.children.dead } : { Pending: 0, Running: 0, Dead: 0 },
    CreateIndex: s.createIndex,
    ModifyIndex: s.modifyIndex,
  };
}

/** One row of GET /v1/jobs: `meta` adds the job's Meta (Nomad's `?meta=true`). Pure. */
export function jobStub(job: Job, summary: JobSummary | undefined, meta: boolean): api.JobListStub {
  const stub: api.JobListStub = {
    ID: job.id,
    ParentID: job.parentId ?? '',
    Name: job.name ?? job.id,
    Namespace: job.namespace,
    Datacenters: job.datacenters,
    Type: job.type,
    Priority: job.priority,
    Periodic: job.periodic !== undefined,
    ParameterizedJob: job.parameterized !== undefined,
    Stop: job.stop,
    Status: job.status,
    StatusDescription: '',
    JobSummary: summary ? summaryOut(summary) : null,
    CreateIndex: job.createIndex,
    ModifyIndex: job.modifyIndex,
    JobModifyIndex: jobModifyIndexOf(job),
    SubmitTime: nanos(job.submitTime),
  };
  if (meta) stub.Meta = job.meta ?? {};
  return stub;
}
