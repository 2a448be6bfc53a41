// Jobs over HTTP (evaluations: eval-routes.ts; allocations: alloc-routes.ts).

import type { FastifyInstance } from 'fastify';
import { isNomadJobJson, nomadJobToSpec, parseJobSpec, publicJob, JobValidationError, type Job } from '../../structs/index.js';
import { problemsAgainstState } from '../jobs/index.js';
import { rowKey } from '../state/index.js';
import { ApiError } from './api-error.js';
import { namespaceOf, objectBody, type RouteContext } from './route-context.js';
import { blockingRead, parseBlockingQuery } from './blocking.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };

function inNamespace(ns: string): (row: { namespace: string }) => boolean {
  return ns === '*' ? () => true : (row) => row.namespace === ns;
}

function withPrefix(query: Query): (row: { id: string }) => boolean {
  const prefix = query['prefix'] ?? '';
  return (row) => row.id.startsWith(prefix);
}

/** A job sent back to a user: mount flags redacted. */
function jobOut(job: Job): Job {
  return publicJob(job);
}

/**
 * The body of a job registration: `{ job: spec }`, the spec itself, or
 * Nomad's API form (`{"Job": {...}}`, PascalCase), translated; a Nomad field
 * Berth does not support is refused by name.
 */
function specFrom(body: unknown): unknown {
  const obj = objectBody(body);
  if (isNomadJobJson(obj)) {
    const t = nomadJobToSpec(obj);
    if (t.problems.length) throw new JobValidationError(t.problems);
    return t.input;
  }
  return 'job' in obj && obj['job'] && typeof obj['job'] === 'object' ? obj['job'] : obj;
}

/** Nomad's `EnforceIndex` + `JobModifyIndex` (or Berth's `checkIndex`): register only if the job is still at that index. */
function checkIndexOf(body: unknown): { checkIndex?: number } {
  const obj = objectBody(body);
  const raw = obj['checkIndex'] ?? (obj['EnforceIndex'] ? (obj['JobModifyIndex'] ?? 0) : undefined);
  if (raw === undefined) return {};
  if (typeof raw !== 'number' || !Number.isSafeInteger(raw) || raw < 0) throw new ApiError('INVALID', 'checkIndex must be a job modify index (a whole number, 0 for a new job)', { field: 'checkIndex' });
  return { checkIndex: raw };
}

export function registerJobRoutes(app: FastifyInstance, { deps, signalOf }: RouteContext): void {
  const { store, jobs } = deps;

  app.get<{ Querystring: Query }>('/v1/jobs', { config: { access: 'read' } }, async (req, reply) => {
    const ns = namespaceOf(req.query);
    const { index, result } = await blockingRead(store, ['jobs'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      snap.list('jobs', { filter: (j) => inNamespace(ns)(j) && withPrefix(req.query)(j) }).map(jobOut),
    );
    reply.header('X-Berth-Index', String(index));
    return result;
  });

  const register = async (body: unknown, idFromPath?: string): Promise<Record<string, unknown>> => {
    const spec = specFrom(body);
    if (idFromPath !== undefined && (spec as Record<string, unknown>)['id'] !== idFromPath) {
      throw new ApiError('INVALID', `the job's id must match the path ("${idFromPath}")`, { field: 'id' });
    }
    const { job, evaluation, index } = await jobs.register(spec, checkIndexOf(body));
    return { job: jobOut(job), evaluation, evalId: evaluation.id, index };
  };

  app.post('/v1/jobs', { config: { access: 'write' } }, async (req, reply) => {
    const out = await register(req.body);
    reply.header('X-Berth-Index', String(out['index']));
    return out;
  });

  app.post<{ Params: Params }>('/v1/job/:id', { config: { access: 'write' } }, async (req, reply) => {
    const out = await register(req.body, req.params.id);
    reply.header('X-Berth-Index', String(out['index']));
    return out;
  });

  // Nomad's job plan: what registering the job would do, computed and thrown away.
  const plan = async (req: { body: unknown; params: Params }): Promise<unknown> => {
    const spec = specFrom(req.body);
    if ((spec as Record<string, unknown>)['id'] !== req.params.id) {
      throw new ApiError('INVALID', `the job's id must match the path ("${req.params.id}")`, { field: 'id' });
    }
    return jobs.plan(spec);
  };
  app.put<{ Params: Params }>('/v1/job/:id/plan', { config: { access: 'write' } }, plan);
  app.post<{ Params: Params }>('/v1/job/:id/plan', { config: { access: 'write' } }, plan);

  app.post('/v1/validate/job', { config: { access: 'write' } }, async (req) => {
    const spec = parseJobSpec(specFrom(req.body));
    const problems = problemsAgainstState(spec, store.snapshot());
    if (problems.length) throw new JobValidationError(problems);
    return { valid: true, job: publicJob(spec) };
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/job/:id', { config: { access: 'read' } }, async (req, reply) => {
    const ns = namespaceOf(req.query);
    const { index, result } = await blockingRead(store, ['jobs'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      snap.get('jobs', rowKey(ns, req.params.id)),
    );
    if (!result) throw new ApiError('NOT_FOUND', `job "${req.params.id}" not found in namespace "${ns}"`);
    reply.header('X-Berth-Index', String(index));
    return jobOut(result);
  });

  app.delete<{ Params: Params; Querystring: Query }>('/v1/job/:id', { config: { access: 'write' } }, async (req, reply) => {
    const purge = req.query['purge'] === 'true' || req.query['purge'] === '1';
    const { evaluation, index } = await jobs.stop(namespaceOf(req.query), req.params.id, { purge });
    reply.header('X-Berth-Index', String(index));
    return { evaluation, evalId: evaluation.id, index };
  });

  // Launch a periodic job now, whatever its schedule (Nomad's periodic force).
  app.post<{ Params: Params; Querystring: Query }>('/v1/job/:id/periodic/force', { config: { access: 'write' } }, async (req, reply) => {
    const out = await jobs.launchPeriodic(namespaceOf(req.query), req.params.id, { force: true });
    reply.header('X-Berth-Index', String(out.index));
    if ('skipped' in out) throw new ApiError('CONFLICT', `no launch: ${out.skipped}`);
    return { job: jobOut(out.job), jobId: out.job.id, evaluation: out.evaluation, evalId: out.evaluation.id, index: out.index };
  });

  // Dispatch a parameterized job: `{ payload (base64), meta, idPrefixTemplate }`, or Nomad's `{ Payload, Meta, IdPrefixTemplate }`.
  app.post<{ Params: Params; Querystring: Query }>('/v1/job/:id/dispatch', { config: { access: 'write' } }, async (req, reply) => {
    const body = req.body === undefined ? {} : objectBody(req.body);
    const payload = body['payload'] ?? body['Payload'];
    const meta = body['meta'] ?? body['Meta'];
    const template = body['idPrefixTemplate'] ?? body['IdPrefixTemplate'];
    if (payload !== undefined && payload !== null && (typeof payload !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(payload))) {
      throw new ApiError('INVALID', 'payload must be base64', { field: 'payload' });
    }
    if (meta !== undefined && meta !== null && (typeof meta !== 'object' || Array.isArray(meta) || Object.values(meta).some((v) => typeof v !== 'string'))) {
      throw new ApiError('INVALID', 'meta must map strings to strings', { field: 'meta' });
    }
    if (template !== undefined && template !== null && template !== '' && typeof template !== 'string') throw new ApiError('INVALID', 'idPrefixTemplate must be a string', { field: 'idPrefixTemplate' });
    const out = await jobs.dispatch(namespaceOf(req.query), req.params.id, {
      ...(typeof payload === 'string' && payload ? { payload: Buffer.from(payload, 'base64') } : {}),
      ...(meta ? { meta: meta as Record<string, string> } : {}),
      ...(typeof template === 'string' && template ? { idPrefixTemplate: template } : {}),
    });
    reply.header('X-Berth-Index', String(out.index));
    return { job: jobOut(out.job), dispatchedJobId: out.job.id, evaluation: out.evaluation, evalId: out.evaluation.id, index: out.index };
  });

  // Garbage collection now, regardless of the age and count limits (berth system gc); management only.
  app.put('/v1/system/gc', { config: { access: 'write' } }, async (_req, reply) => {
    if (!deps.gc) throw new ApiError('UNAVAILABLE', 'this server runs no garbage collector');
    const out = await deps.gc.collect({ force: true });
    reply.header('X-Berth-Index', String(out.index));
    return out;
  });
}
