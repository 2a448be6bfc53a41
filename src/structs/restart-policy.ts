// A task group's restart and reschedule policies (Nomad's `restart` and
// `reschedule` blocks) with Nomad's defaults per job type (api/tasks.go's
// defaultServiceJobRestartPolicy, defaultBatchJobRestartPolicy,
// NewDefaultReschedulePolicy; nomad/structs' Default*Policy): a block gives
// the fields it sets, the job type's default the rest (RestartPolicy.Merge,
// ReschedulePolicy.Canonicalize), and the job's reschedule block sits
// between the two for its groups. System jobs are never rescheduled and take
// no reschedule block.

import { z } from 'zod';
import { DELAY_FUNCTIONS } from './job-blocks.js';
import { DURATION, durationMs } from './duration.js';
import { lazySchema } from '../api/index.js';

const duration = lazySchema(() => z.string().regex(DURATION, 'must be a duration such as "500ms", "30s", "5m" or "1h30m"'));

/** A `restart` block as written: each field it leaves out comes from the job type's default. */
export const restartInputSchema = lazySchema(() => z.strictObject({
  attempts: z.number().int().min(0).optional(),
  interval: duration.optional(),
  delay: duration.optional(),
  mode: z.enum(['fail', 'delay']).optional(),
}));
export type RestartInput = z.output<typeof restartInputSchema>;

/** A `reschedule` block as written (on a group or on the job): each field it leaves out comes from the job's, then the type's default. */
export const rescheduleInputSchema = lazySchema(() => z.strictObject({
  attempts: z.number().int().min(0).optional(),
  interval: duration.optional(),
  delay: duration.optional(),
  unlimited: z.boolean().optional(),
  /** How the wait grows from one reschedule to the next (rescheduleDelayMs), capped at maxDelay. */
  delayFunction: z.enum(DELAY_FUNCTIONS).optional(),
  maxDelay: duration.optional(),
}));
export type RescheduleInput = z.output<typeof rescheduleInputSchema>;

/** A group's restart policy, every field filled. */
export type RestartPolicy = Required<RestartInput>;
/** A group's reschedule policy, every field filled. */
export type ReschedulePolicy = Required<RescheduleInput>;

type PolicyJobType = 'service' | 'batch' | 'system';

/** Nomad's default restart policy of a job type: services and system jobs 2 in 30 m, batch 3 in 24 h; 15 s apart; then fail. */
export function defaultRestartPolicy(type: PolicyJobType): RestartPolicy {
  return type === 'batch'
    ? { attempts: 3, interval: '24h', delay: '15s', mode: 'fail' }
    : { attempts: 2, interval: '30m', delay: '15s', mode: 'fail' };
}

/** Nomad's default reschedule policy: services unlimited, exponential from 30 s to 1 h; batch once in 24 h after 5 s; system jobs none. */
export function defaultReschedulePolicy(type: PolicyJobType): ReschedulePolicy | undefined {
  if (type === 'service') return { attempts: 0, interval: '0s', delay: '30s', unlimited: true, delayFunction: 'exponential', maxDelay: '1h' };
  if (type === 'batch') return { attempts: 1, interval: '24h', delay: '5s', unlimited: false, delayFunction: 'constant', maxDelay: '0s' };
  return undefined;
}

/** Fields set in `over` win over `base`'s (Nomad's Merge: an unset field keeps the base's). */
function merge<T extends object>(base: T, over: Partial<T> | undefined): T {
  const out = { ...base };
  for (const [k, v] of Object.entries(over ?? {})) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

/** A group's restart policy: its block's fields over the job type's default. Pure. */
export function groupRestartPolicy(type: PolicyJobType, own: RestartInput | undefined): RestartPolicy {
  return merge(defaultRestartPolicy(type), own);
}

/**
 * A group's reschedule policy (Nomad's TaskGroup.Canonicalize): its block's
 * fields over the job's block's, the job type's default for the rest;
 * undefined for a system job without a block (validation refuses one with).
 * Pure.
 */
export function groupReschedulePolicy(type: PolicyJobType, jobBlock: RescheduleInput | undefined, own: RescheduleInput | undefined): ReschedulePolicy | undefined {
  if (type === 'system' && !jobBlock && !own) return undefined;
  // A system job's block is refused by rescheduleProblems; its fields are then filled from the service default.
  const base = defaultReschedulePolicy(type) ?? (defaultReschedulePolicy('service') as ReschedulePolicy);
  return merge(merge(base, jobBlock), own);
}

/** A problem with a reschedule policy, at the field it names. */
export interface PolicyProblem {
  field: keyof RescheduleInput;
  message: string;
}

/**
 * What Nomad's ReschedulePolicy.Validate refuses of a merged policy that
 * reschedules at all (attempts > 0 or unlimited): attempts without an
 * interval, and attempts with unlimited (ambiguous). Durations are printed
 * as Go prints them, as Nomad's messages do. Pure.
 */
export function rescheduleProblems(policy: ReschedulePolicy): PolicyProblem[] {
  if (policy.attempts <= 0) return [];
  const problems: PolicyProblem[] = [];
  const interval = durationMs(policy.interval);
  if (interval <= 0) problems.push({ field: 'interval', message: 'Interval must be a non zero value if Attempts > 0' });
  if (policy.unlimited) {
    problems.push({
      field: 'unlimited',
      message: `Reschedule Policy with Attempts = ${policy.attempts}, Interval = ${goDuration(interval)}, and Unlimited = true is ambiguous; If Attempts >0, Unlimited cannot also be set to true (set unlimited = false with attempts and an interval, or leave attempts out)`,
    });
  }
  return problems;
}

/** Milliseconds as Go's time.Duration.String() prints them: "0s", "1.5s", "30s", "1h0m0s", "5m0s". */
export function goDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}
