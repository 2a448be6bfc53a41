// The `update` block: how a changed service job's allocations are replaced
// (Nomad's UpdateStrategy). Given at the job, at a group, or both; the job's
// block fills what a group's leaves out, as Nomad's Job.Canonicalize merges
// them. Durations are kept in milliseconds; a spec may write them as
// duration strings ("10s") or as numbers of milliseconds.

import { z } from 'zod';
import { DURATION, durationMs } from './duration.js';
import { lazySchema } from '../api/index.js';

export const HEALTH_CHECKS = ['checks', 'task_states', 'manual'] as const;
export type HealthCheck = (typeof HEALTH_CHECKS)[number];

const ms = lazySchema(() => z.union([
  z.number().int('must be a whole number of milliseconds').min(0, 'must not be negative'),
  z.string().regex(DURATION, 'must be a duration such as "10s", "5m" or "1h30m"').transform((s) => durationMs(s)),
]));

/** What a spec may write in an update block: every field optional, merged later. */
const updateFields = () => ({
  /** How many allocations of a group are replaced at once; 0 turns deployments off. */
  maxParallel: z.number().int().min(0, 'max_parallel must not be negative').optional(),
  healthCheck: z.enum(HEALTH_CHECKS).optional(),
  minHealthyTimeMs: ms.optional(),
  healthyDeadlineMs: ms.optional(),
  /** 0: no deadline. */
  progressDeadlineMs: ms.optional(),
  autoRevert: z.boolean().optional(),
  autoPromote: z.boolean().optional(),
  canary: z.number().int().min(0, 'canary must not be negative').optional(),
  staggerMs: ms.optional(),
});
export const updateInputSchema = lazySchema(() => z.strictObject(updateFields()));
export type UpdateInput = z.output<typeof updateInputSchema>;

/** A group's update strategy, every field set (the CONTRACTS.md shape). */
export interface UpdateStrategy {
  maxParallel: number;
  healthCheck: HealthCheck;
  minHealthyTimeMs: number;
  healthyDeadlineMs: number;
  progressDeadlineMs: number;
  autoRevert: boolean;
  autoPromote: boolean;
  canary: number;
  staggerMs: number;
}

/** Nomad's defaults (structs.DefaultUpdateStrategy). */
export const DEFAULT_UPDATE: Readonly<UpdateStrategy> = Object.freeze({
  maxParallel: 1,
  healthCheck: 'checks',
  minHealthyTimeMs: 10_000,
  healthyDeadlineMs: 300_000,
  progressDeadlineMs: 600_000,
  autoRevert: false,
  autoPromote: false,
  canary: 0,
  staggerMs: 30_000,
});

/** The defaults, then each given layer's fields over them (job, then group). Pure. */
export function mergeUpdate(...layers: Array<UpdateInput | undefined>): UpdateStrategy {
  const out: UpdateStrategy = { ...DEFAULT_UPDATE };
  for (const layer of layers) {
    for (const [k, v] of Object.entries(layer ?? {})) if (v !== undefined) (out as unknown as Record<string, unknown>)[k] = v;
  }
  return out;
}

/** True when the strategy makes changes roll out as a deployment (Nomad: a non-zero max_parallel). */
export function rolls(update: UpdateStrategy | undefined): update is UpdateStrategy {
  return update !== undefined && update.maxParallel > 0;
}

/**
 * The problems of a merged strategy, as Nomad's UpdateStrategy.Validate
 * finds them, each with the field it names. Pure.
 */
export function updateProblems(u: UpdateStrategy): Array<{ field: keyof UpdateStrategy; message: string }> {
  const out: Array<{ field: keyof UpdateStrategy; message: string }> = [];
  if (u.healthyDeadlineMs <= 0) out.push({ field: 'healthyDeadlineMs', message: 'healthy_deadline must be greater than zero' });
  if (u.minHealthyTimeMs >= u.healthyDeadlineMs) {
    out.push({ field: 'minHealthyTimeMs', message: `min_healthy_time (${u.minHealthyTimeMs} ms) must be less than healthy_deadline (${u.healthyDeadlineMs} ms)` });
  }
  if (u.progressDeadlineMs !== 0 && u.progressDeadlineMs <= u.healthyDeadlineMs) {
    out.push({ field: 'progressDeadlineMs', message: `progress_deadline (${u.progressDeadlineMs} ms) must be 0 or greater than healthy_deadline (${u.healthyDeadlineMs} ms)` });
  }
  if (u.staggerMs <= 0) out.push({ field: 'staggerMs', message: 'stagger must be greater than zero' });
  if (u.autoPromote && u.canary === 0 && u.maxParallel > 0) out.push({ field: 'autoPromote', message: 'auto_promote needs canary greater than zero' });
  return out;
}
