// Destructive or in-place: what a change of a job does to a group's running
// allocations, as Nomad's scheduler decides it (scheduler/util.go
// tasksUpdated, genericAllocUpdateFn). An allocation is compared with the
// job version it runs, not with the previous version, so that a revert keeps
// the allocations that already run the reverted-to spec. Pure.

import { isDeepStrictEqual } from 'node:util';
import type { JobSpec, Node, TaskGroup } from '../../structs/index.js';
import { failedConstraint, placementRules, type PlacementRules } from './constraints.js';
import { matchesDatacenter } from './placement.js';

/**
 * How an allocation of one version of a group becomes one of another:
 * - `same`: nothing its tasks see changed (count, constraints, affinities,
 *   spreads, update, migrate, reschedule, scaling, another group, the
 *   job's datacenters or priority...): updated in place where its node
 *   still satisfies the job;
 * - `resources`: its tasks' resource values changed too (Berth applies
 *   them to running tasks; Nomad replaces): in place where they fit;
 * - `destructive`: anything else its tasks see: replaced.
 */
export type GroupChange = 'same' | 'resources' | 'destructive';

/** The job fields a group's tasks see. */
export type GroupSource = Pick<JobSpec, 'meta' | 'groups'>;

/** The resource values an allocation's tasks can take in place (cgroup limits); other resource fields replace it. */
export const IN_PLACE_RESOURCE_FIELDS = ['cpuMhz', 'memoryMb', 'memoryMaxMb', 'cores', 'pidsMax'] as const;

/**
 * Group fields the running tasks do not see, or take in place: Nomad's
 * tasksUpdated leaves them out. The restart policy is one: the client gives
 * it to the running tasks' restart trackers. (Nomad also updates services,
 * kill and log settings in place; Berth's client applies only resources and
 * the restart policy to running tasks, so those still replace.)
 */
const SCHEDULING_GROUP_FIELDS = ['name', 'count', 'meta', 'constraints', 'affinities', 'spreads', 'update', 'migrate', 'reschedule', 'restart', 'scaling'] as const;
const SCHEDULING_TASK_FIELDS = ['meta', 'constraints', 'affinities'] as const;

/** JSON-equal values compare equal whatever their keys' order; undefined fields are absent. */
const plain = (v: unknown): unknown => (v === undefined ? v : JSON.parse(JSON.stringify(v)));

/**
 * What `group`'s tasks see of it in `job`: its fields without the ones only
 * the scheduler reads, each task with the meta it sees (the job's, under
 * the group's, under its own: Nomad's CombinedTaskMeta), and, with
 * `withResources` false, without the resource values an update applies in
 * place.
 */
function seenByTasks(job: GroupSource, group: TaskGroup, withResources: boolean): unknown {
  const out: Record<string, unknown> = { ...group };
  for (const f of SCHEDULING_GROUP_FIELDS) delete out[f];
  out['tasks'] = group.tasks.map((t) => {
    const task: Record<string, unknown> = { ...t, combinedMeta: { ...job.meta, ...group.meta, ...t.meta } };
    for (const f of SCHEDULING_TASK_FIELDS) delete task[f];
    if (!withResources) {
      const resources: Record<string, unknown> = { ...t.resources };
      for (const f of IN_PLACE_RESOURCE_FIELDS) delete resources[f];
      task['resources'] = resources;
    }
    return task;
  });
  return plain(out);
}

/**
 * How the allocations of group `name` of `before` become those of `after`
 * (see GroupChange). A group missing from either is destructive. Pure.
 */
export function groupChange(before: GroupSource, after: GroupSource, name: string): GroupChange {
  const a = before.groups.find((g) => g.name === name);
  const b = after.groups.find((g) => g.name === name);
  if (!a || !b) return 'destructive';
  if (!isDeepStrictEqual(seenByTasks(before, a, false), seenByTasks(after, b, false))) return 'destructive';
  return isDeepStrictEqual(seenByTasks(before, a, true), seenByTasks(after, b, true)) ? 'same' : 'resources';
}

/**
 * Whether a node still satisfies a job's group where an allocation of it
 * runs: its datacenter and the per-node constraints of the job, the group
 * and its tasks (Nomad re-checks feasibility on the same node before an
 * in-place update; a node that no longer fits makes it destructive).
 * Drivers, networks and volumes need no check: a change of them is
 * destructive already. Rules are compiled once per checker.
 */
export class NodeFit {
  readonly #datacenters: readonly string[];
  readonly #rules: PlacementRules;

  constructor(job: Pick<JobSpec, 'datacenters' | 'constraints' | 'affinities' | 'spreads'>, group: TaskGroup) {
    this.#datacenters = job.datacenters;
    this.#rules = placementRules(job, group);
  }

  /** Why `node` no longer satisfies the job (a stop description), or undefined when it does. Pure. */
  misfit(node: Node): string | undefined {
    if (!matchesDatacenter(this.#datacenters, node.datacenter)) {
      return `job updated: its node's datacenter "${node.datacenter}" is not among the job's (${this.#datacenters.join(', ')})`;
    }
    const constraint = failedConstraint(this.#rules, node);
    return constraint === undefined ? undefined : `job updated: its node no longer satisfies constraint "${constraint}"`;
  }
}
