// What the storage provider holds, asked through a plugin's controller,
// Nomad's routes and shapes (src/api/csi.ts):
//   PUT    /v1/volumes/snapshot   create: {Snapshots: [{SourceVolumeID, Name, Parameters}]} -> CSISnapshotCreateResponse (POST too)
//   DELETE /v1/volumes/snapshot   delete `snapshot_id` of `plugin_id`
//   GET    /v1/volumes/snapshot   CSISnapshotListResponse of `plugin_id` (paging; Berth: `volume_id` for one volume's)
//   GET    /v1/volumes/external   CSIVolumeListExternalResponse of `plugin_id` (the plugin's ListVolumes; paging)
// Secrets may come in `X-Nomad-CSI-Secrets`; a registered volume's own
// secrets are used for calls about it. Lists are not blocking queries (they
// ask the plugin); `per_page`/`next_token` page over the plugin's whole list.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CSISnapshotCreateRequest, type CSISnapshot } from '../../api/index.js';
import type { Volume } from '../../structs/index.js';
import { rowKey, type StateReader } from '../state/index.js';
import { ApiError } from './api-error.js';
import { csiSecretsOf, writeNamespace } from './csi-request.js';
import { csiSnapshot, csiVolumeExternalStub } from './csi-shapes.js';
import { listPage, setIndexHeaders } from './nomad-read.js';
import type { RouteContext } from './route-context.js';

type Query = Record<string, string | undefined>;

function pluginIdOf(query: Query): string {
  const id = query['plugin_id'];
  if (!id) throw new ApiError('INVALID', 'plugin_id is required', { field: 'plugin_id' });
  return id;
}

/** The registered volume whose plugin volume is `externalId` ("" when none). */
function volumeIdOf(snap: StateReader, pluginId: string, externalId: string): string {
  return snap.list('volumes', { filter: (v: Volume) => v.pluginId === pluginId && v.externalId === externalId })[0]?.id ?? '';
}

export function registerCsiSnapshotRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps, signalOf } = ctx;
  const { store, volumes } = deps;

  /** A page of `rows` as Nomad's list answers carry it: the rows, and the next page's token in the body too. */
  const page = <T>(rows: T[], req: FastifyRequest, reply: FastifyReply, tokenOf: (row: T) => string): { rows: T[]; NextToken: string } => {
    const out = listPage(rows, req, reply, tokenOf);
    const next = reply.getHeader('X-Nomad-NextToken');
    setIndexHeaders(ctx, reply, store.latestIndex());
    return { rows: out, NextToken: typeof next === 'string' ? next : '' };
  };
  const meta = () => ({ Index: store.latestIndex(), LastContact: 0, KnownLeader: true });

  const create = async (req: FastifyRequest<{ Querystring: Query }>, reply: FastifyReply) => {
    const body = CSISnapshotCreateRequest.safeParse(req.body);
    if (!body.success) {
      const field = body.error.issues[0]?.path.join('.') || 'Snapshots';
      throw new ApiError('INVALID', `${field}: ${body.error.issues[0]?.message ?? 'invalid'} (the body is {"Snapshots": [{"SourceVolumeID": ..., "Name": ...}]})`, { field });
    }
    const ns = writeNamespace(req.query, req.body as Record<string, unknown>);
    const made: CSISnapshot[] = [];
    // One at a time, as Nomad: each is a controller call of its own.
    for (const want of body.data.Snapshots) {
      const vol = store.snapshot().get('volumes', rowKey(ns, want.SourceVolumeID));
      if (!vol) throw new ApiError('NOT_FOUND', `no such volume "${want.SourceVolumeID}" in namespace "${ns}"`, { field: 'SourceVolumeID' });
      if (want.PluginID && want.PluginID !== vol.pluginId) {
        throw new ApiError('INVALID', `volume "${want.SourceVolumeID}" belongs to plugin ${vol.pluginId}, not ${want.PluginID}`, { field: 'PluginID' });
      }
      const s = await volumes.createSnapshot(ns, want.SourceVolumeID, want.Name ?? '', want.Parameters ? { parameters: want.Parameters } : {});
      made.push(csiSnapshot(s, vol.pluginId, want.SourceVolumeID));
    }
    setIndexHeaders(ctx, reply, store.latestIndex());
    return { Snapshots: made, ...meta(), NextToken: '' };
  };
  app.put<{ Querystring: Query }>('/v1/volumes/snapshot', { config: { access: 'write' } }, create);
  app.post<{ Querystring: Query }>('/v1/volumes/snapshot', { config: { access: 'write' } }, create);

  app.delete<{ Querystring: Query }>('/v1/volumes/snapshot', { config: { access: 'write' } }, async (req, reply) => {
    const pluginId = pluginIdOf(req.query);
    const snapshotId = req.query['snapshot_id'];
    if (!snapshotId) throw new ApiError('INVALID', 'snapshot_id is required', { field: 'snapshot_id' });
    const secrets = csiSecretsOf(req);
    await volumes.deleteSnapshot(pluginId, snapshotId, secrets ? { secrets } : {});
    setIndexHeaders(ctx, reply, store.latestIndex());
    return reply.send();
  });

  app.get<{ Querystring: Query }>('/v1/volumes/snapshot', { config: { access: 'read' } }, async (req, reply) => {
    const pluginId = pluginIdOf(req.query);
    const volumeId = req.query['volume_id'];
    const secrets = csiSecretsOf(req);
    const listed = await volumes.listSnapshots(pluginId, {
      namespace: writeNamespace(req.query),
      ...(volumeId ? { volumeId } : {}),
      ...(secrets ? { secrets } : {}),
      signal: signalOf(req, reply),
    });
    const snap = store.snapshot();
    const rows = listed.map((s) => csiSnapshot(s, pluginId, volumeIdOf(snap, pluginId, s.sourceVolumeId))).sort((a, b) => (a.ID < b.ID ? -1 : a.ID > b.ID ? 1 : 0));
    const { rows: Snapshots, NextToken } = page(rows, req, reply, (s) => s.ID);
    return { Snapshots, ...meta(), NextToken };
  });

  app.get<{ Querystring: Query }>('/v1/volumes/external', { config: { access: 'read' } }, async (req, reply) => {
    const pluginId = pluginIdOf(req.query);
    const listed = await volumes.listPluginVolumes(pluginId, { signal: signalOf(req, reply) });
    const rows = listed.map(csiVolumeExternalStub).sort((a, b) => (a.ExternalID < b.ExternalID ? -1 : a.ExternalID > b.ExternalID ? 1 : 0));
    const { rows: Volumes, NextToken } = page(rows, req, reply, (v) => v.ExternalID);
    return { Volumes, ...meta(), NextToken };
  });
}
