// Deployments over HTTP (Nomad's /v1/deployments, /v1/deployment/...,
// /v1/job/:id/deployments). A job's versions, revert and scale are the jobs
// family's (job-version-routes.ts).

import type { FastifyInstance } from 'fastify';
import { jobDeployments } from '../deployments/index.js';
import { rowKey } from '../state/index.js';
import { ApiError } from './api-error.js';
import { blockingRead, parseBlockingQuery } from './blocking.js';
import { namespaceOf, objectBody, type RouteContext } from './route-context.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };

export function registerDeploymentRoutes(app: FastifyInstance, { deps, signalOf }: RouteContext): void {
  const { store } = deps;
  const service = (): NonNullable<typeof deps.deployments> => {
    if (!deps.deployments) throw new ApiError('UNAVAILABLE', 'deployments are not served here');
    return deps.deployments;
  };

  app.get<{ Querystring: Query }>('/v1/deployments', { config: { access: 'read' } }, async (req, reply) => {
    const ns = namespaceOf(req.query);
    const prefix = req.query['prefix'] ?? '';
    const { index, result } = await blockingRead(store, ['deployments'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      snap
        .list('deployments', { filter: (d) => (ns === '*' || d.namespace === ns) && d.id.startsWith(prefix) })
        .sort((a, b) => b.createIndex - a.createIndex),
    );
    reply.header('X-Berth-Index', String(index));
    return result;
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/deployment/:id', { config: { access: 'read' } }, async (req, reply) => {
    const { index, result } = await blockingRead(store, ['deployments'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      snap.get('deployments', rowKey(req.params.id)),
    );
    if (!result) throw new ApiError('NOT_FOUND', `deployment "${req.params.id}" not found`);
    reply.header('X-Berth-Index', String(index));
    return result;
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/deployment/allocations/:id', { config: { access: 'read' } }, async (req, reply) => {
    const { index, result } = await blockingRead(store, ['allocations'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      snap.list('allocations', { filter: (a) => a.deploymentId === req.params.id }),
    );
    reply.header('X-Berth-Index', String(index));
    return result;
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/job/:id/deployments', { config: { access: 'read' } }, async (req, reply) => {
    const ns = namespaceOf(req.query);
    const { index, result } = await blockingRead(store, ['deployments'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      jobDeployments(snap, ns, req.params.id),
    );
    reply.header('X-Berth-Index', String(index));
    return result;
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/job/:id/deployment', { config: { access: 'read' } }, async (req, reply) => {
    const ns = namespaceOf(req.query);
    const { index, result } = await blockingRead(store, ['deployments'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      jobDeployments(snap, ns, req.params.id)[0] ?? null,
    );
    reply.header('X-Berth-Index', String(index));
    return result;
  });

  app.post<{ Params: Params; Querystring: Query }>('/v1/job/:id/promote', { config: { access: 'write' } }, async (req) => {
    const ns = namespaceOf(req.query);
    const latest = jobDeployments(store.snapshot(), ns, req.params.id)[0];
    if (!latest) throw new ApiError('NOT_FOUND', `job "${req.params.id}" has no deployment`);
    return service().promote(latest.id, groupsOf(req.body));
  });

  app.post<{ Params: Params }>('/v1/deployment/promote/:id', { config: { access: 'write' } }, async (req) => service().promote(req.params.id, groupsOf(req.body)));
  app.post<{ Params: Params }>('/v1/deployment/fail/:id', { config: { access: 'write' } }, async (req) => service().fail(req.params.id));
  app.post<{ Params: Params }>('/v1/deployment/pause/:id', { config: { access: 'write' } }, async (req) => {
    const body = req.body === undefined || req.body === null ? {} : objectBody(req.body);
    return service().pause(req.params.id, (body['pause'] ?? body['Pause'] ?? true) !== false);
  });
}

/** `{ groups: [...] }` (or Nomad's `Groups`), empty for all. */
function groupsOf(body: unknown): string[] {
  if (body === undefined || body === null) return [];
  const obj = objectBody(body);
  const groups = obj['groups'] ?? obj['Groups'];
  if (groups === undefined || groups === null) return [];
  if (!Array.isArray(groups) || groups.some((g) => typeof g !== 'string')) throw new ApiError('INVALID', 'groups must be a list of group names', { field: 'groups' });
  return groups as string[];
}
