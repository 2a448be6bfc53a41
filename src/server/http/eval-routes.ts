// Evaluations over HTTP, as Nomad's (command/agent/eval_endpoint.go):
// `GET /v1/evaluations` (namespace, prefix, `status`/`job`, filter, paging,
// blocking), `GET /v1/evaluation/:id` (`related=true`) and
// `GET /v1/job/:id/evaluations` (oldest first; Nomad's clients sort), each
// in Nomad's Evaluation shape.

import type { FastifyInstance } from 'fastify';
import type { Evaluation } from '../../api/index.js';
import type { Evaluation as BerthEvaluation } from '../../structs/index.js';
import { rowKey } from '../state/index.js';
import { ApiError } from './api-error.js';
import { EvalLinks, evaluationOut } from './evaluation-shapes.js';
import { createIndexToken, nomadListOrder } from './create-order.js';
import { inNamespace, listPage, nomadRead } from './nomad-read.js';
import type { RouteContext } from './route-context.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };

export function registerEvalRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.get<{ Querystring: Query }>('/v1/evaluations', { config: { access: 'read' } }, async (req, reply) => {
    const status = req.query['status'] ?? '';
    const job = req.query['job'] ?? '';
    if (req.query['filter'] && (status || job)) throw new ApiError('INVALID', 'Filter expression cannot be used with other filter parameters', { field: 'filter' });
    const rows = await nomadRead(ctx, req, reply, ['evaluations'], (snap, opts) => {
      const links = new EvalLinks(snap);
      const keep = inNamespace(opts.namespace);
      const evals = snap.list('evaluations', {
        filter: (e: BerthEvaluation) => keep(e) && e.id.startsWith(opts.prefix) && (!status || e.status === status) && (!job || e.jobId === job),
      });
      return nomadListOrder(evals, opts.prefix !== '').map((e) => evaluationOut(e, links));
    });
    return listPage(rows, req, reply, req.query['prefix'] ? undefined : createIndexToken);
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/evaluation/:id', { config: { access: 'read' } }, async (req, reply) => {
    const related = req.query['related'] === 'true';
    const out = await nomadRead(ctx, req, reply, ['evaluations'], (snap): Evaluation | undefined => {
      const e = snap.get('evaluations', rowKey(req.params.id));
      if (!e) return undefined;
      const links = new EvalLinks(snap);
      return evaluationOut(e, links, related ? links.related(e) : undefined);
    });
    if (!out) throw new ApiError('NOT_FOUND', `evaluation "${req.params.id}" not found`);
    return out;
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/job/:id/evaluations', { config: { access: 'read' } }, async (req, reply) => {
    const rows = await nomadRead(ctx, req, reply, ['evaluations'], (snap, opts) => {
      const links = new EvalLinks(snap);
      const evals = snap.list('evaluations', { filter: (e: BerthEvaluation) => e.jobId === req.params.id && inNamespace(opts.namespace)(e) });
      return nomadListOrder(evals, false).map((e) => evaluationOut(e, links));
    });
    return listPage(rows, req, reply, createIndexToken);
  });
}
