// Reconciliation: what must change for a job's allocations to match its spec.
// Pure: given the job, its allocations and the nodes, it says which
// allocations to stop and which indexes to place (new, replacements of lost or
// outdated ones, reschedules of failed ones when the reschedule policy allows
// and its delay has passed), and which to update in place to the job's
// version. An allocation of an older version is compared with the spec it
// runs (task-updates.ts, Nomad's tasksUpdated): a change its tasks see
// replaces it; any other (count, constraints, update, another group...) is an
// in-place update where its node still satisfies the job, a replacement where
// it no longer does; new resource values are applied in place where they fit.
// Placement then picks nodes for the rest.

import {
  durationMs,
  isEligible,
  rescheduleDelayMs,
  isClientTerminal,
  type Allocation,
  type Deployment,
  type Job,
  type Node,
  type TaskGroup,
} from '../../structs/index.js';
import { emptyUsage, fitsInPlace, groupResources, type NodeUsage } from './placement.js';
import { rolloutBudget } from './rollout.js';
import { groupChange, NodeFit, type GroupChange, type GroupSource } from './task-updates.js';

export interface StopDecision {
  allocId: string;
  description: string;
  /** The allocation's node is down or gone: its client status becomes `lost`. */
  lost: boolean;
}

export interface PlaceRequest {
  group: string;
  index: number;
  /** The allocation this one replaces, if any. */
  previousAllocation?: string;
  rescheduleAttempts: number;
  /** Placed as a canary of the job version's deployment (awaits promotion). */
  canary?: boolean;
}

/** A live allocation that takes the job's new version (and its group's new resources) without a stop. */
export interface InPlaceUpdate {
  allocId: string;
  group: string;
}

export interface ReconcileOptions {
  /**
   * Node ID -> what is used there (live allocations), as placement counts it.
   * Needed for in-place updates: without it every outdated allocation is
   * replaced. Updated with the in-place updates decided, so the placements
   * that follow count them.
   */
  usage?: Map<string, NodeUsage>;
  /**
   * The deployment of the job's current version, if one was created: groups
   * with an `update` block replace their outdated allocations under it, a
   * few at a time (see rollout.ts).
   */
  deployment?: Deployment;
  /** The job's version reverts to a stable spec: its rollout places no canaries (deployments' revertsToStable). */
  noCanaries?: boolean;
  /**
   * The job as it was at an earlier version (its kept version), to compare
   * an allocation with the spec it runs: a revert then keeps the
   * allocations that run the reverted-to spec. Absent, or undefined for a
   * version not kept: the job's group versions decide (`groupVersions`,
   * `groupResourceVersions`).
   */
  jobAt?: (version: number) => GroupSource | undefined;
}

export interface ReconcileResult {
  stop: StopDecision[];
  place: PlaceRequest[];
  inPlace: InPlaceUpdate[];
  /** The earliest time (ms since the epoch) a failed allocation may be rescheduled; a follow-up is owed then. */
  followUpAt?: number;
}

/** The stop description of an allocation moved by a drain or `alloc stop` (Nomad's wording). */
export const MIGRATE_DESCRIPTION = 'alloc is being migrated';

/** True while the allocation is meant to run and its client has not finished with it. */
export function isLive(a: Allocation): boolean {
  return a.desiredStatus === 'run' && !isClientTerminal(a.clientStatus);
}

/**
 * True for an allocation that finished or failed (not lost) before the job's
 * latest submission or its node's latest registration: it no longer holds its
 * place, so the job is never wedged by it. A resubmission of an unchanged
 * spec, a changed spec, a purge and a new job of the same ID, and an agent
 * restart each let such allocations be placed again, once.
 */
export function isReplaceableTerminal(job: Job, alloc: Allocation, nodes: ReadonlyMap<string, Node>): boolean {
  if (alloc.clientStatus !== 'complete' && alloc.clientStatus !== 'failed') return false;
  if ((job.submitIndex ?? 0) > alloc.createIndex) return true;
  return (nodes.get(alloc.nodeId)?.registerIndex ?? 0) > alloc.createIndex;
}

function nodeGone(nodes: ReadonlyMap<string, Node>, nodeId: string): boolean {
  const node = nodes.get(nodeId);
  return !node || node.status === 'down';
}

/**
 * Decides the changes for a service or batch job (system jobs: see
 * `reconcileSystem`). Pure and safe to repeat: running it again on its own
 * applied result yields nothing to do (apart from a still-pending follow-up).
 */
export function reconcile(
  job: Job,
  allocs: readonly Allocation[],
  nodes: ReadonlyMap<string, Node>,
  now: number,
  opts: ReconcileOptions = {},
): ReconcileResult {
  const result: ReconcileResult = { stop: [], place: [], inPlace: [] };
  const groups = new Map(job.groups.map((g) => [g.name, g]));

  for (const alloc of allocs) {
    if (alloc.desiredStatus !== 'run') continue;
    const group = groups.get(alloc.taskGroup);
    if (job.stop || !group) {
      if (!isClientTerminal(alloc.clientStatus)) {
        result.stop.push({ allocId: alloc.id, description: job.stop ? 'job stopped' : 'group removed from the job', lost: false });
      }
    }
  }
  if (job.stop || job.type === 'system') return result;

  // One pass over the job's allocations for every group (a job may have thousands, in ten groups).
  const byId = new Map(allocs.map((a) => [a.id, a]));
  const byGroup = new Map<string, Allocation[]>(job.groups.map((g) => [g.name, []]));
  for (const a of allocs) if (a.desiredStatus === 'run') byGroup.get(a.taskGroup)?.push(a);
  for (const group of job.groups) {
    reconcileGroup(job, group, byGroup.get(group.name) ?? [], byId, nodes, now, opts, result);
  }
  return result;
}

/** The stop description of an allocation replaced because its node stopped its task by fencing. */
export const FENCED_DESCRIPTION = 'replaced at once: its node stopped its task after losing the servers (fencing)';

/** The task event a node records when it stops a task by fencing (the client's TASK_EVENTS.fenced). */
const FENCED_EVENT = 'Fenced';

/** Whether the allocation ended because its node stopped a task by fencing (stop_after_server_disconnect). */
function stoppedByFencing(alloc: Allocation): boolean {
  return Object.values(alloc.taskStates).some((t) => t.events.some((e) => e.type === FENCED_EVENT));
}

/**
 * How many reschedules led to `alloc` since `since` (ms since the epoch):
 * the allocations of its chain (itself and those it replaced) that a
 * reschedule created after `since`.
 */
function reschedulesWithin(alloc: Allocation, byId: ReadonlyMap<string, Allocation>, since: number): number {
  let count = 0;
  const seen = new Set<string>();
  for (let a: Allocation | undefined = alloc; a && !seen.has(a.id); a = a.previousAllocation ? byId.get(a.previousAllocation) : undefined) {
    seen.add(a.id);
    if (a.rescheduleAttempts > 0 && a.previousAllocation && a.createTime > since) count++;
  }
  return count;
}

/**
 * True when `alloc` (only its tasks' resource values are outdated) can take
 * the group's new resources on its node; counts them in `opts.usage` then.
 */
function updatesInPlace(alloc: Allocation, group: TaskGroup, nodes: ReadonlyMap<string, Node>, opts: ReconcileOptions): boolean {
  const node = nodes.get(alloc.nodeId);
  if (!node || !opts.usage) return false;
  let used = opts.usage.get(node.id);
  if (!used) opts.usage.set(node.id, (used = emptyUsage()));
  return fitsInPlace(node, used, alloc.resources, groupResources(group));
}

/** The stop description of an allocation replaced because its group changed (a destructive update). */
export const UPDATED_DESCRIPTION = 'job updated';

/**
 * How one group's live allocations of older versions reach the job's
 * version (Nomad's genericAllocUpdateFn): `in-place`, or the stop
 * description of a destructive update. Decisions per version are cached:
 * a thousand allocations of one version are compared once.
 */
class GroupUpdates {
  readonly #changes = new Map<number, GroupChange>();
  #fit: NodeFit | undefined;

  constructor(
    private readonly job: Job,
    private readonly group: TaskGroup,
    private readonly nodes: ReadonlyMap<string, Node>,
    private readonly opts: ReconcileOptions,
  ) {}

  #change(version: number): GroupChange {
    let change = this.#changes.get(version);
    if (change) return change;
    const before = this.opts.jobAt?.(version);
    if (before) change = groupChange(before, this.job, this.group.name);
    else {
      const groupVersion = this.job.groupVersions[this.group.name] ?? this.job.version;
      const resourceVersion = this.job.groupResourceVersions?.[this.group.name] ?? groupVersion;
      change = version < groupVersion ? 'destructive' : version < resourceVersion ? 'resources' : 'same';
    }
    this.#changes.set(version, change);
    return change;
  }

  /**
   * Undefined for an allocation of the job's version (nothing to do);
   * `misfit` when its node no longer satisfies the job. Counts a resource
   * change made in place in `opts.usage`.
   */
  decide(alloc: Allocation): 'in-place' | { stop: string; misfit?: true } | undefined {
    if (alloc.jobVersion >= this.job.version) return undefined;
    const change = this.#change(alloc.jobVersion);
    if (change === 'destructive') return { stop: UPDATED_DESCRIPTION };
    const node = this.nodes.get(alloc.nodeId);
    if (!node) return { stop: UPDATED_DESCRIPTION };
    const misfit = (this.#fit ??= new NodeFit(this.job, this.group)).misfit(node);
    if (misfit) return { stop: misfit, misfit: true };
    if (change === 'resources' && !sameResources(alloc.resources, groupResources(this.group)) && !updatesInPlace(alloc, this.group, this.nodes, this.opts)) {
      return { stop: UPDATED_DESCRIPTION };
    }
    return 'in-place';
  }
}

function sameResources(a: { cpuMhz: number; memoryMb: number } | undefined, b: { cpuMhz: number; memoryMb: number }): boolean {
  return a?.cpuMhz === b.cpuMhz && a.memoryMb === b.memoryMb;
}

function reconcileGroup(
  job: Job,
  group: TaskGroup,
  allocs: readonly Allocation[],
  byId: ReadonlyMap<string, Allocation>,
  nodes: ReadonlyMap<string, Node>,
  now: number,
  opts: ReconcileOptions,
  result: ReconcileResult,
): void {
  const updates = new GroupUpdates(job, group, nodes, opts);
  // Index -> the allocation holding it (live, done, or failed and waiting).
  const held = new Map<number, Allocation>();
  // Live allocations of an older version that must be replaced (stopped, then placed anew), with why.
  const outdated: Allocation[] = [];
  const why = new Map<string, string>();
  const byAge = [...allocs].sort((a, b) => a.createIndex - b.createIndex);
  for (const alloc of byAge) {
    const index = alloc.index ?? 0;
    if (held.has(index)) {
      // Two allocations for one index (should not happen): keep the older.
      if (!isClientTerminal(alloc.clientStatus)) result.stop.push({ allocId: alloc.id, description: 'duplicate index', lost: false });
      continue;
    }
    if (!isClientTerminal(alloc.clientStatus) && nodeGone(nodes, alloc.nodeId)) {
      result.stop.push({ allocId: alloc.id, description: 'node is down', lost: true });
      if (index < group.count) {
        result.place.push({ group: group.name, index, previousAllocation: alloc.id, rescheduleAttempts: alloc.rescheduleAttempts });
      }
      held.set(index, alloc);
      continue;
    }
    held.set(index, alloc);
    if (index >= group.count) continue; // stopped below as scale-down
    if (isLive(alloc) && alloc.desiredTransition?.migrate) {
      // A drain (or `alloc stop`) asked for it to move: stop it, place its replacement.
      result.stop.push({ allocId: alloc.id, description: MIGRATE_DESCRIPTION, lost: false });
      result.place.push({ group: group.name, index, previousAllocation: alloc.id, rescheduleAttempts: alloc.rescheduleAttempts });
      continue;
    }
    if (alloc.clientStatus === 'failed' && isReplaceableTerminal(job, alloc, nodes)) {
      result.stop.push({ allocId: alloc.id, description: 'placed again after the job was resubmitted or its node restarted', lost: false });
      result.place.push({ group: group.name, index, previousAllocation: alloc.id, rescheduleAttempts: 0 });
      continue;
    }
    if (alloc.clientStatus === 'failed' && stoppedByFencing(alloc)) {
      // Not a failure of the task: its node lost the servers and stopped it so that no two writers run.
      // Replaced now, as a lost allocation is, without a reschedule delay or attempt.
      result.stop.push({ allocId: alloc.id, description: FENCED_DESCRIPTION, lost: false });
      result.place.push({ group: group.name, index, previousAllocation: alloc.id, rescheduleAttempts: alloc.rescheduleAttempts });
      continue;
    }
    if (alloc.clientStatus === 'failed' || (alloc.clientStatus === 'complete' && job.type === 'service')) {
      const failed = alloc.clientStatus === 'failed';
      const policy = group.reschedule;
      if (!policy) continue; // only a system job's groups have none, and they are not reconciled here
      // An operator's `job eval -force-reschedule` overrides the policy's attempts and delay.
      const forced = failed && alloc.desiredTransition?.forceReschedule === true;
      // Out of attempts within the policy's interval: it stays failed.
      if (failed && !forced && !policy.unlimited && reschedulesWithin(alloc, byId, now - durationMs(policy.interval)) >= policy.attempts) continue;
      // The wait grows with each reschedule by the policy's delay function (constant, exponential, fibonacci).
      const wait = rescheduleDelayMs(policy.delayFunction ?? 'constant', durationMs(policy.delay), durationMs(policy.maxDelay ?? '1h'), alloc.rescheduleAttempts + 1);
      const at = failed && !forced ? alloc.modifyTime + wait : now;
      if (at > now) {
        result.followUpAt = Math.min(result.followUpAt ?? at, at);
        continue;
      }
      result.stop.push({ allocId: alloc.id, description: failed ? 'rescheduled after failure' : 'replaced after completion', lost: false });
      result.place.push({
        group: group.name,
        index,
        previousAllocation: alloc.id,
        rescheduleAttempts: alloc.rescheduleAttempts + (failed ? 1 : 0),
      });
      continue;
    }
    const update = isLive(alloc) ? updates.decide(alloc) : undefined;
    if (update === 'in-place') result.inPlace.push({ allocId: alloc.id, group: group.name });
    else if (update) {
      outdated.push(alloc);
      why.set(alloc.id, update.stop);
    }
  }
  // Under an update block, only as many as the rollout allows now, lowest index first.
  const running = new Set(allocs.filter((a) => !isClientTerminal(a.clientStatus) && (a.index ?? 0) < group.count).map((a) => a.index ?? 0));
  const budget = rolloutBudget(group, allocs, group.count - running.size, outdated.length, opts.deployment, opts.noCanaries);
  for (const alloc of outdated.sort((a, b) => (a.index ?? 0) - (b.index ?? 0)).slice(0, budget.limit)) {
    result.stop.push({ allocId: alloc.id, description: budget.canary ? 'replaced by a canary' : (why.get(alloc.id) ?? UPDATED_DESCRIPTION), lost: false });
    const req: PlaceRequest = { group: group.name, index: alloc.index ?? 0, previousAllocation: alloc.id, rescheduleAttempts: 0 };
    if (budget.canary) req.canary = true;
    result.place.push(req);
  }
  for (const [index, alloc] of held) {
    if (index >= group.count && !isClientTerminal(alloc.clientStatus) && !nodeGone(nodes, alloc.nodeId)) {
      result.stop.push({ allocId: alloc.id, description: 'scaled down', lost: false });
    }
  }
  // A replacement placed after its migrated predecessor stopped (it waited for a claim) still names it: the newest per index.
  const migratedAt = new Map<number, Allocation>();
  for (const a of byId.values()) {
    if (a.taskGroup !== group.name || !a.desiredTransition?.migrate || a.desiredStatus === 'run') continue;
    const at = migratedAt.get(a.index ?? 0);
    if (!at || a.createIndex > at.createIndex) migratedAt.set(a.index ?? 0, a);
  }
  for (let index = 0; index < group.count; index++) {
    if (held.has(index)) continue;
    const migrated = migratedAt.get(index);
    result.place.push({ group: group.name, index, rescheduleAttempts: 0, ...(budget.canary ? { canary: true } : {}), ...(migrated ? { previousAllocation: migrated.id } : {}) });
  }
}

/**
 * For a system job: one allocation per group on every node that is not down.
 * Returns the stops (job stopped, node down, outdated) and, per group, the
 * nodes that lack a live allocation; placement then checks which of those are
 * feasible.
 */
export function reconcileSystem(
  job: Job,
  allocs: readonly Allocation[],
  nodes: readonly Node[],
  opts: ReconcileOptions = {},
): { stop: StopDecision[]; missing: Array<{ group: string; nodeId: string; previousAllocation?: string }>; inPlace: InPlaceUpdate[] } {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const base = reconcile(job, allocs, byId, 0);
  const stop = [...base.stop];
  const inPlace: InPlaceUpdate[] = [];
  const missing: Array<{ group: string; nodeId: string; previousAllocation?: string }> = [];
  if (job.stop) return { stop, missing, inPlace };
  for (const group of job.groups) {
    const updates = new GroupUpdates(job, group, byId, opts);
    const onNode = new Map<string, Allocation>();
    for (const a of allocs) {
      // A failed or finished allocation keeps its node: system jobs are not rescheduled.
      if (a.taskGroup !== group.name || a.desiredStatus !== 'run' || a.clientStatus === 'lost') continue;
      if (nodeGone(byId, a.nodeId)) {
        if (isClientTerminal(a.clientStatus)) continue;
        stop.push({ allocId: a.id, description: 'node is down', lost: true });
        continue;
      }
      const there = onNode.get(a.nodeId);
      if (there && isClientTerminal(there.clientStatus) && !isClientTerminal(a.clientStatus)) {
        // A live allocation holds the node's place rather than a finished one.
        onNode.set(a.nodeId, a);
        continue;
      }
      if (there) {
        if (isClientTerminal(a.clientStatus)) continue;
        stop.push({ allocId: a.id, description: 'duplicate allocation on node', lost: false });
        continue;
      }
      onNode.set(a.nodeId, a);
    }
    for (const node of nodes) {
      if (node.status === 'down') continue;
      const current = onNode.get(node.id);
      if (current && isLive(current) && current.desiredTransition?.migrate) {
        // Drained off (or `alloc stop`): stopped; placed again only where the node still takes work.
        stop.push({ allocId: current.id, description: MIGRATE_DESCRIPTION, lost: false });
        if (isEligible(node)) missing.push({ group: group.name, nodeId: node.id, previousAllocation: current.id });
        continue;
      }
      // An ineligible node keeps the system allocations it has but takes no new ones.
      if (!current && !isEligible(node)) continue;
      if (!current) missing.push({ group: group.name, nodeId: node.id });
      else if (isReplaceableTerminal(job, current, byId)) {
        stop.push({ allocId: current.id, description: 'placed again after the job was resubmitted or its node restarted', lost: false });
        missing.push({ group: group.name, nodeId: node.id, previousAllocation: current.id });
      } else if (isLive(current)) {
        const update = updates.decide(current);
        if (update === 'in-place') inPlace.push({ allocId: current.id, group: group.name });
        else if (update) {
          stop.push({ allocId: current.id, description: update.stop, lost: false });
          // A node that no longer satisfies the job takes no new allocation of it.
          if (!update.misfit) missing.push({ group: group.name, nodeId: node.id, previousAllocation: current.id });
        }
      }
    }
  }
  return { stop, missing, inPlace };
}
