// CSI volumes over HTTP, Nomad's routes and shapes (src/api/csi.ts):
//   GET    /v1/volumes?type=csi            CSIVolumeListStub[] (prefix, namespace `*`, plugin_id, node_id, filter, paging, blocking),
//                                           with Berth's capacity, releasing claims, usage, condition and drift count
//   PUT    /v1/volumes                     register (Nomad takes POST too), as PUT /v1/volume/csi/:id
//   GET    /v1/volume/csi/:id              CSIVolume (blocking)
//   PUT    /v1/volume/csi/:id              register `{Volumes: [CSIVolume]}` -> CSIVolumeRegisterResponse
//   DELETE /v1/volume/csi/:id              deregister (`force`)
//   PUT    /v1/volume/csi/:id/create       create through the controller -> CSIVolumeCreateResponse (POST too)
//   DELETE /v1/volume/csi/:id/delete       delete through the controller, and deregister
//   DELETE /v1/volume/csi/:id/detach       release the claims on `node` (Berth: POST too; `force` stops their allocations first)
//   POST   /v1/volume/csi/:id/expand       Berth: grow through the controller -> CSIVolume
// Reads are the volume service's public view: secrets are write-only and
// never in an answer. Changes go through the volume service; a change is
// not aborted when its client goes away (the service checkpoints its steps).

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CSIVolumeExpandRequest, type CSIVolumeCreateResponse, type CSIVolumeDetachResponse, type CSIVolumeListStub } from '../../api/index.js';
import { parseVolumeSpec } from '../../structs/index.js';
import type { VolumeView } from '../volumes/index.js';
import { DRIFT_ROW_ID } from '../volumehealth/index.js';
import { ApiError } from './api-error.js';
import { boolQuery, submittedVolume, writeNamespace } from './csi-request.js';
import { csiVolume, csiVolumeListStub } from './csi-shapes.js';
import { hostVolumeList } from './host-volume-routes.js';
import { listPage, nomadRead, queryOptions, setIndexHeaders } from './nomad-read.js';
import type { RouteContext } from './route-context.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };

/** Nomad's paging token of a volume: `<namespace>.<id>`. */
const volumeToken = (v: { Namespace: string; ID: string }): string => `${v.Namespace}.${v.ID}`;

export function registerVolumeRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps } = ctx;
  const { store, volumes } = deps;

  /** A write's answer, as Nomad's register and create answer: the volume, and the query meta in the body too. */
  const written = (reply: FastifyReply, view: VolumeView): CSIVolumeCreateResponse => {
    const index = store.latestIndex();
    setIndexHeaders(ctx, reply, index);
    const snap = store.snapshot();
    const health = deps.health?.view(view.namespace, view.id, snap);
    return { Volumes: [csiVolume(view, snap, health)], Warnings: '', Index: index, LastContact: 0, KnownLeader: true, NextToken: '' };
  };

  app.get<{ Querystring: Query }>('/v1/volumes', { config: { access: 'read' } }, async (req, reply) => {
    const type = req.query['type'];
    // As Nomad: no type lists nothing; another type is not a route.
    if (type === undefined) return [];
    if (type === 'host') {
      if (deps.hostVolumes) return hostVolumeList(ctx, deps.hostVolumes, req, reply);
      setIndexHeaders(ctx, reply, store.latestIndex());
      return [];
    }
    if (type !== 'csi') throw new ApiError('NOT_FOUND', `no volumes of type "${type}"`);
    const pluginId = req.query['plugin_id'];
    const nodeId = req.query['node_id'];
    // Berth's extras on each row: its usage and condition (the health service) and the drift loop's count of differences about it.
    const rows = await nomadRead(ctx, req, reply, ['volumes', 'claims', 'plugins', 'volumeConditions', 'drift'], (snap, opts): CSIVolumeListStub[] => {
      const drift = new Map<string, number>();
      for (const f of snap.get('drift', DRIFT_ROW_ID)?.findings ?? []) {
        if (f.volumeId) drift.set(`${f.namespace ?? ''}\0${f.volumeId}`, (drift.get(`${f.namespace ?? ''}\0${f.volumeId}`) ?? 0) + 1);
      }
      const driftOf = (v: VolumeView): number => (drift.get(`${v.namespace}\0${v.id}`) ?? 0) + (drift.get(`\0${v.id}`) ?? 0);
      return volumes
        .list({ ...(opts.namespace !== '*' ? { namespace: opts.namespace } : {}), ...(pluginId ? { pluginId } : {}) }, snap)
        .filter((v) => v.id.startsWith(opts.prefix) && (!nodeId || v.claims.some((c) => c.nodeId === nodeId)))
        .map((v) => csiVolumeListStub(v, snap, deps.health?.view(v.namespace, v.id, snap), driftOf(v)))
        .sort((a, b) => (volumeToken(a) < volumeToken(b) ? -1 : volumeToken(a) > volumeToken(b) ? 1 : 0));
    });
    return listPage(rows, req, reply, volumeToken);
  });

  // With the volume health service: `Usage` (latest per node) and `Condition` carry what nodes and controllers report.
  app.get<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id', { config: { access: 'node-read' } }, async (req, reply) => {
    const result = await nomadRead(ctx, req, reply, ['volumes', 'claims', 'plugins', 'volumeConditions'], (snap, opts) => {
      const v = volumes.get(opts.namespace, req.params.id, snap);
      return v && csiVolume(v, snap, deps.health?.view(opts.namespace, req.params.id, snap));
    });
    if (!result) throw new ApiError('NOT_FOUND', `volume "${req.params.id}" not found in namespace "${queryOptions(req.query).namespace}"`);
    return result;
  });

  // Register an existing volume (validated through the plugin's controller when it has one).
  const register = async (req: FastifyRequest<{ Querystring: Query }>, reply: FastifyReply, pathId?: string): Promise<CSIVolumeCreateResponse> => {
    // The same checks as volume files; the service adds those that need state and the plugin.
    const parsed = parseVolumeSpec(submittedVolume(req.body, req.query, pathId), 'register');
    return written(reply, await volumes.register(parsed));
  };
  app.put<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id', { config: { access: 'write' } }, async (req, reply) => register(req, reply, req.params.id));
  for (const method of ['PUT', 'POST'] as const) {
    app.route<{ Querystring: Query }>({ method, url: '/v1/volumes', config: { access: 'write' }, handler: async (req, reply) => register(req, reply) });
  }

  app.delete<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id', { config: { access: 'write' } }, async (req, reply) => {
    const force = boolQuery(req.query, 'force');
    await volumes.deregister(writeNamespace(req.query), req.params.id, { force });
    setIndexHeaders(ctx, reply, store.latestIndex());
    return reply.send();
  });

  for (const method of ['PUT', 'POST'] as const) {
    app.route<{ Params: Params; Querystring: Query }>({
      method,
      url: '/v1/volume/csi/:id/create',
      config: { access: 'write' },
      handler: async (req, reply) => {
        const parsed = parseVolumeSpec(submittedVolume(req.body, req.query, req.params.id), 'create');
        return written(reply, await volumes.create(parsed));
      },
    });
  }

  app.delete<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id/delete', { config: { access: 'write' } }, async (req, reply) => {
    await volumes.delete(writeNamespace(req.query), req.params.id);
    setIndexHeaders(ctx, reply, store.latestIndex());
    return reply.send();
  });

  const detach = async (req: FastifyRequest<{ Params: Params; Querystring: Query }>, reply: FastifyReply): Promise<CSIVolumeDetachResponse> => {
    const nodeId = req.query['node'];
    if (!nodeId) throw new ApiError('INVALID', 'detach requires node ID', { field: 'node' });
    const ns = writeNamespace(req.query);
    // Refused while allocations use the volume on the node, unless forced: then they are stopped first.
    const force = boolQuery(req.query, 'force');
    // Detaching overrides a fence: the silent node's writer may still run.
    const fenced = volumes.claims({ namespace: ns, volumeId: req.params.id, nodeId }).filter((c) => c.state === 'taken' && c.fencedUntil);
    const { stoppedAllocations } = await volumes.detach(ns, req.params.id, nodeId, {
      force,
      stopAllocation: (allocId) => deps.jobs.stopAllocation(allocId),
    });
    setIndexHeaders(ctx, reply, store.latestIndex());
    const warning = fenced.length
      ? `released the write claim of allocation ${fenced.map((c) => c.allocId).join(', ')} before its fence ended: if node ${nodeId} still runs that writer, two writers may now use the volume`
      : '';
    return { StoppedAllocations: stoppedAllocations, Warnings: warning };
  };
  app.delete<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id/detach', { config: { access: 'write' } }, detach);
  app.post<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id/detach', { config: { access: 'write' } }, detach);

  app.post<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id/expand', { config: { access: 'write' } }, async (req, reply) => {
    const body = CSIVolumeExpandRequest.safeParse(req.body);
    if (!body.success) {
      const field = body.error.issues[0]?.path.join('.') || 'RequiredBytes';
      throw new ApiError('INVALID', `${field}: ${body.error.issues[0]?.message ?? 'invalid'} (the body is {"RequiredBytes": <bytes>, "LimitBytes": <bytes>})`, { field });
    }
    const range = { requiredBytes: body.data.RequiredBytes, ...(body.data.LimitBytes ? { limitBytes: body.data.LimitBytes } : {}) };
    const view = await volumes.expand(writeNamespace(req.query), req.params.id, range);
    setIndexHeaders(ctx, reply, store.latestIndex());
    const snap = store.snapshot();
    return csiVolume(view, snap, deps.health?.view(view.namespace, view.id, snap));
  });
}
