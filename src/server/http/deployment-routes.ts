// Deployments and job versions over HTTP (Nomad's /v1/deployments,
// /v1/deployment/..., /v1/job/:id/deployments, versions, revert, scale).

import type { FastifyInstance } from 'fastify';
import { publicJob } from '../../structs/index.js';
import { jobDeployments, jobVersions } from '../deployments/index.js';
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

  app.get<{ Params: Params; Querystring: Query }>('/v1/job/:id/versions', { config: { access: 'read' } }, async (req, reply) => {
    const ns = namespaceOf(req.query);
    const { index, result } = await blockingRead(store, ['jobVersions'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      jobVersions(snap, ns, req.params.id),
    );
    if (result.length === 0) throw new ApiError('NOT_FOUND', `job "${req.params.id}" not found in namespace "${ns}"`);
    reply.header('X-Berth-Index', String(index));
    return { versions: result.map((v) => ({ ...v, job: publicJob(v.job) })) };
  });

  app.post<{ Params: Params; Querystring: Query }>('/v1/job/:id/revert', { config: { access: 'write' } }, async (req) => {
    const body = objectBody(req.body);
    const version = body['version'] ?? body['JobVersion'];
    if (typeof version !== 'number' || !Number.isInteger(version) || version < 0) {
      throw new ApiError('INVALID', 'version must be a job version number (see `berth job history`)', { field: 'version' });
    }
    const { job } = await service().revert(namespaceOf(req.query), req.params.id, version);
    return { job };
  });

  app.post<{ Params: Params; Querystring: Query }>('/v1/job/:id/scale', { config: { access: 'write' } }, async (req) => {
    const body = objectBody(req.body);
    const target = body['Target'] && typeof body['Target'] === 'object' ? (body['Target'] as Record<string, unknown>) : {};
    const group = body['group'] ?? target['Group'];
    const count = body['count'] ?? body['Count'];
    if (typeof group !== 'string' || group === '') throw new ApiError('INVALID', 'group must name a task group', { field: 'group' });
    if (typeof count !== 'number') throw new ApiError('INVALID', 'count must be a number', { field: 'count' });
    const { job } = await service().scale(namespaceOf(req.query), req.params.id, group, count);
    return { job };
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
