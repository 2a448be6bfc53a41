// Operating on nodes: drain and eligibility (Nomad's PUT /v1/node/:id/drain
// and /eligibility, in Nomad's body shapes as well as Berth's). The claims of
// volumes are in volume-claim-routes.ts.

import type { FastifyInstance } from 'fastify';
import { systemClock } from '../../lib/index.js';
import { cancelDrain, setEligibility, startDrain, type DrainSpec } from '../drainer/index.js';
import { ApiError } from './api-error.js';
import { objectBody, type RouteContext } from './route-context.js';

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

export function registerDrainRoutes(app: FastifyInstance, { deps }: RouteContext): void {
  const { store } = deps;
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
}
