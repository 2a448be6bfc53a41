// How many outdated allocations of a group the reconciler may replace now,
// under the group's `update` block and its deployment (Nomad's
// reconciler: computeLimit, canaries first, then max_parallel at a time).
//
// Berth's canaries take the place of an outdated allocation (its old
// allocation stops first) instead of running beside it as Nomad's do: a
// canary of a group with a per-alloc or single-writer CSI volume can then
// take that volume, and the group never has two writers on it.

import { isClientTerminal, rolls, type Allocation, type Deployment, type TaskGroup } from '../../structs/index.js';

/** What may be replaced now, and whether the replacements are canaries. */
export interface RolloutBudget {
  /** How many outdated allocations may be stopped and replaced in this evaluation. */
  limit: number;
  /** The replacements (and any placement of the group now) are canaries awaiting promotion. */
  canary: boolean;
}

/**
 * The budget of `group`'s destructive updates. `groupAllocs` are the group's
 * allocations meant to run; `missing` counts the indexes that have no such
 * allocation (replacements waiting for a volume claim to be released count
 * here, so they use the budget until placed); `outdated` counts the live
 * allocations of an older version. `deployment` is the job
 * version's deployment, absent before the first placement creates it.
 * Without a rolling update block everything may be replaced at once.
 * `noCanaries`: the version reverts to a stable spec and rolls without its
 * canaries. Pure.
 */
export function rolloutBudget(
  group: TaskGroup,
  groupAllocs: readonly Allocation[],
  missing: number,
  outdated: number,
  deployment: Deployment | undefined,
  noCanaries = false,
): RolloutBudget {
  if (!rolls(group.update)) return { limit: Number.POSITIVE_INFINITY, canary: false };
  const update = group.update;
  // A paused, failed, finished or cancelled deployment replaces nothing more.
  if (deployment && deployment.status !== 'running') return { limit: 0, canary: false };
  const state = deployment?.taskGroups[group.name];
  const ours = deployment ? groupAllocs.filter((a) => a.deploymentId === deployment.id && !isClientTerminal(a.clientStatus)) : [];
  // One unhealthy allocation stops the rollout: the watcher fails the deployment.
  if (deployment && groupAllocs.some((a) => a.deploymentId === deployment.id && a.deploymentStatus?.healthy === false)) return { limit: 0, canary: false };
  const placed = state?.placedCanaries.length ?? 0;
  // Canaries only where something older runs (a new job's first allocations are no canaries).
  if (update.canary > 0 && !noCanaries && !state?.promoted && (outdated > 0 || placed > 0)) {
    return { limit: Math.max(0, update.canary - placed - missing), canary: true };
  }
  const waiting = ours.filter((a) => a.deploymentStatus?.healthy !== true).length;
  return { limit: Math.max(0, update.maxParallel - waiting - missing), canary: false };
}
