// The job editor's and the search box's calls to the public API: parse a job
// file (PUT /v1/jobs/parse, HCL with its variables), plan it (PUT
// /v1/job/:id/plan with Diff), register it with the plan's index
// (EnforceIndex, as `job run -check-index`), load a job's source to edit
// (Nomad 1.6's GET /v1/job/:id/submission, else the job's JSON) and
// search (PUT /v1/search/fuzzy, /v1/search).

import type {
  FuzzySearchResponse,
  Job,
  JobPlanResponse,
  JobRegisterResponse,
  JobSubmission,
  SearchResponse,
} from '../../src/api/index.js';
import { ApiError, getJson, sendJson } from './api';

export type { FuzzySearchResponse, JobPlanResponse, SearchResponse };
export type JobFormat = 'hcl' | 'json';

const enc = encodeURIComponent;

/** The format of a job file: JSON when it starts with `{`, else HCL. Pure. */
export function detectFormat(source: string): JobFormat {
  return source.trimStart().startsWith('{') ? 'json' : 'hcl';
}

/** A job file's text with its format and the HCL variables (a var-file body: `name = value` lines). */
export interface JobSource {
  source: string;
  format: JobFormat;
  variables: string;
}

/**
 * The Job a file describes: HCL through the API's parser (its variables
 * with it, as Nomad 1.1's JobsParseRequest), JSON read here (a bare Job or
 * `{ "Job": ... }`, as `job run -json` takes). Throws ApiError INVALID with
 * the parser's message (file, line and column) or JSON's.
 */
export async function parseJob(src: JobSource): Promise<Job> {
  if (src.format === 'hcl') {
    return sendJson<Job>('PUT', '/v1/jobs/parse', { JobHCL: src.source, Variables: src.variables, Canonicalize: true });
  }
  let doc: unknown;
  try {
    doc = JSON.parse(src.source);
  } catch (err) {
    throw new ApiError(400, 'INVALID', `The job is not valid JSON: ${(err as Error).message}`);
  }
  const job = doc && typeof doc === 'object' && 'Job' in doc ? (doc as { Job: unknown }).Job : doc;
  if (!job || typeof job !== 'object' || Array.isArray(job)) throw new ApiError(400, 'INVALID', 'The JSON must be a job object (or {"Job": {...}})');
  return job as Job;
}

const nsOf = (job: Job): string => job.Namespace || 'default';

/** What registering `job` would do (PUT /v1/job/:id/plan, with the diff). */
export function planJob(job: Job): Promise<JobPlanResponse> {
  return sendJson<JobPlanResponse>('PUT', `/v1/job/${enc(job.ID ?? '')}/plan?namespace=${enc(nsOf(job))}`, { Job: job, Diff: true });
}

/**
 * Registers `job` only if it is still at `jobModifyIndex` (0: the job must
 * not exist), the plan's index, as `job run -check-index` does; the source
 * goes with it as Nomad's Submission.
 */
export function runJob(job: Job, jobModifyIndex: number, src: JobSource): Promise<JobRegisterResponse> {
  const submission: JobSubmission = { Source: src.source, Format: src.format === 'hcl' ? 'hcl2' : 'json', VariableFlags: null, Variables: src.format === 'hcl' ? src.variables : '' };
  return sendJson<JobRegisterResponse>('PUT', `/v1/jobs?namespace=${enc(nsOf(job))}`, { Job: job, EnforceIndex: true, JobModifyIndex: jobModifyIndex, Submission: submission });
}

/** The fields of a read job that the server manages; a job file leaves them out. */
const SERVER_FIELDS = ['Status', 'StatusDescription', 'Stable', 'Version', 'SubmitTime', 'CreateIndex', 'ModifyIndex', 'JobModifyIndex', 'Stop', 'NomadTokenID', 'VersionTag'] as const;

/**
 * A job's source to edit: what was submitted, when the API keeps it (Nomad
 * 1.6's GET /v1/job/:id/submission), else the job as JSON without the
 * server's fields.
 */
export async function loadJobSource(ns: string, id: string): Promise<JobSource> {
  const q = `?namespace=${enc(ns)}`;
  try {
    const sub = await getJson<JobSubmission>(`/v1/job/${enc(id)}/submission${q}`);
    if (sub.Source) return { source: sub.Source, format: sub.Format === 'json' ? 'json' : 'hcl', variables: sub.Variables ?? '' };
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
  }
  const job = await getJson<Record<string, unknown>>(`/v1/job/${enc(id)}${q}`);
  for (const f of SERVER_FIELDS) delete job[f];
  return { source: `${JSON.stringify(job, null, 2)}\n`, format: 'json', variables: '' };
}

/** Names containing `text` in every context and namespace (PUT /v1/search/fuzzy). */
export function fuzzySearch(text: string, signal?: AbortSignal): Promise<FuzzySearchResponse> {
  return sendJson<FuzzySearchResponse>('PUT', '/v1/search/fuzzy?namespace=*', { Text: text, Context: 'all' }, signal);
}

/** IDs starting with `prefix` in every context and namespace (PUT /v1/search). */
export function prefixSearch(prefix: string, signal?: AbortSignal): Promise<SearchResponse> {
  return sendJson<SearchResponse>('PUT', '/v1/search?namespace=*', { Prefix: prefix, Context: 'all' }, signal);
}
