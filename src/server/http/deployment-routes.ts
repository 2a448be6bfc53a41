// Deployments over HTTP, as Nomad's (command/agent/deployment_endpoint.go):
// `GET /v1/deployments` (namespace, prefix, filter, paging, blocking),
// `/v1/deployment/:id`, `/v1/job/:id/deployments` (`all`) and
// `/v1/job/:id/deployment`, in Nomad's Deployment shape; promote, fail,
// pause and allocation-health (PUT or POST, as Nomad's client sends PUT),
// answering a DeploymentUpdateResponse. A job's versions, revert and scale
// are the jobs family's (job-version-routes.ts).

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import {
  DeploymentAllocHealthRequest,
  DeploymentFailRequest,
  DeploymentPauseRequest,
  DeploymentPromoteRequest,
  type Deployment,
  type DeploymentUpdateResponse,
} from '../../api/index.js';
import type { Deployment as BerthDeployment } from '../../structs/index.js';
import type { DeploymentChange } from '../deployments/index.js';
import { rowKey } from '../state/index.js';
import { ApiError } from './api-error.js';
import { createIndexToken, nomadListOrder } from './create-order.js';
import { deployedVersion, deploymentOut, deploymentUpdateOut } from './deployment-shapes.js';
import { inNamespace, listPage, nomadRead, setIndexHeaders } from './nomad-read.js';
import { objectBody, type RouteContext } from './route-context.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };

/**
 * A write's body read with its schema, as Nomad's handlers decode it: an
 * object whose `DeploymentID`, when `idRequired`, is given and is the path's.
 * Throws ApiError INVALID naming what is wrong.
 */
function requestOf<S extends z.ZodType<{ DeploymentID?: string | undefined }>>(schema: S, body: unknown, id: string, idRequired: boolean): z.infer<S> {
  if ((body === undefined || body === null) && !idRequired) return schema.parse({}) as z.infer<S>;
  const parsed = schema.safeParse(objectBody(body));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') ?? '';
    throw new ApiError('INVALID', `request body: ${field ? `${field}: ` : ''}${issue?.message ?? 'invalid'}`, { field });
  }
  const deploymentId = parsed.data.DeploymentID;
  if (idRequired && !deploymentId) throw new ApiError('INVALID', 'DeploymentID must be specified', { field: 'DeploymentID' });
  if (deploymentId && deploymentId !== id) throw new ApiError('INVALID', 'Deployment ID does not match', { field: 'DeploymentID' });
  return parsed.data;
}

export function registerDeploymentRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps } = ctx;
  const service = (): NonNullable<typeof deps.deployments> => {
    if (!deps.deployments) throw new ApiError('UNAVAILABLE', 'deployments are not served here');
    return deps.deployments;
  };
  const answer = (reply: FastifyReply, change: DeploymentChange): DeploymentUpdateResponse => {
    setIndexHeaders(ctx, reply, change.index);
    return deploymentUpdateOut(change);
  };

  app.get<{ Querystring: Query }>('/v1/deployments', { config: { access: 'read' } }, async (req, reply) => {
    const rows = await nomadRead(ctx, req, reply, ['deployments'], (snap, opts) => {
      const keep = inNamespace(opts.namespace);
      const list = snap.list('deployments', { filter: (d: BerthDeployment) => keep(d) && d.id.startsWith(opts.prefix) });
      return nomadListOrder(list, opts.prefix !== '').map((d) => deploymentOut(d, deployedVersion(snap, d)));
    });
    return listPage(rows, req, reply, req.query['prefix'] ? undefined : createIndexToken);
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/deployment/:id', { config: { access: 'read' } }, async (req, reply) => {
    const out = await nomadRead(ctx, req, reply, ['deployments'], (snap): Deployment | undefined => {
      const d = snap.get('deployments', rowKey(req.params.id));
      return d && deploymentOut(d, deployedVersion(snap, d));
    });
    if (!out) throw new ApiError('NOT_FOUND', `deployment "${req.params.id}" not found`);
    return out;
  });

  // The job's deployments, oldest first; without `all=true` only those of the job as it exists now (not of
  // an earlier job of the same ID, stopped and purged).
  app.get<{ Params: Params; Querystring: Query }>('/v1/job/:id/deployments', { config: { access: 'read' } }, async (req, reply) => {
    const all = req.query['all'] === 'true';
    const rows = await nomadRead(ctx, req, reply, ['deployments', 'jobs'], (snap, opts) => {
      const job = snap.get('jobs', rowKey(opts.namespace, req.params.id));
      const list = snap.list('deployments', {
        filter: (d: BerthDeployment) => d.namespace === opts.namespace && d.jobId === req.params.id && (all || !job || d.jobCreateIndex === job.createIndex),
      });
      return nomadListOrder(list, false).map((d) => deploymentOut(d, deployedVersion(snap, d)));
    });
    return listPage(rows, req, reply, createIndexToken);
  });

  // The job's latest deployment, or null.
  app.get<{ Params: Params; Querystring: Query }>('/v1/job/:id/deployment', { config: { access: 'read' } }, async (req, reply) =>
    nomadRead(ctx, req, reply, ['deployments'], (snap, opts): Deployment | null => {
      const list = snap.list('deployments', { filter: (d: BerthDeployment) => d.namespace === opts.namespace && d.jobId === req.params.id });
      const latest = nomadListOrder(list, false).at(-1);
      return latest ? deploymentOut(latest, deployedVersion(snap, latest)) : null;
    }),
  );

  const write = (path: string, handler: (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply) => Promise<DeploymentUpdateResponse>): void => {
    app.put<{ Params: Params }>(path, { config: { access: 'write' } }, handler);
    app.post<{ Params: Params }>(path, { config: { access: 'write' } }, handler);
  };
  write('/v1/deployment/promote/:id', async (req, reply) => {
    const body = requestOf(DeploymentPromoteRequest, req.body, req.params.id, true);
    // `All`, or no group named: every group with canaries.
    return answer(reply, await service().promote(req.params.id, body.All ? [] : (body.Groups ?? [])));
  });
  write('/v1/deployment/fail/:id', async (req, reply) => {
    requestOf(DeploymentFailRequest, req.body, req.params.id, false);
    return answer(reply, await service().fail(req.params.id));
  });
  write('/v1/deployment/pause/:id', async (req, reply) => {
    const body = requestOf(DeploymentPauseRequest, req.body, req.params.id, true);
    return answer(reply, await service().pause(req.params.id, body.Pause ?? false));
  });
  write('/v1/deployment/allocation-health/:id', async (req, reply) => {
    const body = requestOf(DeploymentAllocHealthRequest, req.body, req.params.id, true);
    return answer(reply, await service().setAllocHealth(req.params.id, body.HealthyAllocationIDs ?? [], body.UnhealthyAllocationIDs ?? []));
  });
}
