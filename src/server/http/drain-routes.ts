// Operating on nodes and claims: drain and eligibility (Nomad's
// PUT /v1/node/:id/drain and /eligibility, in Nomad's body shapes as well as
// Berth's), and the claims of volumes (list; delete one claim).

import type { FastifyInstance } from 'fastify';
import { isClientTerminal, publicClaim, type VolumeClaim } from '../../structs/index.js';
import { anySignal, systemClock } from '../../lib/index.js';
import { cancelDrain, setEligibility, startDrain, type DrainSpec } from '../drainer/index.js';
import { keyPrefix, rowKey } from '../state/index.js';
import { ApiError } from './api-error.js';
import { blockingRead, parseBlockingQuery } from './blocking.js';
import { namespaceOf, objectBody, type RouteContext } from './route-context.js';

type Query = Record<string, string | undefined>;

/** Nanoseconds in Nomad's bodies, milliseconds in Berth's (`deadlineMs`). */
function drainSpecOf(body: Record<string, unknown>): DrainSpec | undefined {
  const raw = body['DrainSpec'] ?? body['drainSpec'];
  if (raw === null || raw === undefined) return undefined;
  const spec = objectBody(raw, 'DrainSpec');
  const ms = spec['deadlineMs'];
  const ns = spec['Deadline'];
  let deadlineMs: number;
  if (typeof ms === 'number') deadlineMs = ms;
  else if (typeof ns === 'number') deadlineMs = ns < 0 ? -1 : Math.round(ns / 1e6);
  else if (ms === undefined && ns === undefined) deadlineMs = 3_600_000;
  else throw new ApiError('INVALID', 'DrainSpec.Deadline must be a number (nanoseconds; -1 forces, 0 means none)', { field: 'DrainSpec.Deadline' });
  const ignore = spec['IgnoreSystemJobs'] ?? spec['ignoreSystemJobs'] ?? false;
  if (typeof ignore !== 'boolean') throw new ApiError('INVALID', 'DrainSpec.IgnoreSystemJobs must be true or false', { field: 'DrainSpec.IgnoreSystemJobs' });
  return { deadlineMs, ignoreSystemJobs: ignore };
}

export function registerDrainRoutes(app: FastifyInstance, { deps, signalOf }: RouteContext): void {
  const { store, volumes, jobs } = deps;
  const clock = deps.clock ?? systemClock;

  // Body: { DrainSpec: { Deadline (ns), IgnoreSystemJobs } | null, MarkEligible } as Nomad's API takes it.
  app.put<{ Params: { id: string } }>('/v1/node/:id/drain', { config: { access: 'write' } }, async (req, reply) => {
    const body = objectBody(req.body ?? {});
    const spec = drainSpecOf(body);
    const markEligible = body['MarkEligible'] ?? body['markEligible'] ?? false;
    if (typeof markEligible !== 'boolean') throw new ApiError('INVALID', 'MarkEligible must be true or false', { field: 'MarkEligible' });
    const out = spec ? await startDrain(store, req.params.id, spec, clock.now()) : await cancelDrain(store, req.params.id, markEligible, clock.now());
    reply.header('X-Berth-Index', String(out.index));
    return { NodeModifyIndex: out.index, node: out.node };
  });

  // Body: { Eligibility: "eligible" | "ineligible" }.
  app.put<{ Params: { id: string } }>('/v1/node/:id/eligibility', { config: { access: 'write' } }, async (req, reply) => {
    const body = objectBody(req.body ?? {});
    const want = body['Eligibility'] ?? body['eligibility'];
    if (want !== 'eligible' && want !== 'ineligible') {
      throw new ApiError('INVALID', 'Eligibility must be "eligible" or "ineligible"', { field: 'Eligibility' });
    }
    const out = await setEligibility(store, req.params.id, want === 'eligible');
    reply.header('X-Berth-Index', String(out.index));
    return { NodeModifyIndex: out.index, node: out.node };
  });

  // Every claim, or those of one job (?job=) or one volume (?volume=), each with its allocation's job and status.
  app.get<{ Querystring: Query }>('/v1/volumes/claims', { config: { access: 'read' } }, async (req, reply) => {
    const ns = namespaceOf(req.query);
    const job = req.query['job'];
    const volume = req.query['volume'];
    const { index, result } = await blockingRead(store, ['claims', 'allocations'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      snap
        .list('claims', { ...(ns !== '*' ? { prefix: volume ? keyPrefix(ns, volume) : keyPrefix(ns) } : {}) })
        .filter((c) => !volume || c.volumeId === volume)
        .map((c) => {
          const a = snap.get('allocations', rowKey(c.allocId));
          return { ...publicClaim(c), jobId: a?.jobId ?? '', allocClientStatus: a?.clientStatus ?? 'gone', allocDesiredStatus: a?.desiredStatus ?? 'gone' };
        })
        .filter((c) => !job || c.jobId === job),
    );
    reply.header('X-Berth-Index', String(index));
    return result;
  });

  // Releases one claim (NodeUnpublish, NodeUnstage, ControllerUnpublish), as Nomad's claim GC does for a
  // finished allocation. Refused while the allocation runs, unless ?force=true: then it is stopped first.
  app.delete<{ Params: { id: string; alloc: string }; Querystring: Query }>(
    '/v1/volume/csi/:id/claim/:alloc',
    { config: { access: 'write' } },
    async (req, reply) => {
      const ns = namespaceOf(req.query);
      const key = rowKey(ns, req.params.id, req.params.alloc);
      const claim = store.snapshot().get('claims', key) as VolumeClaim | undefined;
      if (!claim) throw new ApiError('NOT_FOUND', `volume ${req.params.id} has no claim by allocation ${req.params.alloc}`);
      const force = req.query['force'] === 'true' || req.query['force'] === '1';
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
      return { deleted: { volumeId: claim.volumeId, allocId: claim.allocId, nodeId: claim.nodeId }, stoppedAllocation: stopped ? claim.allocId : undefined };
    },
  );
}
