// Allocations over HTTP in Nomad's paths and shapes (src/api/allocations.ts):
// the list (GET /v1/allocations), one allocation (GET /v1/allocation/:id),
// its service checks, its stop, and the allocations of a job, a node, an
// evaluation and a deployment.
// Reads are Nomad's blocking queries (nomad-read.ts); writes answer with
// X-Nomad-Index.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type * as api from '../../api/index.js';
import type { Allocation } from '../../structs/index.js';
import { rowKey, type StateReader } from '../state/index.js';
import { ApiError } from './api-error.js';
import { AllocShaper, checkStatuses, DEFAULT_STUB_FIELDS, type StubFields } from './alloc-shapes.js';
import { createIndexToken, normalizeNextToken } from './create-order.js';
import { inNamespace, listPage, nomadRead, setIndexHeaders } from './nomad-read.js';
import type { RouteContext } from './route-context.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };

/**
 * A boolean query parameter as Go's strconv.ParseBool reads it; undefined
 * when absent. Throws ApiError INVALID naming it otherwise.
 */
export function boolParam(query: Query, name: string): boolean | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(raw)) return false;
  throw new ApiError('INVALID', `${name} must be a boolean, got "${raw}"`, { field: name });
}

const byCreateIndex = (a: Allocation, b: Allocation): number => a.createIndex - b.createIndex || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The fields of a list's stubs (`resources`, `task_states`). Throws ApiError INVALID. */
function stubFields(query: Query): StubFields {
  return {
    resources: boolParam(query, 'resources') ?? DEFAULT_STUB_FIELDS.resources,
    taskStates: boolParam(query, 'task_states') ?? DEFAULT_STUB_FIELDS.taskStates,
  };
}

export function registerAllocRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { store, jobs } = ctx.deps;
  const shaper = (snap: StateReader): AllocShaper => new AllocShaper(snap, store);

  // Nomad's Alloc.List: in `namespace` (`*`: all), by ID prefix, ordered by create index (by ID with a prefix).
  app.get<{ Querystring: Query }>('/v1/allocations', { config: { access: 'read' } }, async (req, reply) => {
    const fields = stubFields(req.query);
    normalizeNextToken(req);
    const withPrefix = (req.query['prefix'] ?? '') !== '';
    const rows = await nomadRead(ctx, req, reply, ['allocations'], (snap, opts) => {
      const inNs = inNamespace(opts.namespace);
      const allocs = snap.list('allocations', { filter: (a) => inNs(a) && a.id.startsWith(opts.prefix) });
      if (!withPrefix) allocs.sort(byCreateIndex);
      const s = shaper(snap);
      return allocs.map((a) => s.stub(a, fields));
    });
    return listPage(rows, req, reply, withPrefix ? undefined : createIndexToken);
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/allocation/:id', { config: { access: 'read' } }, async (req, reply) => {
    const out = await nomadRead(ctx, req, reply, ['allocations'], (snap) => {
      const a = snap.get('allocations', rowKey(req.params.id));
      return a && shaper(snap).full(a);
    });
    if (!out) throw new ApiError('NOT_FOUND', 'alloc not found');
    return out;
  });

  // The latest result of each service check (Nomad's checks answer; here from what the node reported).
  app.get<{ Params: Params; Querystring: Query }>('/v1/allocation/:id/checks', { config: { access: 'read' } }, async (req, reply) => {
    const out = await nomadRead(ctx, req, reply, ['allocations'], (snap) => {
      const a = snap.get('allocations', rowKey(req.params.id));
      return a && checkStatuses(a.checks, a.taskGroup);
    });
    if (!out) throw new ApiError('NOT_FOUND', 'allocation not found');
    return out;
  });

  // A live allocation is migrated (the scheduler stops it and places a replacement); a finished one is marked stopped.
  const stop = async (req: FastifyRequest<{ Params: Params; Querystring: Query }>, reply: Parameters<typeof setIndexHeaders>[1]): Promise<api.AllocStopResponse> => {
    boolParam(req.query, 'no_shutdown_delay');
    boolParam(req.query, 'reschedule');
    const out = await jobs.stopAllocation(req.params.id);
    setIndexHeaders(ctx, reply, out.index);
    return { EvalID: out.evaluation?.id ?? '', Index: out.index };
  };
  app.post<{ Params: Params; Querystring: Query }>('/v1/allocation/:id/stop', { config: { access: 'write' } }, stop);
  app.put<{ Params: Params; Querystring: Query }>('/v1/allocation/:id/stop', { config: { access: 'write' } }, stop);

  // Nomad's Job.Allocations: the job's allocations; without `all`, only those of the job as registered now
  // (not of an earlier job of the same ID, purged and registered again).
  app.get<{ Params: Params; Querystring: Query }>('/v1/job/:id/allocations', { config: { access: 'read' } }, async (req, reply) => {
    const all = boolParam(req.query, 'all') ?? false;
    const rows = await nomadRead(ctx, req, reply, ['allocations'], (snap, opts) => {
      const job = snap.get('jobs', rowKey(opts.namespace, req.params.id));
      const allocs = snap.list('allocations', {
        filter: (a) => a.jobId === req.params.id && a.namespace === opts.namespace && (all || !job || a.createIndex >= job.createIndex),
      });
      const s = shaper(snap);
      return allocs.map((a) => s.stub(a));
    });
    return listPage(rows, req, reply);
  });

  // Nomad's Eval.Allocations: the allocations an evaluation placed or changed, as stubs. Nomad's CLI
  // monitors `job run`, `job stop` and `deployment promote` with it.
  app.get<{ Params: Params; Querystring: Query }>('/v1/evaluation/:id/allocations', { config: { access: 'read' } }, async (req, reply) => {
    const rows = await nomadRead(ctx, req, reply, ['allocations'], (snap) => {
      const s = shaper(snap);
      return snap.list('allocations', { filter: (a) => a.evalId === req.params.id }).map((a) => s.stub(a));
    });
    return listPage(rows, req, reply);
  });

  // Nomad's Deployment.Allocations: the allocations a deployment placed, as stubs.
  app.get<{ Params: Params; Querystring: Query }>('/v1/deployment/allocations/:id', { config: { access: 'read' } }, async (req, reply) => {
    const rows = await nomadRead(ctx, req, reply, ['allocations'], (snap) => {
      const s = shaper(snap);
      return snap.list('allocations', { filter: (a) => a.deploymentId === req.params.id }).map((a) => s.stub(a));
    });
    return listPage(rows, req, reply);
  });

  // Nomad's Node.GetAllocs: every allocation on the node, in full (none for an unknown node).
  app.get<{ Params: Params; Querystring: Query }>('/v1/node/:id/allocations', { config: { access: 'read' } }, async (req, reply) => {
    const rows = await nomadRead(ctx, req, reply, ['allocations'], (snap) => {
      const s = shaper(snap);
      return snap.list('allocations', { filter: (a) => a.nodeId === req.params.id }).map((a) => s.full(a));
    });
    return listPage(rows, req, reply);
  });
}
