// What a job registration request says, read without the state: Nomad's
// JobRegisterRequest body (and the query's namespace) -> Berth's checked
// spec, where each of its paths came from in the body, and the
// `EnforceIndex` check. Pure, so that the API's front workers
// (api-workers/) read a registration exactly as the route does, off the
// main thread. job-routes.ts's register, plan and validate read through it.

import {
  atNomadPaths,
  JobValidationError,
  parseJobSpec,
  readNomadJobQuick,
  type JobSpec,
} from '../../structs/index.js';
import { ApiError } from './api-error.js';
import { objectBody } from './route-context.js';

type Query = Record<string, unknown>;

export const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * The namespace a job write is for, as Nomad's namespaceForJob picks it:
 * the query's, then the body's WriteRequest, then the job's own, then default.
 */
export function jobNamespace(query: Query, body: Record<string, unknown>, job: Record<string, unknown>): string {
  for (const v of [query['namespace'], body['Namespace'], job['Namespace']]) if (typeof v === 'string' && v !== '') return v;
  return 'default';
}

/** A job read from Nomad's Job JSON, and where each of its canonical paths came from. */
export interface ReadJob {
  spec: JobSpec;
  /**
   * Canonical path -> Nomad path in the request body (`Job.TaskGroups[0].Count`):
   * the job read again with paths at the first call (only a problem to place
   * needs them), the same Map after.
   */
  origins: () => Map<string, string>;
}

/**
 * Nomad's Job JSON -> Berth's checked spec in `namespace`. Throws
 * JobValidationError (400) listing every problem at its Nomad path: a field
 * Berth does not support, or the spec's own problems. With `consume`, `job`
 * is the caller's to give up (parsed for this read): it is read in place and
 * left changed (nomadJobToSpec), and kept for `origins` (nothing may change
 * it after). Read without paths first (readNomadJobQuick): a registration
 * that checks makes none.
 */
export function specOfNomadJob(job: Record<string, unknown>, namespace: string, opts: { consume?: boolean } = {}): ReadJob {
  // Read as the body holds it, so that paths name the field in the body: `Job.TaskGroups[0].Count`.
  const read = readNomadJobQuick({ Job: job }, opts);
  const origins = (): Map<string, string> => read.full().origins;
  if (!read.clean) throw new JobValidationError(read.full().problems);
  try {
    return { spec: parseJobSpec({ ...read.input, namespace }), origins };
  } catch (err) {
    throw nomadPathsOf(err, origins);
  }
}

/** A JobValidationError with its problems at their Nomad paths (what the state refused: unknown volumes, a plugin ID taken); anything else as it is. */
export function nomadPathsOf(err: unknown, origins: () => Map<string, string>): unknown {
  return err instanceof JobValidationError ? new JobValidationError(atNomadPaths({ origins: origins() }, err.problems)) : err;
}

/** The `Job` of a request body; ApiError INVALID (Nomad's words) when there is none or it has no ID, or not the path's. */
export function requestJob(body: Record<string, unknown>, idFromPath: string | undefined, words: { noId: string; mismatch: string }): Record<string, unknown> {
  const job = body['Job'];
  if (!isObj(job)) throw new ApiError('INVALID', 'Job must be specified', { field: 'Job' });
  if (typeof job['ID'] !== 'string' || job['ID'] === '') throw new ApiError('INVALID', words.noId, { field: 'Job.ID' });
  if (idFromPath !== undefined && job['ID'] !== idFromPath) throw new ApiError('INVALID', words.mismatch, { field: 'Job.ID' });
  return job;
}

/** A registration as PUT/POST /v1/jobs (or /v1/job/:id) asks it. */
export interface Registration extends ReadJob {
  /** `EnforceIndex`: the job modify index the job must have (0: must not exist). */
  checkIndex?: number;
}

/**
 * Reads Nomad's JobRegisterRequest body, a request's own (parsed for it):
 * its `Job` is read in place and left changed. Throws ApiError INVALID or
 * JobValidationError in Nomad's words, as the route answers them.
 */
export function readRegistration(rawBody: unknown, query: Query, idFromPath?: string): Registration {
  const body = objectBody(rawBody);
  const job = requestJob(body, idFromPath, { noId: "Job ID hasn't been provided", mismatch: 'Job ID does not match name' });
  const read = specOfNomadJob(job, jobNamespace(query, body, job), { consume: true });
  if (body['EnforceIndex'] !== true) return read;
  const raw = body['JobModifyIndex'] ?? 0;
  if (typeof raw !== 'number' || !Number.isSafeInteger(raw) || raw < 0) throw new ApiError('INVALID', 'JobModifyIndex must be a job modify index (a whole number, 0 for a new job)', { field: 'JobModifyIndex' });
  return { ...read, checkIndex: raw };
}
