// Operator and system routes as Nomad has them:
// `GET`/`PUT`/`POST /v1/operator/scheduler/configuration` (the scheduler's
// configuration, with Nomad's `cas` check-and-set), `PUT /v1/system/gc`
// (garbage collection now) and `PUT /v1/system/reconcile/summaries`.

import type { FastifyInstance } from 'fastify';
import type { SchedulerConfiguration, SchedulerConfigurationResponse, SchedulerSetConfigurationResponse, SystemGcResult } from '../../api/index.js';
import { DEFAULT_SCHEDULER_CONFIG, SCHEDULER_CONFIG_ID, type SchedulerConfig } from '../../structs/index.js';
import { rowKey } from '../state/index.js';
import { ApiError } from './api-error.js';
import { nomadRead, setIndexHeaders } from './nomad-read.js';
import type { RouteContext } from './route-context.js';

/** The stored configuration in Nomad's shape. */
export function schedulerConfigShape(c: Readonly<SchedulerConfig>): SchedulerConfiguration {
  return {
    SchedulerAlgorithm: c.algorithm,
    PreemptionConfig: {
      SystemSchedulerEnabled: c.preemption.system,
      SysBatchSchedulerEnabled: c.preemption.sysbatch,
      BatchSchedulerEnabled: c.preemption.batch,
      ServiceSchedulerEnabled: c.preemption.service,
    },
    MemoryOversubscriptionEnabled: c.memoryOversubscription,
    RejectJobRegistration: c.rejectJobRegistration,
    PauseEvalBroker: c.pauseEvalBroker,
    NodeLimitForFeasibilityChecks: c.nodeLimitForFeasibilityChecks,
    CreateIndex: c.createIndex,
    ModifyIndex: c.modifyIndex,
  };
}

/**
 * Reads a body as Go's JSON decoder reads api.SchedulerConfiguration: keys
 * match field names case-insensitively, unknown keys are ignored, a missing
 * field is its zero value. Throws ApiError INVALID (400) with Nomad's words
 * for a wrong type or an unknown algorithm.
 */
export function parseSchedulerConfig(body: unknown): Omit<SchedulerConfig, 'createIndex' | 'modifyIndex'> {
  const fail = (why: string): never => {
    throw new ApiError('INVALID', `Error parsing scheduler config: ${why}`);
  };
  if (body === undefined || body === null) body = {};
  if (typeof body !== 'object' || Array.isArray(body)) fail('the body must be a JSON object');
  const field = (obj: object, name: string): unknown => {
    const key = Object.keys(obj).find((k) => k.toLowerCase() === name.toLowerCase());
    return key === undefined ? undefined : (obj as Record<string, unknown>)[key];
  };
  const bool = (obj: object, name: string): boolean => {
    const v = field(obj, name);
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') fail(`${name} must be a boolean`);
    return v as boolean;
  };
  const b = body as object;
  const algorithm = field(b, 'SchedulerAlgorithm') ?? '';
  if (typeof algorithm !== 'string') fail('SchedulerAlgorithm must be a string');
  if (algorithm !== '' && algorithm !== 'binpack' && algorithm !== 'spread') {
    throw new ApiError('INVALID', `invalid scheduler algorithm: ${String(algorithm)}`, { field: 'SchedulerAlgorithm' });
  }
  const limit = field(b, 'NodeLimitForFeasibilityChecks') ?? 0;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 0) fail('NodeLimitForFeasibilityChecks must be a non-negative integer');
  const pre = field(b, 'PreemptionConfig') ?? {};
  if (typeof pre !== 'object' || pre === null || Array.isArray(pre)) fail('PreemptionConfig must be an object');
  const p = pre as object;
  return {
    id: SCHEDULER_CONFIG_ID,
    algorithm: algorithm === 'spread' ? 'spread' : 'binpack',
    preemption: {
      system: bool(p, 'SystemSchedulerEnabled'),
      sysbatch: bool(p, 'SysBatchSchedulerEnabled'),
      batch: bool(p, 'BatchSchedulerEnabled'),
      service: bool(p, 'ServiceSchedulerEnabled'),
    },
    memoryOversubscription: bool(b, 'MemoryOversubscriptionEnabled'),
    rejectJobRegistration: bool(b, 'RejectJobRegistration'),
    pauseEvalBroker: bool(b, 'PauseEvalBroker'),
    // Nomad's zero means its default, 100.
    nodeLimitForFeasibilityChecks: (limit as number) || DEFAULT_SCHEDULER_CONFIG.nodeLimitForFeasibilityChecks,
  };
}

export function registerOperatorRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps } = ctx;
  const { store } = deps;

  app.get('/v1/operator/scheduler/configuration', { config: { access: 'read' } }, async (req, reply): Promise<SchedulerConfigurationResponse> => {
    const { config, index } = await nomadRead(ctx, req, reply, ['schedulerConfig'], (snap) => ({
      config: snap.get('schedulerConfig', rowKey(SCHEDULER_CONFIG_ID)) ?? DEFAULT_SCHEDULER_CONFIG,
      index: Math.max(1, snap.tableIndex('schedulerConfig')),
    }));
    const leadership = deps.leadership?.();
    return {
      SchedulerConfig: schedulerConfigShape(config),
      Index: index,
      LastContact: 0,
      KnownLeader: leadership === undefined || leadership.leader !== undefined,
      NextToken: '',
    };
  });

  const setConfig = async (req: { query: unknown; body: unknown }, reply: Parameters<typeof setIndexHeaders>[1]): Promise<SchedulerSetConfigurationResponse> => {
    const next = parseSchedulerConfig(req.body);
    const rawCas = (req.query as Record<string, unknown>)['cas'];
    let cas: number | undefined;
    if (rawCas !== undefined) {
      cas = Number(rawCas);
      if (rawCas === '' || !Number.isSafeInteger(cas) || cas < 0) throw new ApiError('INVALID', `Error parsing cas value: ${String(rawCas)} is not an index`, { field: 'cas' });
    }
    const { index, result } = await store.write((txn) => {
      const current = txn.get('schedulerConfig', rowKey(SCHEDULER_CONFIG_ID));
      // Nomad's check-and-set: the stored config's ModifyIndex must be `cas` (0: none stored yet).
      if (cas !== undefined && (current?.modifyIndex ?? 0) !== cas) return false;
      txn.put('schedulerConfig', next);
      return true;
    });
    setIndexHeaders(ctx, reply, index);
    return { Updated: result, Index: index };
  };
  app.put('/v1/operator/scheduler/configuration', { config: { access: 'write' } }, async (req, reply) => setConfig(req, reply));
  app.post('/v1/operator/scheduler/configuration', { config: { access: 'write' } }, async (req, reply) => setConfig(req, reply));

  // Garbage collection now, regardless of the age and count limits (berth system gc); management only.
  app.put('/v1/system/gc', { config: { access: 'write' } }, async (_req, reply): Promise<SystemGcResult> => {
    if (!deps.gc) throw new ApiError('UNAVAILABLE', 'this server runs no garbage collector');
    const out = await deps.gc.collect({ force: true });
    setIndexHeaders(ctx, reply, out.index);
    return { Allocations: out.allocations, Evaluations: out.evaluations, Jobs: out.jobs, Index: out.index };
  });

  // Berth computes job summaries from the allocations at every read: there is nothing to reconcile.
  app.put('/v1/system/reconcile/summaries', { config: { access: 'write' } }, async (_req, reply) => {
    setIndexHeaders(ctx, reply, store.latestIndex());
    return reply.send();
  });
}
