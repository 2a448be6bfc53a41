// What a drain does next on one node: pure decisions over the node, the
// allocations, the jobs and the claims, so that every rule is tested with a
// manual clock and no store (Nomad's nomad/drainer, with Berth's rule for CSI
// plugins added).
//
// - Service allocations move in batches bounded by their group's `migrate`
//   block: a group keeps at least `count - max_parallel` healthy allocations,
//   healthy meaning running for `min_healthy_time` (and every check passing
//   with health_check = "checks").
// - Batch allocations are left to finish; the deadline stops them.
// - System allocations stop last, once nothing else on the node runs.
// - A CSI plugin's allocation (node or controller) stops only after no claim
//   on the node uses a volume of that plugin and no allocation there still
//   uses one: its volumes are unpublished and unstaged first, even past the
//   deadline (Nomad issues #8080, #8232, #11614, #10927: a node plugin drained
//   first strands the volume and its claim).
// - The drain is done when nothing that it moves still runs on the node and
//   every claim of the node's stopped allocations is released.

import {
  isClientTerminal,
  migrateSchema,
  type Allocation,
  type DrainStrategy,
  type Job,
  type MigrateStrategy,
  type Node,
  type TaskGroup,
  type VolumeClaim,
} from '../../structs/index.js';

export interface DrainInput {
  node: Node;
  /** Every allocation of every job that has one on the node (their groups' health spans nodes). */
  allocs: readonly Allocation[];
  /** `namespace\0jobId` -> job. */
  jobs: ReadonlyMap<string, Job>;
  /** The claims held on the node. */
  claims: readonly VolumeClaim[];
  /** Nodes by ID, to tell which other nodes drain too. */
  nodes: ReadonlyMap<string, Node>;
  now: number;
}

export interface DrainDecision {
  /** Allocations to mark for migration now. */
  migrate: string[];
  /** Nothing the drain moves runs on the node any more, and its claims are released. */
  done: boolean;
  /** What the drain does or waits for, in the operator's words. */
  message: string;
  /** When (clock ms) a decision may change without any store change: an allocation becomes healthy, the deadline. */
  recheckAt?: number;
}

// Nomad's defaults, as the schema fills them in; parsed on first use, since the schema is built on first use (src/api/lazy-schema.ts).
let defaultMigrate: MigrateStrategy | undefined;

export function jobKey(namespace: string, jobId: string): string {
  return `${namespace}\0${jobId}`;
}

/** The migrate strategy that applies to `group`: its own, else its job's, else Nomad's defaults. */
export function migrateStrategyOf(job: Job, group: TaskGroup): MigrateStrategy {
  return group.migrate ?? job.migrate ?? (defaultMigrate ??= migrateSchema.parse({}));
}

/** True when the strategy's deadline has passed (or the drain is forced). */
export function deadlineReached(strategy: DrainStrategy, now: number): boolean {
  return strategy.deadlineMs < 0 || (strategy.forceDeadline > 0 && now >= strategy.forceDeadline);
}

/** The CSI plugin a group's tasks serve, if any (plugin allocations stop only after their volumes are gone). */
function pluginOf(group: TaskGroup | undefined): string | undefined {
  return group?.tasks.find((t) => t.csiPlugin)?.csiPlugin?.id;
}

/**
 * Health fields other parts of Berth report on an allocation (deployments:
 * `deploymentStatus`; services: `checks`), read here when present.
 */
interface HealthReports {
  deploymentStatus?: { healthy?: boolean };
  checks?: Record<string, { status: string }>;
}

/** Still running on its node (whatever the server wants of it). */
function running(a: Allocation): boolean {
  return !isClientTerminal(a.clientStatus);
}

/** Live, not being moved, and its client has not finished with it. */
function liveAndStaying(a: Allocation): boolean {
  return a.desiredStatus === 'run' && running(a) && !a.desiredTransition?.migrate;
}

/**
 * When `a` counts as healthy for a migration (ms since the epoch), or
 * undefined when it cannot become healthy on its own (not running).
 */
export function healthyAt(a: Allocation, strategy: MigrateStrategy): number | undefined {
  const reports = a as Allocation & HealthReports;
  if (reports.deploymentStatus?.healthy === true) return 0;
  if (a.clientStatus !== 'running') return undefined;
  const tasks = Object.values(a.taskStates ?? {});
  if (tasks.length === 0 || tasks.some((t) => t.state !== 'running' && !(t.state === 'dead' && !t.failed))) return undefined;
  if (strategy.healthCheck === 'checks' && Object.values(reports.checks ?? {}).some((c) => c.status !== 'passing')) return undefined;
  const started = Math.max(0, ...tasks.filter((t) => t.state === 'running').map((t) => t.startedAt));
  return started + strategy.minHealthyTimeMs;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/**
 * Decides the next step of the drain of `input.node` (which must have a
 * drain strategy). Pure; safe to repeat: allocations already marked are not
 * marked again, so applying the decision and deciding again yields nothing
 * new until something changes.
 */
export function decideDrain(input: DrainInput): DrainDecision {
  const { node, now } = input;
  const strategy = node.drainStrategy;
  if (!strategy) return { migrate: [], done: true, message: 'not draining' };
  const forced = deadlineReached(strategy, now);
  const migrate: string[] = [];
  const waits: string[] = [];
  let recheckAt: number | undefined = !forced && strategy.forceDeadline > 0 ? strategy.forceDeadline : undefined;
  const soon = (at: number): void => void (recheckAt = recheckAt === undefined ? at : Math.min(recheckAt, at));

  const onNode = input.allocs.filter((a) => a.nodeId === node.id);
  const groupOf = (a: Allocation): { job?: Job; group?: TaskGroup } => {
    const job = input.jobs.get(jobKey(a.namespace, a.jobId));
    return { job, group: job?.groups.find((g) => g.name === a.taskGroup) };
  };
  const isSystem = (a: Allocation): boolean => groupOf(a).job?.type === 'system';

  // Service and batch allocations, group by group.
  const byGroup = new Map<string, Allocation[]>();
  for (const a of onNode) {
    if (isSystem(a) || !liveAndStaying(a)) continue;
    const key = `${jobKey(a.namespace, a.jobId)}\0${a.taskGroup}`;
    byGroup.set(key, [...(byGroup.get(key) ?? []), a]);
  }
  let heldBack = 0;
  for (const drainable of byGroup.values()) {
    const { job, group } = groupOf(drainable[0] as Allocation);
    if (forced || !job || !group) {
      migrate.push(...drainable.map((a) => a.id));
      continue;
    }
    // Batch work is left to finish; the deadline stops what remains.
    if (job.type === 'batch') {
      heldBack += drainable.length;
      continue;
    }
    const mig = migrateStrategyOf(job, group);
    let healthy = 0;
    for (const a of input.allocs) {
      if (a.namespace !== job.namespace || a.jobId !== job.id || a.taskGroup !== group.name || !liveAndStaying(a)) continue;
      const at = healthyAt(a, mig);
      if (at === undefined) continue;
      if (at <= now) healthy++;
      else soon(at);
    }
    const allowed = Math.min(drainable.length, healthy - (group.count - mig.maxParallel));
    const ordered = [...drainable].sort((a, b) => (a.index ?? 0) - (b.index ?? 0) || a.createIndex - b.createIndex);
    if (allowed > 0) migrate.push(...ordered.slice(0, allowed).map((a) => a.id));
    heldBack += drainable.length - Math.max(0, allowed);
  }
  if (heldBack > 0) waits.push(`${plural(heldBack, 'allocation')} wait for their group's migrate max_parallel or for batch work to finish`);

  // Whatever else still runs on the node (marked, stopping) holds the system allocations back.
  const others = onNode.filter((a) => !isSystem(a) && running(a) && !migrate.includes(a.id));
  const stopping = others.filter((a) => !liveAndStaying(a)).length;
  if (stopping > 0) waits.push(`${plural(stopping, 'allocation')} on the node still stopping`);

  // Claims still on the node, by plugin, whose allocations no longer stay there.
  const staying = new Set(onNode.filter((a) => running(a) && !migrate.includes(a.id) && !a.desiredTransition?.migrate && a.desiredStatus === 'run').map((a) => a.id));
  const claimsByPlugin = new Map<string, number>();
  for (const c of input.claims) {
    if (c.nodeId !== node.id) continue;
    claimsByPlugin.set(c.pluginId, (claimsByPlugin.get(c.pluginId) ?? 0) + 1);
  }
  const volumeUsers = new Map<string, number>();
  for (const a of onNode) {
    if (!running(a)) continue;
    for (const v of a.csiVolumes ?? []) volumeUsers.set(v.pluginId, (volumeUsers.get(v.pluginId) ?? 0) + 1);
  }

  if (!strategy.ignoreSystemJobs) {
    const systemLive = onNode.filter((a) => isSystem(a) && liveAndStaying(a));
    const othersDone = others.length === 0 || forced;
    for (const a of systemLive) {
      if (!othersDone) continue;
      const plugin = pluginOf(groupOf(a).group);
      if (plugin) {
        const claims = claimsByPlugin.get(plugin) ?? 0;
        const users = volumeUsers.get(plugin) ?? 0;
        if (claims > 0 || users > 0) {
          waits.push(`plugin ${plugin} keeps running until ${plural(claims, 'volume claim')} on the node ${claims === 1 ? 'is' : 'are'} released`);
          continue;
        }
      }
      migrate.push(a.id);
    }
    if (systemLive.length > 0 && !othersDone) waits.push(`${plural(systemLive.length, 'system allocation')} stop last`);
  }

  const stillToMove = onNode.filter((a) => running(a) && (!isSystem(a) || !strategy.ignoreSystemJobs));
  // Claims of allocations that left (or leave) the node are released, unpublished and unstaged, before the drain ends.
  const unreleased = input.claims.filter((c) => c.nodeId === node.id && !staying.has(c.allocId)).length;
  const done = migrate.length === 0 && stillToMove.length === 0 && unreleased === 0;
  if (!done && unreleased > 0 && stillToMove.length === 0) waits.push(`${plural(unreleased, 'volume claim')} on the node still being released`);

  let message: string;
  if (done) message = 'drain complete';
  else if (migrate.length > 0) message = `migrating ${plural(migrate.length, 'allocation')}${waits.length ? `; ${waits.join('; ')}` : ''}`;
  else message = waits.length ? waits.join('; ') : `waiting for ${plural(stillToMove.length, 'allocation')} to stop`;
  return recheckAt === undefined ? { migrate, done, message } : { migrate, done, message, recheckAt };
}
