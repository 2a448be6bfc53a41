// Whether an allocation of a deployment is healthy, as Nomad's allocation
// health watcher decides it: with health_check = "task_states" every task
// runs, unrestarted, for min_healthy_time; with "checks" its service checks
// (Allocation.checks, reported by the client) must all pass as well for that
// long; "manual" is never decided here. Not healthy by healthy_deadline
// (from the allocation's creation, or from when an in-place update made it
// join a later deployment), a failed task or a stopped allocation:
// unhealthy.

import { isClientTerminal, type Allocation, type TaskGroup, type UpdateStrategy } from '../../structs/index.js';

export interface HealthVerdict {
  /** Decided: true healthy, false unhealthy; absent while undecided. */
  healthy?: boolean;
  /** Why it is unhealthy, in the user's words. */
  reason?: string;
  /** While undecided: when (ms since the epoch) the verdict may change without news from the client. */
  recheckAt?: number;
  /** With health_check = "checks": since when every check passes (absent when one does not). */
  checksPassingSince?: number;
}

/** A task that need not run for the allocation to be healthy: a finished prestart/poststart task that is no sidecar, or a poststop one. */
function mayBeDone(group: TaskGroup, taskName: string): boolean {
  const lc = group.tasks.find((t) => t.name === taskName)?.lifecycle;
  return lc !== undefined && !lc.sidecar;
}

/**
 * The verdict on `alloc` at `now`. `checksPassingSince` is what the last
 * verdict on this allocation said (the watcher remembers it). Pure.
 */
export function judgeHealth(alloc: Allocation, group: TaskGroup, update: UpdateStrategy, now: number, checksPassingSince?: number): HealthVerdict {
  if (update.healthCheck === 'manual') return {};
  if (alloc.desiredStatus !== 'run') return { healthy: false, reason: 'the allocation was stopped before it was healthy' };
  if (isClientTerminal(alloc.clientStatus)) return { healthy: false, reason: `the allocation is ${alloc.clientStatus}` };
  for (const [name, t] of Object.entries(alloc.taskStates)) {
    if (t.failed) return { healthy: false, reason: `task "${name}" failed` };
  }
  // From when it joined its deployment: its creation, or an in-place update that joined a later one.
  const deadline = Math.max(alloc.createTime, alloc.deploymentStatus?.timestamp ?? 0) + update.healthyDeadlineMs;
  const undecided = (recheckAt: number, passing?: number): HealthVerdict => {
    if (now >= deadline) return { healthy: false, reason: `not healthy by its healthy_deadline (${update.healthyDeadlineMs / 1000} s)` };
    return passing === undefined ? { recheckAt: Math.min(recheckAt, deadline) } : { recheckAt: Math.min(recheckAt, deadline), checksPassingSince: passing };
  };
  const states = group.tasks.map((t) => [t.name, alloc.taskStates[t.name]] as const);
  let since = 0;
  for (const [name, t] of states) {
    if (t?.state === 'dead' && mayBeDone(group, name)) continue;
    if (t?.state !== 'running') return undecided(deadline);
    since = Math.max(since, t.startedAt);
  }
  if (alloc.clientStatus !== 'running') return undecided(deadline);
  let passing: number | undefined;
  if (update.healthCheck === 'checks') {
    const checks = Object.values(alloc.checks ?? {});
    if (checks.some((c) => c.status !== 'passing')) return undecided(deadline);
    passing = checks.length === 0 ? since : (checksPassingSince ?? now);
    since = Math.max(since, passing);
  }
  const healthyAt = since + update.minHealthyTimeMs;
  if (now >= healthyAt) return { healthy: true };
  return undecided(healthyAt, passing);
}
