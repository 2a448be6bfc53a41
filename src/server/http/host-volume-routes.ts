// Dynamic host volumes over HTTP, Nomad's routes and shapes (src/api/host-volumes.ts):
//   PUT    /v1/volume/host/create      create through the node's plugin -> HostVolumeCreateResponse (POST too)
//   PUT    /v1/volume/host/register    record an existing path -> HostVolumeRegisterResponse (POST too)
//   GET    /v1/volume/host/:id         HostVolume (blocking)
//   DELETE /v1/volume/host/:id         delete through the node's plugin (`force`: forget it when its node cannot be asked)
// The list, GET /v1/volumes?type=host, is served by volume-routes.ts with `hostVolumeList`.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { HostVolumeCreateResponse, HostVolumeStub } from '../../api/index.js';
import type { HostVolumeService, HostVolumeView } from '../hostvolumes/index.js';
import { ApiError } from './api-error.js';
import { boolQuery, writeNamespace } from './csi-request.js';
import { hostVolume, hostVolumeInput, hostVolumeStub } from './host-volume-shapes.js';
import { listPage, nomadRead, queryOptions, setIndexHeaders } from './nomad-read.js';
import type { RouteContext } from './route-context.js';

type Query = Record<string, string | undefined>;

const token = (v: { Namespace: string; ID: string }): string => `${v.Namespace}.${v.ID}`;

/** GET /v1/volumes?type=host: the stubs, filtered by `node_id`, `node_pool`, `prefix` and namespace (`*`: all). */
export async function hostVolumeList(ctx: RouteContext, service: HostVolumeService, req: FastifyRequest<{ Querystring: Query }>, reply: FastifyReply): Promise<HostVolumeStub[]> {
  const nodeId = req.query['node_id'];
  const nodePool = req.query['node_pool'];
  const rows = await nomadRead(ctx, req, reply, ['hostVolumes', 'nodes'], (snap, opts) =>
    service
      .list({ namespace: opts.namespace, prefix: opts.prefix, ...(nodeId ? { nodeId } : {}), ...(nodePool ? { nodePool } : {}) }, snap)
      .map(hostVolumeStub)
      .sort((a, b) => (token(a) < token(b) ? -1 : token(a) > token(b) ? 1 : 0)),
  );
  return listPage(rows, req, reply, token);
}

export function registerHostVolumeRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const service = ctx.deps.hostVolumes;
  if (!service) return;
  const { store } = ctx.deps;

  const written = (reply: FastifyReply, view: HostVolumeView): HostVolumeCreateResponse => {
    const index = store.latestIndex();
    setIndexHeaders(ctx, reply, index);
    return { Volume: hostVolume(view, store.snapshot()), Warnings: '', Index: index };
  };

  for (const method of ['PUT', 'POST'] as const) {
    app.route<{ Querystring: Query }>({
      method,
      url: '/v1/volume/host/create',
      config: { access: 'write' },
      handler: async (req, reply) => written(reply, await service.create(hostVolumeInput(req.body, req.query['namespace']))),
    });
    app.route<{ Querystring: Query }>({
      method,
      url: '/v1/volume/host/register',
      config: { access: 'write' },
      handler: async (req, reply) => written(reply, await service.register(hostVolumeInput(req.body, req.query['namespace']))),
    });
  }

  app.get<{ Params: { id: string }; Querystring: Query }>('/v1/volume/host/:id', { config: { access: 'read' } }, async (req, reply) => {
    const result = await nomadRead(ctx, req, reply, ['hostVolumes', 'nodes', 'allocations'], (snap, opts) => {
      const v = service.get(opts.namespace, req.params.id, snap);
      return v && hostVolume(v, snap);
    });
    if (!result) throw new ApiError('NOT_FOUND', `host volume "${req.params.id}" not found in namespace "${queryOptions(req.query).namespace}"`);
    return result;
  });

  app.delete<{ Params: { id: string }; Querystring: Query }>('/v1/volume/host/:id', { config: { access: 'write' } }, async (req, reply) => {
    await service.delete(writeNamespace(req.query), req.params.id, { force: boolQuery(req.query, 'force') });
    setIndexHeaders(ctx, reply, store.latestIndex());
    return {};
  });
}
