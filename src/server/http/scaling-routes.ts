// Nomad's scaling policies over HTTP: `GET /v1/scaling/policies` (`job` and
// `type` filters; namespace `*` for all) and `GET /v1/scaling/policy/:id`,
// answered from the groups' `scaling` blocks of the stored jobs (a policy
// lives in its job; src/structs/scaling-policy.ts derives its ID), with
// blocking queries on the jobs table.

import type { FastifyInstance } from 'fastify';
import type { ScalingPolicy, ScalingPolicyListStub } from '../../api/index.js';
import { scalingPolicies, scalingPolicyStub } from '../../structs/index.js';
import { ApiError } from './api-error.js';
import { inNamespace, nomadRead } from './nomad-read.js';
import type { RouteContext } from './route-context.js';

type Query = Record<string, string | string[] | undefined>;

export function registerScalingRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.get<{ Querystring: Query }>('/v1/scaling/policies', { config: { access: 'read' } }, async (req, reply): Promise<ScalingPolicyListStub[]> => {
    const job = typeof req.query['job'] === 'string' && req.query['job'] !== '' ? req.query['job'] : undefined;
    const type = typeof req.query['type'] === 'string' && req.query['type'] !== '' ? req.query['type'] : undefined;
    return nomadRead(ctx, req, reply, ['jobs'], (snap, opts) =>
      scalingPolicies(snap.list('jobs', { filter: inNamespace(opts.namespace) }))
        .filter((p) => (job === undefined || p.Target?.['Job'] === job) && (type === undefined || p.Type === type))
        .map(scalingPolicyStub),
    );
  });

  app.get<{ Params: { id: string }; Querystring: Query }>('/v1/scaling/policy/:id', { config: { access: 'read' } }, async (req, reply): Promise<ScalingPolicy> => {
    const found = await nomadRead(ctx, req, reply, ['jobs'], (snap) => scalingPolicies(snap.list('jobs')).find((p) => p.ID === req.params.id));
    if (!found) throw new ApiError('NOT_FOUND', 'policy not found');
    return found;
  });
}
