// CSI volumes and their claims over HTTP. Reads go through publicVolume and
// publicClaim: secrets and mount flags are write-only.

import type { FastifyInstance } from 'fastify';
import { publicClaim, publicVolume } from '../../structs/index.js';
import { keyPrefix, rowKey } from '../state/index.js';
import { ApiError } from './api-error.js';
import { namespaceOf, type RouteContext } from './api.js';
import { blockingRead, parseBlockingQuery } from './blocking.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };

export function registerVolumeRoutes(app: FastifyInstance, { deps, signalOf }: RouteContext): void {
  const { store } = deps;

  app.get<{ Querystring: Query }>('/v1/volumes', { config: { access: 'read' } }, async (req, reply) => {
    const ns = req.query['namespace'] ? namespaceOf(req.query) : '*';
    const pluginId = req.query['pluginId'] ?? req.query['plugin_id'];
    const prefix = req.query['prefix'] ?? '';
    const { index, result } = await blockingRead(store, ['volumes', 'claims'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      snap
        .list('volumes', {
          filter: (v) => (ns === '*' || v.namespace === ns) && (!pluginId || v.pluginId === pluginId) && v.id.startsWith(prefix),
        })
        .map((v) => ({ ...publicVolume(v), claims: snap.list('claims', { prefix: keyPrefix(v.namespace, v.id) }).map(publicClaim) })),
    );
    reply.header('X-Berth-Index', String(index));
    return result;
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id', { config: { access: 'node-read' } }, async (req, reply) => {
    const ns = namespaceOf(req.query);
    const { index, result } = await blockingRead(store, ['volumes', 'claims'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) => {
      const v = snap.get('volumes', rowKey(ns, req.params.id));
      return v && { ...publicVolume(v), claims: snap.list('claims', { prefix: keyPrefix(ns, v.id) }).map(publicClaim) };
    });
    if (!result) throw new ApiError('NOT_FOUND', `volume "${req.params.id}" not found in namespace "${ns}"`);
    reply.header('X-Berth-Index', String(index));
    return result;
  });
}
