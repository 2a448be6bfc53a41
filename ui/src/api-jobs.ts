// The jobs pages' door to the API: Nomad's job, version, deployment and
// evaluation routes, and the writes a job page makes (start, revert,
// promote, fail). Shapes are Nomad's, from src/api (types only).

import type {
  Deployment as NomadDeployment,
  DeploymentState as NomadDeploymentState,
  DeploymentUpdateResponse,
  FieldDiff as NomadFieldDiff,
  JobDiff as NomadJobDiff,
  JobRegisterResponse,
  JobVersionsResponse,
  ObjectDiff as NomadObjectDiff,
  TaskGroup as NomadTaskGroup,
  Task as NomadTask,
  TaskGroupSummary,
} from '../../src/api/index.js';
import { getJson, sendJson, type AllocStub, type Evaluation, type Job, type JobStub } from './api';

export type Deployment = NomadDeployment;
export type DeploymentGroup = NomadDeploymentState;
export type JobDiff = NomadJobDiff;
export type ObjectDiff = NomadObjectDiff;
export type FieldDiff = NomadFieldDiff;
export type TaskGroup = NomadTaskGroup;
export type Task = NomadTask;
export type GroupSummary = TaskGroupSummary;
export type { Job, JobStub, AllocStub, Evaluation };

const enc = encodeURIComponent;
const q = (ns: string): string => `namespace=${enc(ns)}`;

/** The job's path under /ui. */
export function jobHref(ns: string | undefined, id: string, sub = ''): string {
  return `/ui/jobs/${enc(ns ?? 'default')}/${enc(id)}${sub}`;
}

export const jobsApi = {
  /** Every job in every namespace, each with its JobSummary (allocations by state per group): one read for the whole list. */
  list: () => getJson<JobStub[]>('/v1/jobs?namespace=*'),
  job: (ns: string, id: string) => getJson<Job>(`/v1/job/${enc(id)}?${q(ns)}`),
  allocations: (ns: string, id: string) => getJson<AllocStub[]>(`/v1/job/${enc(id)}/allocations?all=true&${q(ns)}`),
  evaluations: (ns: string, id: string) => getJson<Evaluation[]>(`/v1/job/${enc(id)}/evaluations?${q(ns)}`),
  /** The kept versions, newest first, with each one's diff against the one before it (`Diffs[i]` for `Versions[i]`; the oldest has none). */
  versions: (ns: string, id: string) => getJson<JobVersionsResponse>(`/v1/job/${enc(id)}/versions?diffs=true&${q(ns)}`),
  /** The job's latest deployment, or null. */
  deployment: (ns: string, id: string) => getJson<Deployment | null>(`/v1/job/${enc(id)}/deployment?${q(ns)}`),
};

export const jobActions = {
  /**
   * Registers `version` again as a new version; `current` is the version the
   * page showed, so a change made meanwhile is refused (EnforcePriorVersion).
   */
  revert: (ns: string, id: string, version: number, current: number) =>
    sendJson<JobRegisterResponse>('PUT', `/v1/job/${enc(id)}/revert?${q(ns)}`, { JobID: id, JobVersion: version, EnforcePriorVersion: current }),
  /** Runs a stopped job again, as Nomad's UI does: the job as it is, registered with Stop false. */
  async start(ns: string, id: string): Promise<JobRegisterResponse> {
    const job = await jobsApi.job(ns, id);
    return sendJson<JobRegisterResponse>('POST', `/v1/job/${enc(id)}?${q(ns)}`, { Job: { ...job, Stop: false } });
  },
  promote: (id: string) => sendJson<DeploymentUpdateResponse>('PUT', `/v1/deployment/promote/${enc(id)}`, { DeploymentID: id, All: true }),
  fail: (id: string) => sendJson<DeploymentUpdateResponse>('PUT', `/v1/deployment/fail/${enc(id)}`, { DeploymentID: id }),
};
