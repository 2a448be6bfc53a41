// Volume health and drift over HTTP, Berth's additions to Nomad's API
// (shapes in src/api/csi-berth.ts; paths Nomad does not use):
//   POST /v1/node/:id/volume-stats     (node)  a node's NodeGetVolumeStats reports (Berth's node protocol)
//   GET  /v1/volume/csi/:id/usage      (read)  VolumeUsageHistory: the usage history and latest usage per node
//   GET  /v1/volumes/drift             (read)  DriftReport: the drift leader loop's latest (blocking)
//   GET  /v1/volume/csi/:id/drift      (read)  VolumeDrift: that report's differences about one volume (blocking)
//   GET  /v1/volumes/doctor            (read)  DriftReport: compare the books now (?volume=&namespace=), repairing nothing
//   POST /v1/volumes/doctor            (write) DriftReport: compare and repair what is safe (?volume=&namespace=)
// The health service and the doctor are optional deps: without them these
// routes answer NOT_FOUND naming what is missing.

import type { FastifyInstance } from 'fastify';
import type { DriftReport, VolumeDrift, VolumeUsageHistory } from '../../api/index.js';
import type { VolumeStatsReport } from '../../structs/index.js';
import { rowKey } from '../state/index.js';
import { DRIFT_ROW_ID } from '../volumehealth/index.js';
import { ApiError } from './api-error.js';
import { driftFinding, driftReport, nodeVolumeUsage, volumeUsageSample } from './csi-berth-shapes.js';
import { nomadRead, setIndexHeaders } from './nomad-read.js';
import { namespaceOf, objectBody, type RouteContext } from './route-context.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };

function isFigures(v: unknown): boolean {
  if (v === undefined) return true;
  if (!v || typeof v !== 'object') return false;
  const o = v as Record<string, unknown>;
  return ['available', 'total', 'used'].every((k) => typeof o[k] === 'number' && Number.isFinite(o[k]) && (o[k] as number) >= 0);
}

/** Checks one report of a node's batch; throws ApiError INVALID naming the field. */
function checkReport(raw: unknown, i: number): VolumeStatsReport {
  const r = objectBody(raw, `reports[${i}]`);
  for (const f of ['namespace', 'volumeId', 'pluginId']) {
    if (typeof r[f] !== 'string' || r[f] === '') throw new ApiError('INVALID', `reports[${i}].${f} is required`, { field: `reports[${i}].${f}` });
  }
  if (typeof r['reportedAt'] !== 'number') throw new ApiError('INVALID', `reports[${i}].reportedAt must be a number`, { field: `reports[${i}].reportedAt` });
  for (const f of ['bytes', 'inodes']) {
    if (!isFigures(r[f])) throw new ApiError('INVALID', `reports[${i}].${f} must have non-negative available, total and used`, { field: `reports[${i}].${f}` });
  }
  const c = r['condition'];
  if (c !== undefined) {
    const o = objectBody(c, `reports[${i}].condition`);
    if (typeof o['abnormal'] !== 'boolean' || typeof o['message'] !== 'string') {
      throw new ApiError('INVALID', `reports[${i}].condition needs abnormal (boolean) and message (string)`, { field: `reports[${i}].condition` });
    }
  }
  if (r['allocIds'] !== undefined && !(Array.isArray(r['allocIds']) && r['allocIds'].every((a) => typeof a === 'string'))) {
    throw new ApiError('INVALID', `reports[${i}].allocIds must be a list of allocation IDs`, { field: `reports[${i}].allocIds` });
  }
  return { allocIds: [], ...r } as unknown as VolumeStatsReport;
}

export function registerVolumeHealthRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps, signalOf } = ctx;
  const { store } = deps;
  const health = () => {
    if (!deps.health) throw new ApiError('NOT_FOUND', 'this server does not keep volume health');
    return deps.health;
  };
  const doctor = () => {
    if (!deps.doctor) throw new ApiError('NOT_FOUND', 'this server has no volume doctor');
    return deps.doctor;
  };
  const scopeOf = (query: Query): { namespace: string; volumeId: string } | undefined => {
    const volumeId = query['volume'];
    if (!volumeId) return undefined;
    const namespace = namespaceOf(query);
    if (!store.snapshot().get('volumes', rowKey(namespace, volumeId))) throw new ApiError('NOT_FOUND', `volume "${volumeId}" not found in namespace "${namespace}"`);
    return { namespace, volumeId };
  };

  app.post<{ Params: Params }>('/v1/node/:id/volume-stats', { config: { access: 'node' } }, async (req) => {
    const body = objectBody(req.body);
    const list = body['reports'];
    if (!Array.isArray(list)) throw new ApiError('INVALID', 'reports must be a list', { field: 'reports' });
    if (!store.snapshot().get('nodes', rowKey(req.params.id))) throw new ApiError('NOT_FOUND', `node "${req.params.id}" not found`);
    return health().report(req.params.id, list.map(checkReport));
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id/usage', { config: { access: 'read' } }, async (req, reply): Promise<VolumeUsageHistory> => {
    const ns = namespaceOf(req.query);
    if (!store.snapshot().get('volumes', rowKey(ns, req.params.id))) throw new ApiError('NOT_FOUND', `volume "${req.params.id}" not found in namespace "${ns}"`);
    const h = health();
    setIndexHeaders(ctx, reply, store.latestIndex());
    return {
      Namespace: ns,
      VolumeID: req.params.id,
      Latest: h.view(ns, req.params.id).usage.map(nodeVolumeUsage),
      Samples: h.history(ns, req.params.id).map(volumeUsageSample),
    };
  });

  app.get<{ Querystring: Query }>('/v1/volumes/drift', { config: { access: 'read' } }, async (req, reply): Promise<DriftReport> => {
    const row = await nomadRead(ctx, req, reply, ['drift'], (snap) => snap.get('drift', DRIFT_ROW_ID));
    return driftReport(row ?? { checkedAt: 0, findings: [], errors: [] });
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id/drift', { config: { access: 'read' } }, async (req, reply): Promise<VolumeDrift> => {
    const ns = namespaceOf(req.query);
    if (!store.snapshot().get('volumes', rowKey(ns, req.params.id))) throw new ApiError('NOT_FOUND', `volume "${req.params.id}" not found in namespace "${ns}"`);
    const row = await nomadRead(ctx, req, reply, ['drift'], (snap) => snap.get('drift', DRIFT_ROW_ID));
    const differences = (row?.findings ?? []).filter((f) => f.volumeId === req.params.id && (f.namespace ?? ns) === ns);
    return { Namespace: ns, VolumeID: req.params.id, CheckedAt: driftReport(row ?? { checkedAt: 0, findings: [], errors: [] }).CheckedAt, Differences: differences.map(driftFinding) };
  });

  app.get<{ Querystring: Query }>('/v1/volumes/doctor', { config: { access: 'read' } }, async (req, reply): Promise<DriftReport> => {
    const scope = scopeOf(req.query);
    const report = await doctor().run({ ...(scope ? { scope } : {}), signal: signalOf(req, reply) });
    setIndexHeaders(ctx, reply, store.latestIndex());
    return driftReport(report);
  });

  // A repair is not aborted when its client goes away: each step is idempotent, and half a repair is still progress.
  app.post<{ Querystring: Query }>('/v1/volumes/doctor', { config: { access: 'write' } }, async (req, reply): Promise<DriftReport> => {
    const scope = scopeOf(req.query);
    const report = await doctor().run({ ...(scope ? { scope } : {}), fix: true });
    setIndexHeaders(ctx, reply, store.latestIndex());
    return driftReport(report);
  });
}
