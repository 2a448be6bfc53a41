// Claims of CSI volumes over HTTP. Nomad keeps claims out of its API (its
// clients claim through its RPC); Berth's are:
//   POST   /v1/volume/csi/:id/claim         (node)  the node agent claims a volume for an allocation before mounting it
//   POST   /v1/volume/csi/:id/release       (node)  ... and releases it after
//   GET    /v1/volumes/csi/claims           (read)  Berth: every claim (`job`, `volume`, `namespace`), VolumeClaimListStub[]
//   DELETE /v1/volume/csi/:id/claim/:alloc  (write) Berth: release one claim (`force` stops its allocation first)
// The first two are Berth's node protocol, like Nomad's RPC; their answers
// are the node's own (the claim's answer carries the volume's secrets, for
// NodeStage/NodePublish: node role only).

import type { FastifyInstance } from 'fastify';
import type { VolumeClaimDeleteResponse, VolumeClaimListStub } from '../../api/index.js';
import { anySignal } from '../../lib/index.js';
import { isClientTerminal, type VolumeClaim } from '../../structs/index.js';
import { keyPrefix, rowKey } from '../state/index.js';
import type { ClaimRequest } from '../volumes/index.js';
import { ApiError } from './api-error.js';
import { boolQuery, writeNamespace } from './csi-request.js';
import { volumeClaimListStub } from './csi-shapes.js';
import { listPage, nomadRead } from './nomad-read.js';
import { namespaceOf, objectBody, type RouteContext } from './route-context.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };

function stringField(body: Record<string, unknown>, field: string): string {
  const v = body[field];
  if (typeof v !== 'string' || v === '') throw new ApiError('INVALID', `${field} is required`, { field });
  return v;
}

export function registerVolumeClaimRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps, signalOf } = ctx;
  const { store, volumes, jobs } = deps;

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

  // Every claim, or those of one job (?job=) or one volume (?volume=), each with its allocation's job and status.
  app.get<{ Querystring: Query }>('/v1/volumes/csi/claims', { config: { access: 'read' } }, async (req, reply) => {
    const job = req.query['job'];
    const volume = req.query['volume'];
    const rows = await nomadRead(ctx, req, reply, ['claims', 'allocations'], (snap, opts): VolumeClaimListStub[] =>
      snap
        .list('claims', opts.namespace !== '*' ? { prefix: volume ? keyPrefix(opts.namespace, volume) : keyPrefix(opts.namespace) } : {})
        .filter((c) => (!volume || c.volumeId === volume) && c.volumeId.startsWith(opts.prefix))
        .map((c) => volumeClaimListStub(c, snap))
        .filter((c) => !job || c.JobID === job),
    );
    return listPage(rows, req, reply, (c) => `${c.Namespace}.${c.VolumeID}.${c.AllocationID}`);
  });

  // Releases one claim (NodeUnpublish, NodeUnstage, ControllerUnpublish), as Nomad's claim GC does for a
  // finished allocation. Refused while the allocation runs, unless ?force=true: then it is stopped first.
  app.delete<{ Params: { id: string; alloc: string }; Querystring: Query }>(
    '/v1/volume/csi/:id/claim/:alloc',
    { config: { access: 'write' } },
    async (req, reply): Promise<VolumeClaimDeleteResponse> => {
      const ns = writeNamespace(req.query);
      const key = rowKey(ns, req.params.id, req.params.alloc);
      const claim = store.snapshot().get('claims', key) as VolumeClaim | undefined;
      if (!claim) throw new ApiError('NOT_FOUND', `volume ${req.params.id} has no claim by allocation ${req.params.alloc}`);
      const force = boolQuery(req.query, 'force');
      const alloc = store.snapshot().get('allocations', rowKey(claim.allocId));
      let stopped = false;
      if (alloc && !isClientTerminal(alloc.clientStatus)) {
        if (!force) {
          throw new ApiError('CONFLICT', `allocation ${alloc.id} (job ${alloc.jobId}) is ${alloc.clientStatus} and uses the volume; stop it first, or delete the claim with force (which stops it)`);
        }
        await jobs.stopAllocation(alloc.id);
        stopped = true;
        // Released by the claim watcher once the allocation is terminal; wait for that.
      }
      const signal = anySignal([signalOf(req, reply), AbortSignal.timeout(300_000)]);
      if (!stopped) await volumes.releaseByKey(key, 'claim delete requested', signal);
      let seen = store.latestIndex();
      while (store.snapshot().get('claims', key)) seen = await store.blockUntil(['claims'], seen, { signal });
      return { VolumeID: claim.volumeId, AllocationID: claim.allocId, NodeID: claim.nodeId, StoppedAllocation: stopped ? claim.allocId : '' };
    },
  );
}
