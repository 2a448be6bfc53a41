// Launching children of periodic and parameterized jobs, Nomad's routes:
// PUT/POST /v1/job/:id/dispatch (JobDispatchRequest -> JobDispatchResponse)
// and PUT/POST /v1/job/:id/periodic/force (-> PeriodicForceResponse).

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type * as api from '../../api/index.js';
import { ApiError } from './api-error.js';
import { queryOptions, setIndexHeaders } from './nomad-read.js';
import { objectBody, type RouteContext } from './route-context.js';

type Params = { id: string };

/** A dispatch body's field: absent or null is undefined; anything else must pass `ok`, else ApiError INVALID naming it. */
function field<T>(body: Record<string, unknown>, name: string, ok: (v: unknown) => v is T, what: string): T | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (!ok(v)) throw new ApiError('INVALID', `${name} must be ${what}`, { field: name });
  return v;
}

const isBase64 = (v: unknown): v is string => typeof v === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(v);
const isStringMap = (v: unknown): v is Record<string, string> =>
  !!v && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');
const isString = (v: unknown): v is string => typeof v === 'string';

export function registerJobChildRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { jobs } = ctx.deps;

  const dispatch = async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply): Promise<api.JobDispatchResponse> => {
    const body = req.body === undefined || req.body === null || req.body === '' ? {} : objectBody(req.body);
    const jobId = field(body, 'JobID', isString, 'a string');
    if (jobId && jobId !== req.params.id) throw new ApiError('INVALID', 'Job ID does not match', { field: 'JobID' });
    const payload = field(body, 'Payload', isBase64, 'base64');
    const meta = field(body, 'Meta', isStringMap, 'a map of strings to strings');
    const template = field(body, 'IdPrefixTemplate', isString, 'a string');
    const out = await jobs.dispatch(queryOptions(req.query as Record<string, unknown>).namespace, req.params.id, {
      ...(payload ? { payload: Buffer.from(payload, 'base64') } : {}),
      ...(meta ? { meta } : {}),
      ...(template ? { idPrefixTemplate: template } : {}),
    });
    setIndexHeaders(ctx, reply, out.index);
    return { DispatchedJobID: out.job.id, EvalID: out.evaluation.id, EvalCreateIndex: out.evaluation.createIndex, JobCreateIndex: out.job.createIndex, Index: out.index };
  };
  app.put<{ Params: Params }>('/v1/job/:id/dispatch', { config: { access: 'write' } }, dispatch);
  app.post<{ Params: Params }>('/v1/job/:id/dispatch', { config: { access: 'write' } }, dispatch);

  // Launch a periodic job now, whatever its schedule and prohibit_overlap (Nomad's periodic force).
  const force = async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply): Promise<api.PeriodicForceResponse> => {
    const out = await jobs.launchPeriodic(queryOptions(req.query as Record<string, unknown>).namespace, req.params.id, { force: true });
    setIndexHeaders(ctx, reply, out.index);
    if ('skipped' in out) throw new ApiError('CONFLICT', `no launch: ${out.skipped}`);
    return { EvalID: out.evaluation.id, EvalCreateIndex: out.evaluation.createIndex, Index: out.index };
  };
  app.put<{ Params: Params }>('/v1/job/:id/periodic/force', { config: { access: 'write' } }, force);
  app.post<{ Params: Params }>('/v1/job/:id/periodic/force', { config: { access: 'write' } }, force);
}
