// Jobs as a Nomad client sends them: a canonical job spec (Berth's job file
// as JSON) written as Nomad's Job JSON, in the registration body of PUT
// /v1/jobs, the one form the API takes.

import type * as api from '../../src/api/index.js';
import { parseJobSpec, specToNomadJob } from '../../src/structs/index.js';

/** A canonical spec (defaults filled by the spec parser) as Nomad's Job. Throws JobValidationError for a malformed spec. */
export function nomadJob(spec: Record<string, unknown>): api.Job {
  return specToNomadJob(parseJobSpec(spec));
}

/**
 * The body of PUT /v1/jobs for `spec`; `checkIndex` registers only at that
 * job modify index (Nomad's EnforceIndex and JobModifyIndex).
 */
export function registration(spec: Record<string, unknown>, opts: { checkIndex?: number } = {}): api.JobRegisterRequest {
  return { Job: nomadJob(spec), ...(opts.checkIndex !== undefined ? { EnforceIndex: true, JobModifyIndex: opts.checkIndex } : {}) };
}
