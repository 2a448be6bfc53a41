// Warms the code path of a job's registration while the agent idles, so the
// first job a user submits costs what the later ones do: V8 compiles a
// function at its first call, and a job's first parse, validation and
// placement run through a great deal of code (issue 40: the first job cost
// the agent 280-370 ms of CPU against 80-105 ms for the next ones). It runs
// the same functions as PUT /v1/job/:id/plan on a sample job: the Nomad Job
// JSON read and checked, the job registered and evaluated in a scratch
// transaction that is never committed, the plan in the API's shapes. Nothing
// is written: not the store, not the event stream, not a metric.

import type * as api from '../../api/index.js';
import { publicJob, specToNomadJob } from '../../structs/index.js';
import type { JobService } from '../jobs/index.js';
import { planResponse } from './job-plan-shapes.js';
import { specOfNomadJob } from './job-routes.js';
import { sampleJob } from './warm-sample-job.js';

/**
 * Plans the sample job in the default namespace and shapes the answer, then
 * drops it all; returns the answer (for a test). The job is also read back
 * in the full form Nomad's clients and Berth's CLI send (every field, most
 * of them null: specToNomadJob's output), so that repeated rounds leave the
 * reader compiled for both shapes a registration comes in: warmed on the
 * short form alone, V8 optimized the reader for it and the full form then
 * ran slower than cold (in process, 200 full-form registrations after 100
 * rounds: 1.49 ms each against 1.23 after one round).
 */
export function warmJobPath(jobs: JobService, index: number): api.JobPlanResponse {
  const { spec } = specOfNomadJob(sampleJob(), 'default');
  specOfNomadJob(specToNomadJob(publicJob(spec)) as unknown as Record<string, unknown>, 'default');
  const plan = jobs.plan(spec);
  const planned = specToNomadJob(publicJob(spec), { canonicalize: true });
  return planResponse(plan, undefined, planned, { withDiff: true, index });
}
