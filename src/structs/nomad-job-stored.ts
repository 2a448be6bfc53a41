// A job as the server stores it -> Nomad's answers about it: the Job (GET
// /v1/job/:id, each of GET /v1/job/:id/versions), its row in GET /v1/jobs
// (JobListStub) and its summary (JobSummary), computed from the job's
// allocations and children as Nomad's state store keeps it up to date.

import type { Job as NomadJob, JobListStub, JobSummary, TaskGroupSummary } from '../api/index.js';
import type { Allocation } from './allocation.js';
import { jobModifyIndex, publicJob, specOfJob, type Job, type JobStatus } from './stored-job.js';
import { scalingPolicyOf } from './scaling-policy.js';
import { specToNomadJob } from './nomad-job.js';

const NS_PER_MS = 1_000_000;

/** Options of jobToNomad. */
export interface StoredJobOptions {
  /** Nomad's Stable: this version's deployment succeeded (or it needed none). Default false. */
  stable?: boolean;
}

/**
 * A stored job -> Nomad's Job as Nomad's server answers it: canonicalized
 * (specToNomadJob with `canonicalize`), mount flags redacted (publicJob),
 * and the server's fields: Stop, Status, Version, SubmitTime (nanoseconds),
 * CreateIndex, ModifyIndex, JobModifyIndex (the latest registration's, as
 * `-check-index` compares), ParentID, Dispatched and the dispatch Payload.
 * Pure.
 */
export function jobToNomad(job: Job, opts: StoredJobOptions = {}): NomadJob {
  const out = specToNomadJob(publicJob(specOfJob(job)), { canonicalize: true });
  (out.TaskGroups ?? []).forEach((g, i) => {
    const group = job.groups[i];
    if (g.Scaling && group) g.Scaling = scalingPolicyOf(job, group) ?? g.Scaling;
  });
  return {
    ...out,
    Stop: job.stop,
    ParentID: job.parentId ?? '',
    Dispatched: job.dispatched ?? false,
    Payload: job.payload ?? null,
    ConsulNamespace: '',
    VaultNamespace: '',
    NomadTokenID: '',
    Status: job.status,
    StatusDescription: '',
    Stable: opts.stable ?? false,
    Version: job.version,
    SubmitTime: job.submitTime * NS_PER_MS,
    CreateIndex: job.createIndex,
    ModifyIndex: job.modifyIndex,
    JobModifyIndex: jobModifyIndex(job),
  };
}

/** Options of jobListStub. */
export interface JobListStubOptions {
  /** The job's summary (jobSummary); null when the route has none. */
  summary?: JobSummary | null;
  /** GET /v1/jobs?meta=true: include the job's Meta (left out when it has none, as Nomad's omitempty). */
  meta?: boolean;
}

/** A stored job -> its row in GET /v1/jobs (Nomad's JobListStub). Pure. */
export function jobListStub(job: Job, opts: JobListStubOptions = {}): JobListStub {
  const stub: JobListStub = {
    ID: job.id,
    ParentID: job.parentId ?? '',
    Name: job.name ?? job.id,
    Namespace: job.namespace,
    Datacenters: [...job.datacenters],
    Type: job.type,
    Priority: job.priority,
    Periodic: job.periodic !== undefined,
    ParameterizedJob: job.parameterized !== undefined,
    Stop: job.stop,
    Status: job.status,
    StatusDescription: '',
    JobSummary: opts.summary ?? null,
    CreateIndex: job.createIndex,
    ModifyIndex: job.modifyIndex,
    JobModifyIndex: jobModifyIndex(job),
    SubmitTime: job.submitTime * NS_PER_MS,
  };
  if (opts.meta && job.meta && Object.keys(job.meta).length) stub.Meta = { ...job.meta };
  return stub;
}

/** What jobSummary counts besides the job's allocations. */
export interface JobSummaryInputs {
  /** Group name -> allocations waiting to be placed (a blocked evaluation's queued allocations). */
  queued?: Readonly<Record<string, number>>;
  /** A periodic or parameterized job's children (their statuses are counted). */
  children?: ReadonlyArray<{ status: JobStatus }>;
  /** The summary's modify index; default the job's. */
  modifyIndex?: number;
}

/**
 * A job's summary as Nomad keeps it: per group, its allocations by client
 * status (pending counts as Starting, as Nomad's), plus what is queued; the
 * children by status (zero for a job that has none). `allocs` are the
 * job's allocations (others are skipped). Pure.
 */
export function jobSummary(job: Job, allocs: Iterable<Allocation>, inputs: JobSummaryInputs = {}): JobSummary {
  const summary: Record<string, TaskGroupSummary> = {};
  for (const g of job.groups) summary[g.name] = { Queued: inputs.queued?.[g.name] ?? 0, Complete: 0, Failed: 0, Running: 0, Starting: 0, Lost: 0, Unknown: 0 };
  const field = { pending: 'Starting', running: 'Running', complete: 'Complete', failed: 'Failed', lost: 'Lost' } as const;
  for (const a of allocs) {
    const row = a.jobId === job.id && a.namespace === job.namespace ? summary[a.taskGroup] : undefined;
    if (row) row[field[a.clientStatus]]++;
  }
  const children = { Pending: 0, Running: 0, Dead: 0 };
  const child = { pending: 'Pending', running: 'Running', dead: 'Dead' } as const;
  for (const c of inputs.children ?? []) children[child[c.status]]++;
  return { JobID: job.id, Namespace: job.namespace, Summary: summary, Children: children, CreateIndex: job.createIndex, ModifyIndex: inputs.modifyIndex ?? job.modifyIndex };
}
