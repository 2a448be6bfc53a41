// The jobs route family, Nomad's (command/agent/job_endpoint.go): list,
// register, parse, read, stop, plan, validate, evaluate and summary,
// answering in Nomad's shapes (src/api/jobs.ts); dispatch and periodic
// force are in job-child-routes.ts, versions, revert and scale in
// job-version-routes.ts. A request's Job
// is Nomad's Job JSON, read with nomadJobToSpec (a field Berth lacks is
// refused by name at its Nomad path). Allocations: alloc-routes.ts;
// evaluations: eval-routes.ts.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type * as api from '../../api/index.js';
import {
  atNomadPaths,
  JobValidationError,
  jobModifyIndex,
  jobToNomad,
  nextLaunch,
  publicJob,
  specOfJob,
  specToNomadJob,
  type JobPlan,
  type JobProblem,
  type JobSpec,
} from '../../structs/index.js';
import { jobSummaryIn, problemsAgainstState } from '../jobs/index.js';
import { rowKey } from '../state/index.js';
import { ApiError } from './api-error.js';
import { objectBody, type RouteContext } from './route-context.js';
import { isObj, jobNamespace, nomadPathsOf, readRegistration, requestJob, specOfNomadJob } from './job-register-input.js';

export { specOfNomadJob };
import { registerJobChildRoutes } from './job-child-routes.js';
import { JobListCache } from './job-list-cache.js';
import { replayReadBody } from './main-fast-register.js';
import { planResponse } from './job-plan-shapes.js';
import { registerJobVersionRoutes } from './job-version-routes.js';
import { boolParam, queryMeta, registerResponse } from './job-params.js';
import { listPage, nomadRead, queryOptions, setIndexHeaders } from './nomad-read.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };


export function registerJobRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps } = ctx;
  const { store, jobs } = deps;

  // GET /v1/jobs: every job of the namespace (`*`: all) as a JobListStub with its summary.
  const lists = new JobListCache();
  app.get<{ Querystring: Query }>('/v1/jobs', { config: { access: 'read' } }, async (req, reply) => {
    const meta = boolParam(req.query, 'meta') ?? false;
    const list = await nomadRead(ctx, req, reply, ['jobs', 'allocations'], (snap, opts) => lists.list(snap, opts.namespace, opts.prefix, meta));
    const q = queryOptions(req.query);
    // The whole list, as counted: its JSON is made once for every reader of the same state.
    if (q.filter === undefined && q.perPage === undefined && q.nextToken === undefined && !q.reverse) {
      void reply.type('application/json; charset=utf-8');
      return list.json();
    }
    return listPage(list.rows, req, reply);
  });

  // PUT/POST /v1/jobs and /v1/job/:id: Nomad's JobRegisterRequest -> JobRegisterResponse.
  const register = async (req: FastifyRequest, reply: FastifyReply, idFromPath?: string): Promise<api.JobRegisterResponse> => {
    const { spec, origins, checkIndex } = readRegistration(req.body, req.query as Query, idFromPath);
    const out = await jobs.register(spec, checkIndex === undefined ? {} : { checkIndex }).catch((err: unknown) => {
      throw nomadPathsOf(err, origins);
    });
    setIndexHeaders(ctx, reply, out.index);
    return registerResponse(out);
  };
  for (const method of ['put', 'post'] as const) {
    // preParsing: a request the main thread's fast path read and gave back is parsed from what it read (main-fast-register.ts).
    app[method]('/v1/jobs', { config: { access: 'write' }, preParsing: replayReadBody }, (req, reply) => register(req, reply));
    app[method]<{ Params: Params }>('/v1/job/:id', { config: { access: 'write' }, preParsing: replayReadBody }, (req, reply) => register(req, reply, req.params.id));
  }

  // PUT/POST /v1/jobs/parse: an HCL job file -> Nomad's Job JSON, through Berth's job file pipeline (no file functions, no environment).
  const parse = async (req: FastifyRequest): Promise<api.Job> => {
    const body = objectBody(req.body);
    const hcl = body['JobHCL'];
    if (typeof hcl !== 'string' || hcl === '') throw new ApiError('INVALID', 'Job spec is empty', { field: 'JobHCL' });
    const variables = typeof body['Variables'] === 'string' && body['Variables'] !== '' ? [{ file: 'variables.hcl', text: body['Variables'] }] : [];
    const { parseJobFile, SpecFileError } = await import('../../spec-files/index.js');
    try {
      const parsed = await parseJobFile('input.hcl', hcl, { vars: [], varFiles: variables, env: {}, allowFS: false });
      return specToNomadJob(publicJob(parsed.job), { canonicalize: body['Canonicalize'] === true });
    } catch (err) {
      if (err instanceof SpecFileError) {
        throw new ApiError('INVALID', `Failed to parse job: ${err.problems.map((p) => `${p.file}:${p.line}:${p.column}: ${p.field ? `${p.field}: ` : ''}${p.message}`).join('; ')}`, { problems: err.problems });
      }
      throw err;
    }
  };
  app.put('/v1/jobs/parse', { config: { access: 'read' } }, parse);
  app.post('/v1/jobs/parse', { config: { access: 'read' } }, parse);

  // GET /v1/job/:id: the job as Nomad's Job.
  app.get<{ Params: Params; Querystring: Query }>('/v1/job/:id', { config: { access: 'read' } }, async (req, reply) => {
    const found = await nomadRead(ctx, req, reply, ['jobs'], (snap, opts) => {
      const job = snap.get('jobs', rowKey(opts.namespace, req.params.id));
      if (!job) return undefined;
      const kept = snap.get('jobVersions', rowKey(job.namespace, job.id, String(job.version).padStart(10, '0')));
      return jobToNomad(job, { stable: kept?.stable ?? false });
    });
    if (!found) throw new ApiError('NOT_FOUND', 'job not found');
    return found;
  });

  // DELETE /v1/job/:id (`purge`): JobDeregisterResponse.
  app.delete<{ Params: Params; Querystring: Query }>('/v1/job/:id', { config: { access: 'write' } }, async (req, reply): Promise<api.JobDeregisterResponse> => {
    const purge = boolParam(req.query, 'purge') ?? false;
    boolParam(req.query, 'global');
    const out = await jobs.stop(queryOptions(req.query).namespace, req.params.id, { purge });
    setIndexHeaders(ctx, reply, out.index);
    return { EvalID: out.evaluation.id, EvalCreateIndex: out.evaluation.createIndex, JobModifyIndex: out.index, VolumeEvalID: '', VolumeEvalIndex: 0, ...queryMeta(out.index) };
  });

  // PUT/POST /v1/job/:id/plan: what registering the job would do, computed and thrown away.
  const plan = async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply): Promise<api.JobPlanResponse> => {
    const body = objectBody(req.body);
    const job = requestJob(body, req.params.id, { noId: 'Job must have a valid ID', mismatch: 'Job ID does not match' });
    const { spec, origins } = specOfNomadJob(job, jobNamespace(req.query as Query, body, job));
    const snap = store.snapshot();
    const prev = snap.get('jobs', rowKey(spec.namespace, spec.id));
    let result: JobPlan;
    try {
      result = jobs.plan(spec);
    } catch (err) {
      throw nomadPathsOf(err, origins);
    }
    const p = spec.periodic;
    const next = p?.enabled ? nextLaunch([...(p.cron ? [p.cron] : []), ...(p.crons ?? [])], p.timeZone, Date.now()) : undefined;
    setIndexHeaders(ctx, reply, snap.index);
    // Both sides as the same writer writes them, so the diff shows what changed and nothing of the writing.
    const planned = (j: JobSpec): api.Job => specToNomadJob(publicJob(j), { canonicalize: true });
    return planResponse(result, prev ? planned(specOfJob(prev)) : undefined, planned(spec), {
      withDiff: body['Diff'] !== false,
      index: snap.index,
      ...(next !== undefined ? { nextLaunch: next } : {}),
    });
  };
  app.put<{ Params: Params }>('/v1/job/:id/plan', { config: { access: 'write' } }, plan);
  app.post<{ Params: Params }>('/v1/job/:id/plan', { config: { access: 'write' } }, plan);

  // PUT/POST /v1/validate/job: 200 with the problems listed (Nomad's JobValidateResponse), not an error.
  const validate = async (req: FastifyRequest): Promise<api.JobValidateResponse> => {
    const body = objectBody(req.body);
    const job = body['Job'];
    if (!isObj(job)) throw new ApiError('INVALID', 'Job must be specified', { field: 'Job' });
    let problems: JobProblem[] = [];
    try {
      const { spec, origins } = specOfNomadJob(job, jobNamespace(req.query as Query, body, job));
      const against = problemsAgainstState(spec, store.snapshot());
      problems = against.length ? atNomadPaths({ origins: origins() }, against) : [];
    } catch (err) {
      if (!(err instanceof JobValidationError)) throw err;
      problems = err.problems;
    }
    const errors = problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message));
    return {
      DriverConfigValidated: true,
      ValidationErrors: errors.length ? errors : null,
      Error: errors.length ? `${errors.length} error${errors.length === 1 ? '' : 's'} occurred:\n${errors.map((e) => `\t* ${e}`).join('\n')}\n\n` : '',
      Warnings: '',
    };
  };
  app.put('/v1/validate/job', { config: { access: 'write' } }, validate);
  app.post('/v1/validate/job', { config: { access: 'write' } }, validate);

  // PUT/POST /v1/job/:id/evaluate: a new evaluation of the job now (JobRegisterResponse).
  const evaluate = async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply): Promise<api.JobRegisterResponse> => {
    const body = req.body === undefined || req.body === null || req.body === '' ? {} : objectBody(req.body);
    if (Object.keys(body).length) {
      if (typeof body['JobID'] !== 'string' || body['JobID'] === '') throw new ApiError('INVALID', 'Job ID must be specified', { field: 'JobID' });
      if (body['JobID'] !== req.params.id) throw new ApiError('INVALID', 'JobID not same as job name', { field: 'JobID' });
    }
    // Nomad's api.EvalOptions: {"EvalOptions": {"ForceReschedule": true}}.
    const evalOptions = body['EvalOptions'];
    if (evalOptions !== undefined && evalOptions !== null && (typeof evalOptions !== 'object' || Array.isArray(evalOptions))) throw new ApiError('INVALID', 'EvalOptions must be an object', { field: 'EvalOptions' });
    const force = (evalOptions as Record<string, unknown> | null | undefined)?.['ForceReschedule'];
    if (force !== undefined && typeof force !== 'boolean') throw new ApiError('INVALID', 'EvalOptions.ForceReschedule must be true or false', { field: 'EvalOptions.ForceReschedule' });
    const out = await jobs.forceEvaluate(queryOptions(req.query as Query).namespace, req.params.id, { forceReschedule: force === true });
    setIndexHeaders(ctx, reply, out.index);
    return { EvalID: out.evaluation.id, EvalCreateIndex: out.evaluation.createIndex, JobModifyIndex: jobModifyIndex(out.job), Warnings: '', ...queryMeta(out.index) };
  };
  app.put<{ Params: Params }>('/v1/job/:id/evaluate', { config: { access: 'write' } }, evaluate);
  app.post<{ Params: Params }>('/v1/job/:id/evaluate', { config: { access: 'write' } }, evaluate);

  // GET /v1/job/:id/summary: the job's allocations per group by state (JobSummary).
  app.get<{ Params: Params; Querystring: Query }>('/v1/job/:id/summary', { config: { access: 'read' } }, async (req, reply) => {
    const found = await nomadRead(ctx, req, reply, ['jobs', 'allocations'], (snap, opts) => jobSummaryIn(snap, opts.namespace, req.params.id));
    if (!found) throw new ApiError('NOT_FOUND', 'job not found');
    return found;
  });

  registerJobChildRoutes(app, ctx);
  registerJobVersionRoutes(app, ctx);
}
