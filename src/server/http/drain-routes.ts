// Operating on nodes (Nomad's node writes): drain and eligibility
// (`POST`/`PUT /v1/node/:id/drain` and `/eligibility`), purge and
// evaluate, in Nomad's bodies and answers. The claims of volumes are in
// volume-claim-routes.ts.

import type { FastifyInstance, FastifyReply } from 'fastify';
import type { z } from 'zod';
import * as Api from '../../api/index.js';
import { systemClock } from '../../lib/index.js';
import { cancelDrain, setEligibility, startDrain, type DrainSpec } from '../drainer/index.js';
import { ApiError } from './api-error.js';
import { setIndexHeaders } from './nomad-read.js';
import { type RouteContext } from './route-context.js';
import { rowKey } from '../state/index.js';
type Params = { id: string };

/** A request body read with its API schema (unknown fields ignored, as Go's decoder does). Throws ApiError INVALID naming the field. */
function bodyOf<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.join('.') ?? '';
  throw new ApiError('INVALID', `${field ? `${field}: ` : ''}${issue?.message ?? 'malformed request body'}`, field ? { field } : {});
}

/** Nomad's Deadline (nanoseconds; negative forces, 0 means none) as the drainer's milliseconds. */
function drainSpecOf(spec: { Deadline: number; IgnoreSystemJobs?: boolean | undefined }): DrainSpec {
  const ns = spec.Deadline;
  return { deadlineMs: ns < 0 ? -1 : Math.round(ns / 1e6), ignoreSystemJobs: spec.IgnoreSystemJobs ?? false };
}

export function registerDrainRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps } = ctx;
  const { store, jobs } = deps;
  const clock = deps.clock ?? systemClock;

  /** A node write's answer: its index in the headers and in Nomad's response fields. */
  const written = (reply: FastifyReply, index: number, nodeModifyIndex: number, evalIds: string[] = [], evalIndex = 0): Api.NodeDrainUpdateResponse => {
    setIndexHeaders(ctx, reply, index);
    return { NodeModifyIndex: nodeModifyIndex, EvalIDs: evalIds, EvalCreateIndex: evalIndex, Index: index };
  };

  /**
   * Evaluates every job with an allocation meant to run on the node, and
   * every system job (Nomad's node evaluations), each recorded as an
   * evaluation triggered by the node. Resolves with their IDs and the
   * index of the last.
   */
  const evaluateNode = async (nodeId: string, jobsOf: { namespace: string; jobId: string }[]): Promise<{ ids: string[]; index: number }> => {
    const ids: string[] = [];
    let index = 0;
    for (const { namespace, jobId } of jobsOf) {
      const out = await jobs.evaluate(namespace, jobId, { trigger: 'node-update', always: true, nodeId });
      if (out.evaluation) ids.push(out.evaluation.id);
      index = Math.max(index, out.index);
    }
    return { ids, index };
  };
  const jobsOfNode = (nodeId: string): { namespace: string; jobId: string }[] => {
    const snap = store.snapshot();
    const keys = new Map<string, { namespace: string; jobId: string }>();
    for (const j of snap.list('jobs', { filter: (j) => j.type === 'system' && !j.stop })) keys.set(rowKey(j.namespace, j.id), { namespace: j.namespace, jobId: j.id });
    for (const a of snap.list('allocations', { filter: (a) => a.nodeId === nodeId && a.desiredStatus === 'run' })) {
      keys.set(rowKey(a.namespace, a.jobId), { namespace: a.namespace, jobId: a.jobId });
    }
    return [...keys.values()];
  };

  // Body: Nomad's NodeUpdateDrainRequest, { DrainSpec: { Deadline (ns), IgnoreSystemJobs } | null, MarkEligible, Meta }.
  // A null DrainSpec cancels the drain. The drainer (leader) moves the allocations; the answer names no evaluation.
  const drain = async (req: { params: Params; body: unknown }, reply: FastifyReply): Promise<Api.NodeDrainUpdateResponse> => {
    const body = bodyOf(Api.NodeUpdateDrainRequest, req.body);
    const meta = body.Meta ?? undefined;
    const out = body.DrainSpec
      ? await startDrain(store, req.params.id, drainSpecOf(body.DrainSpec), clock.now(), meta)
      : await cancelDrain(store, req.params.id, body.MarkEligible ?? false, clock.now(), meta);
    return written(reply, out.index, out.node.modifyIndex);
  };
  app.post<{ Params: Params }>('/v1/node/:id/drain', { config: { access: 'write' } }, drain);
  app.put<{ Params: Params }>('/v1/node/:id/drain', { config: { access: 'write' } }, drain);

  // Body: { Eligibility: "eligible" | "ineligible" }. A draining node cannot be made eligible (409).
  const eligibility = async (req: { params: Params; body: unknown }, reply: FastifyReply): Promise<Api.NodeEligibilityUpdateResponse> => {
    const body = bodyOf(Api.NodeUpdateEligibilityRequest, req.body);
    const out = await setEligibility(store, req.params.id, body.Eligibility === 'eligible', clock.now());
    return written(reply, out.index, out.node.modifyIndex);
  };
  app.post<{ Params: Params }>('/v1/node/:id/eligibility', { config: { access: 'write' } }, eligibility);
  app.put<{ Params: Params }>('/v1/node/:id/eligibility', { config: { access: 'write' } }, eligibility);

  // Removes the node from the cluster's state (a live agent registers again); its jobs are evaluated.
  const purge = async (req: { params: Params }, reply: FastifyReply): Promise<Api.NodeUpdateResponse> => {
    const affected = jobsOfNode(req.params.id);
    const { index } = await deps.nodes.purge(req.params.id);
    const evals = await evaluateNode(req.params.id, affected);
    return nodeUpdateResponse(written(reply, Math.max(index, evals.index), index, evals.ids, evals.index));
  };
  app.post<{ Params: Params }>('/v1/node/:id/purge', { config: { access: 'write' } }, purge);
  app.put<{ Params: Params }>('/v1/node/:id/purge', { config: { access: 'write' } }, purge);

  // Evaluates the node's jobs now (Nomad's force-evaluate).
  const evaluate = async (req: { params: Params }, reply: FastifyReply): Promise<Api.NodeUpdateResponse> => {
    const node = store.snapshot().get('nodes', rowKey(req.params.id));
    if (!node) throw new ApiError('NOT_FOUND', 'node not found', { nodeId: req.params.id });
    const evals = await evaluateNode(node.id, jobsOfNode(node.id));
    return nodeUpdateResponse(written(reply, Math.max(evals.index, node.modifyIndex), node.modifyIndex, evals.ids, evals.index));
  };
  app.post<{ Params: Params }>('/v1/node/:id/evaluate', { config: { access: 'write' } }, evaluate);
  app.put<{ Params: Params }>('/v1/node/:id/evaluate', { config: { access: 'write' } }, evaluate);
}

/** Nomad's structs.NodeUpdateResponse for an operator's write: the node fields a registering agent reads are zero. */
function nodeUpdateResponse(w: Api.NodeDrainUpdateResponse): Api.NodeUpdateResponse {
  return {
    HeartbeatTTL: 0,
    EvalIDs: w.EvalIDs,
    EvalCreateIndex: w.EvalCreateIndex,
    NodeModifyIndex: w.NodeModifyIndex,
    Features: 0,
    LeaderRPCAddr: '',
    NumNodes: 0,
    Servers: null,
    SchedulingEligibility: '',
    SignedIdentity: null,
    Index: w.Index,
    LastContact: 0,
    KnownLeader: true,
    NextToken: '',
  };
}
