// Small pieces of Nomad's HTTP conventions the jobs routes share: a query
// flag read as Go's strconv.ParseBool reads it, and the QueryMeta Nomad's
// server writes into a write's answer.

import type { JobRegisterResponse } from '../../api/index.js';
import { jobModifyIndex, type Job } from '../../structs/index.js';
import { ApiError } from './api-error.js';

type Query = Record<string, string | undefined>;

/** A query flag as Go's strconv.ParseBool reads it; undefined when absent. Throws ApiError INVALID naming it. */
export function boolParam(query: Query, name: string): boolean | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
  throw new ApiError('INVALID', `Failed to parse value of "${name}" (${raw}) as a bool: strconv.ParseBool: parsing "${raw}": invalid syntax`, { field: name });
}

/** The QueryMeta Nomad's server writes into a write's answer (this server always knows its leader when it answers). */
export const queryMeta = (index: number): { Index: number; LastContact: number; KnownLeader: boolean; NextToken: string } => ({
  Index: index,
  LastContact: 0,
  KnownLeader: true,
  NextToken: '',
});

/** PUT/POST /v1/jobs's JobRegisterResponse for a registration written at `out.index`. */
export function registerResponse(out: { index: number; evaluation: { id: string; createIndex: number }; job: Job }): JobRegisterResponse {
  return { EvalID: out.evaluation.id, EvalCreateIndex: out.evaluation.createIndex, JobModifyIndex: jobModifyIndex(out.job), Warnings: '', ...queryMeta(out.index) };
}
