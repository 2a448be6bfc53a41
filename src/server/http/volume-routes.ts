// CSI volumes, claims and snapshots over HTTP. Every read is the volume
// service's public view (no secrets, mount flags redacted): secrets are
// write-only. Changes go through the volume service; a change is not aborted
// when its client goes away (the service checkpoints its steps).

import type { FastifyInstance } from 'fastify';
import { isNomadVolumeJson, nomadVolumeToSpec, parseVolumeSpec, VolumeSpecValidationError } from '../../structs/index.js';
import type { ClaimRequest } from '../volumes/index.js';
import { ApiError } from './api-error.js';
import { namespaceOf, objectBody, type RouteContext } from './route-context.js';
import { blockingRead, parseBlockingQuery } from './blocking.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };

function stringField(body: Record<string, unknown>, field: string): string {
  const v = body[field];
  if (typeof v !== 'string' || v === '') throw new ApiError('INVALID', `${field} is required`, { field });
  return v;
}

/**
 * The volume of a register or create body: `{ volume: spec }`, the spec
 * itself, or Nomad's API form (`{"Volumes": [CSIVolume]}`, PascalCase),
 * translated; a Nomad field Berth does not support is refused by name.
 */
function volumeSpecFrom(raw: unknown): Record<string, unknown> {
  const body = objectBody(raw);
  if (isNomadVolumeJson(body)) {
    const t = nomadVolumeToSpec(body);
    if (t.problems.length) throw new VolumeSpecValidationError(t.problems);
    return t.input;
  }
  return (body['volume'] && typeof body['volume'] === 'object' ? body['volume'] : body) as Record<string, unknown>;
}

export function registerVolumeRoutes(app: FastifyInstance, { deps, signalOf }: RouteContext): void {
  const { store, volumes } = deps;

  app.get<{ Querystring: Query }>('/v1/volumes', { config: { access: 'read' } }, async (req, reply) => {
    const ns = req.query['namespace'] ? namespaceOf(req.query) : undefined;
    const pluginId = req.query['pluginId'];
    const prefix = req.query['prefix'] ?? '';
    const { index, result } = await blockingRead(store, ['volumes', 'claims', 'plugins'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      volumes.list({ ...(ns && ns !== '*' ? { namespace: ns } : {}), ...(pluginId ? { pluginId } : {}) }, snap).filter((v) => v.id.startsWith(prefix)),
    );
    reply.header('X-Berth-Index', String(index));
    return result;
  });

  // With the volume health service: `usage` (latest per node) and `condition` (or null) are added.
  app.get<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id', { config: { access: 'node-read' } }, async (req, reply) => {
    const ns = namespaceOf(req.query);
    const { index, result } = await blockingRead(store, ['volumes', 'claims', 'plugins', 'volumeConditions'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) => {
      const v = volumes.get(ns, req.params.id, snap);
      return v && deps.health ? { ...v, ...deps.health.view(ns, req.params.id, snap) } : v;
    });
    if (!result) throw new ApiError('NOT_FOUND', `volume "${req.params.id}" not found in namespace "${ns}"`);
    reply.header('X-Berth-Index', String(index));
    return result;
  });

  // Register an existing volume (validated through the plugin's controller when it has one).
  app.put<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id', { config: { access: 'write' } }, async (req) => {
    const spec = volumeSpecFrom(req.body);
    if (spec['id'] !== undefined && spec['id'] !== req.params.id) {
      throw new ApiError('INVALID', `the volume's id must match the path ("${req.params.id}")`, { field: 'id' });
    }
    // The same schema as volume files; the service adds the checks that need state and the plugin.
    const parsed = parseVolumeSpec({ namespace: namespaceOf(req.query), ...spec, id: req.params.id }, 'register');
    return volumes.register(parsed);
  });

  app.delete<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id', { config: { access: 'write' } }, async (req, reply) => {
    const force = req.query['force'] === 'true' || req.query['force'] === '1';
    await volumes.deregister(namespaceOf(req.query), req.params.id, { force });
    return reply.status(200).send({ deregistered: req.params.id });
  });

  app.post<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id/create', { config: { access: 'write' } }, async (req) => {
    const spec = volumeSpecFrom(req.body);
    if (spec['id'] !== undefined && spec['id'] !== req.params.id) {
      throw new ApiError('INVALID', `the volume's id must match the path ("${req.params.id}")`, { field: 'id' });
    }
    const parsed = parseVolumeSpec({ namespace: namespaceOf(req.query), ...spec, id: req.params.id }, 'create');
    return volumes.create(parsed);
  });

  app.delete<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id/delete', { config: { access: 'write' } }, async (req) => {
    await volumes.delete(namespaceOf(req.query), req.params.id);
    return { deleted: req.params.id };
  });

  app.post<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id/detach', { config: { access: 'write' } }, async (req) => {
    const nodeId = req.query['node'] ?? req.query['nodeId'];
    if (!nodeId) throw new ApiError('INVALID', 'node is required (?node=<node id>)', { field: 'node' });
    // Refused while allocations use the volume on the node, unless forced: then they are stopped first.
    const force = req.query['force'] === 'true' || req.query['force'] === '1';
    // Detaching overrides a fence: the silent node's writer may still run.
    const fenced = volumes.claims({ namespace: namespaceOf(req.query), volumeId: req.params.id, nodeId }).filter((c) => c.state === 'taken' && c.fencedUntil);
    const { stoppedAllocations } = await volumes.detach(namespaceOf(req.query), req.params.id, nodeId, {
      force,
      stopAllocation: (allocId) => deps.jobs.stopAllocation(allocId),
    });
    if (fenced.length === 0) return { detached: req.params.id, nodeId, stoppedAllocations };
    const warning = `released the write claim of allocation ${fenced.map((c) => c.allocId).join(', ')} before its fence ended: if node ${nodeId} still runs that writer, two writers may now use the volume`;
    return { detached: req.params.id, nodeId, stoppedAllocations, warning };
  });

  app.post<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id/expand', { config: { access: 'write' } }, async (req) => {
    const body = objectBody(req.body);
    const range: { requiredBytes: number; limitBytes?: number } = { requiredBytes: body['requiredBytes'] as number };
    if (body['limitBytes'] !== undefined) range.limitBytes = body['limitBytes'] as number;
    return volumes.expand(namespaceOf(req.query), req.params.id, range);
  });

  app.post<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id/snapshot', { config: { access: 'write' } }, async (req) => {
    const body = objectBody(req.body);
    const parameters = body['parameters'] as Record<string, string> | undefined;
    return volumes.createSnapshot(namespaceOf(req.query), req.params.id, stringField(body, 'name'), parameters ? { parameters } : {});
  });

  app.get<{ Querystring: Query }>('/v1/volumes/snapshot', { config: { access: 'read' } }, async (req, reply) => {
    const pluginId = req.query['pluginId'];
    if (!pluginId) throw new ApiError('INVALID', 'pluginId is required', { field: 'pluginId' });
    const volumeId = req.query['volumeId'];
    return volumes.listSnapshots(pluginId, {
      namespace: namespaceOf(req.query),
      ...(volumeId ? { volumeId } : {}),
      signal: signalOf(req, reply),
    });
  });

  app.delete<{ Querystring: Query }>('/v1/volumes/snapshot', { config: { access: 'write' } }, async (req) => {
    const pluginId = req.query['pluginId'];
    const snapshotId = req.query['snapshotId'];
    if (!pluginId || !snapshotId) throw new ApiError('INVALID', 'pluginId and snapshotId are required', { field: pluginId ? 'snapshotId' : 'pluginId' });
    const body = req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};
    const secrets = body['secrets'] as Record<string, string> | undefined;
    const { verified } = await volumes.deleteSnapshot(pluginId, snapshotId, secrets ? { secrets } : {});
    return { deleted: snapshotId, verified };
  });

  app.get<{ Params: Params }>('/v1/plugin/csi/:id/volumes', { config: { access: 'read' } }, async (req, reply) => {
    return volumes.listPluginVolumes(req.params.id, { signal: signalOf(req, reply) });
  });

  // The node agent claims a volume for an allocation before mounting it, and releases it after.
  // The answer carries what NodeStage/NodePublish need, secrets included: node role only.
  app.post<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id/claim', { config: { access: 'node' } }, async (req) => {
    const body = objectBody(req.body);
    const mode = body['mode'];
    if (mode !== 'read' && mode !== 'write') throw new ApiError('INVALID', 'mode must be "read" or "write"', { field: 'mode' });
    const claim: ClaimRequest = { namespace: namespaceOf(req.query), volumeId: req.params.id, allocId: stringField(body, 'allocId'), mode };
    if (typeof body['accessMode'] === 'string') claim.accessMode = body['accessMode'];
    if (typeof body['attachmentMode'] === 'string') claim.attachmentMode = body['attachmentMode'];
    return volumes.claimForNode(claim);
  });

  app.post<{ Params: Params; Querystring: Query }>('/v1/volume/csi/:id/release', { config: { access: 'node' } }, async (req) => {
    const body = objectBody(req.body);
    const allocId = stringField(body, 'allocId');
    await volumes.release(namespaceOf(req.query), req.params.id, allocId, { reason: 'released by the node' });
    return { released: req.params.id, allocId };
  });
}
