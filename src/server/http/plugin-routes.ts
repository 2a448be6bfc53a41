// CSI plugins over HTTP, Nomad's routes and shapes (src/api/csi.ts):
//   GET /v1/plugins?type=csi   CSIPluginListStub[] (prefix, filter, paging, blocking)
//   GET /v1/plugin/csi/:id     CSIPlugin (blocking)
// Plugins are derived from what nodes report and the jobs that run them;
// nobody writes them through the API.

import type { FastifyInstance } from 'fastify';
import { ApiError } from './api-error.js';
import { csiPlugin, csiPluginListStub } from './csi-shapes.js';
import { listPage, nomadRead } from './nomad-read.js';
import type { RouteContext } from './route-context.js';
import { rowKey } from '../state/index.js';

type Query = Record<string, string | undefined>;

export function registerPluginRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.get<{ Querystring: Query }>('/v1/plugins', { config: { access: 'read' } }, async (req, reply) => {
    // As Nomad: without a type nothing is listed, and CSI is the only type there is.
    if (req.query['type'] !== 'csi') return [];
    const rows = await nomadRead(ctx, req, reply, ['plugins'], (snap, opts) =>
      snap.list('plugins', { filter: (p) => p.id.startsWith(opts.prefix) }).map(csiPluginListStub),
    );
    return listPage(rows, req, reply);
  });

  app.get<{ Params: { id: string }; Querystring: Query }>('/v1/plugin/csi/:id', { config: { access: 'read' } }, async (req, reply) => {
    const result = await nomadRead(ctx, req, reply, ['plugins'], (snap) => {
      const p = snap.get('plugins', rowKey(req.params.id));
      return p && csiPlugin(p, snap);
    });
    if (!result) throw new ApiError('NOT_FOUND', `plugin "${req.params.id}" not found`);
    return result;
  });
}
