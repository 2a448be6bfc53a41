// Placement: which node each new allocation of a task group goes to. Pure
// functions over plain inputs (nodes, what is already used on them, the
// volumes the group needs), so the algorithm is tested and benchmarked
// without a store. First feasibility (can the node run it at all?), then a
// bin-packing score among the feasible nodes, as Nomad's scheduler does.

import { missingNetworkReason } from './network-feasibility.js';
import type { AccessMode, AttachmentMode, Topology } from '../../csi/index.js';
import { claimConflicts, isEligible, supportsNetworkMode, volumeIdFor, type AllocatedPort, type AllocMetric, type ClaimHolder, type JobSpec, type Node, type PlacementFailure, type SchedulerAlgorithmName, type TaskGroup } from '../../structs/index.js';
import { assignPorts, holdPorts, portsReason, type PortCache, type PortUsage } from './ports.js';
import { AffinityScorer } from './affinity.js';
import { driverConfigReason } from './driver-features.js';
import { failedConstraint, failedDistinct, hasCountingRules, placementRules, PlacementCounts, type PlacementRules } from './constraints.js';
import { emptyMetric, MetricRecorder, normalizedScore, type NodeScores } from './placement-metrics.js';
import type { HostVolumeChecker } from './host-volumes.js';
import { SpreadScorer } from './spread.js';

/** A CSI volume as placement needs to know it. */
export interface PlacementVolume {
  id: string;
  pluginId: string;
  /** The access mode the volume is claimed with (its registered/requested mode). */
  accessMode: AccessMode;
  /** The attachment mode it is claimed with. Default file-system. */
  attachmentMode?: AttachmentMode;
  /** Where the volume can be reached; empty means anywhere. A node must match one segment set. */
  topologies: Topology[];
  /** False when the volume's plugin has no healthy instances to serve it. */
  schedulable: boolean;
  /** Nodes where the plugin recently answered RESOURCE_EXHAUSTED (full until a claim there is released). */
  exhaustedNodes?: ReadonlySet<string>;
  /**
   * Current claims, by allocation (and allocations placed that will claim).
   * A claim without access/attachment mode is taken to be in the volume's.
   */
  claims: Array<{ allocId: string; nodeId: string; mode: 'read' | 'write'; accessMode?: AccessMode; attachmentMode?: AttachmentMode }>;
}

/** What already runs on a node. Mutated by `placeGroup` as it places. */
export interface NodeUsage {
  cpuMhz: number;
  memoryMb: number;
  /** Plugin ID -> the volumes of that plugin in use on the node. */
  volumes: Map<string, Set<string>>;
  /** Job ID -> allocations of that job on the node. */
  jobAllocs: Map<string, number>;
  /** Host ports held on the node, by address (ports.ts). */
  ports: PortUsage;
}

/** Read-only stand-in for a node with nothing on it (never mutated). */
const EMPTY_USAGE: NodeUsage = emptyUsage();

export function emptyUsage(): NodeUsage {
  return { cpuMhz: 0, memoryMb: 0, volumes: new Map(), jobAllocs: new Map(), ports: new Map() };
}

export interface PlaceGroupInput {
  jobId: string;
  datacenters: readonly string[];
  group: TaskGroup;
  /** The allocation indexes to place (their per-alloc volumes follow from them). */
  indexes: readonly number[];
  nodes: readonly Node[];
  /** Node ID -> what is used there; nodes missing here are empty. Updated in place. */
  usage: Map<string, NodeUsage>;
  /** Volume ID -> volume; a CSI volume missing here cannot be placed anywhere. */
  volumes: ReadonlyMap<string, PlacementVolume>;
  /** Allocations (of this job) being replaced: their claims do not count against the new ones. */
  replacing?: ReadonlySet<string>;
  /** Draws dynamic ports, in [0, 1); default Math.random. */
  random?: () => number;
  /** The job's own placement rules (constraints, affinities, spreads), merged with the group's and its tasks'. */
  job?: Pick<JobSpec, 'constraints' | 'affinities' | 'spreads'>;
  /** The job's allocations that stay (and ones placed earlier in the same evaluation), for distinct_* and spread. */
  existing?: ReadonlyArray<{ nodeId: string; group: string }>;
  /** The scheduler configuration's algorithm: `binpack` (default) prefers the fullest node that fits, `spread` the emptiest. */
  algorithm?: SchedulerAlgorithmName;
  /** The group's host volumes (host-volumes.ts); absent: not checked. */
  hostVolumes?: HostVolumeChecker;
}

export interface Placement {
  index: number;
  nodeId: string;
  score: number;
  /** The host ports the allocation gets there (empty when its group asks for none). */
  ports: AllocatedPort[];
  /** Why this node (Nomad's AllocMetric). */
  metrics: AllocMetric;
}

export interface PlaceGroupResult {
  placements: Placement[];
  /** Present when some indexes could not be placed. */
  failure?: PlacementFailure;
}

/** The group's summed task resources. */
export function groupResources(group: TaskGroup): { cpuMhz: number; memoryMb: number } {
  let cpuMhz = 0;
  let memoryMb = 0;
  for (const t of group.tasks) {
    cpuMhz += t.resources.cpuMhz;
    memoryMb += t.resources.memoryMb;
  }
  return { cpuMhz, memoryMb };
}

/**
 * Whether an allocation on `node` whose group now needs `need` still fits
 * there when its `current` share is given back: the same CPU/memory
 * accounting placement uses. On true, `used` is updated (the difference is
 * counted) so that later decisions of the same evaluation see it.
 */
export function fitsInPlace(
  node: Node,
  used: NodeUsage,
  current: { cpuMhz: number; memoryMb: number } | undefined,
  need: { cpuMhz: number; memoryMb: number },
): boolean {
  const cpuMhz = used.cpuMhz - (current?.cpuMhz ?? 0) + need.cpuMhz;
  const memoryMb = used.memoryMb - (current?.memoryMb ?? 0) + need.memoryMb;
  if (cpuMhz > node.resources.cpuMhz || memoryMb > node.resources.memoryMb) return false;
  used.cpuMhz = cpuMhz;
  used.memoryMb = memoryMb;
  return true;
}

interface VolumeNeed {
  volumeId: string;
  readOnly: boolean;
}

function volumeNeeds(group: TaskGroup, index: number): VolumeNeed[] {
  const needs: VolumeNeed[] = [];
  for (const vol of Object.values(group.volumes)) {
    if (vol.type !== 'csi') continue;
    needs.push({ volumeId: volumeIdFor(vol, index), readOnly: vol.readOnly });
  }
  return needs;
}

/** Whether datacenter `dc` is one the job's `datacenters` name (`*` and trailing-`*` patterns). Pure. */
export function matchesDatacenter(patterns: readonly string[], dc: string): boolean {
  return patterns.some((p) => p === '*' || p === dc || (p.endsWith('*') && dc.startsWith(p.slice(0, -1))));
}

/** True when `node` carries every key/value of `segment`. */
function topologyMatches(segments: readonly Topology[], node: Topology | undefined): boolean {
  if (segments.length === 0) return true;
  if (!node) return false;
  return segments.some((seg) => Object.entries(seg).every(([k, v]) => node[k] === v));
}

/** The placement reason for a node that is draining or marked ineligible (it reads after "N nodes"). */
export const INELIGIBLE_REASON = 'were ineligible (node is ineligible: draining or marked ineligible)';

/**
 * Why `node` cannot take the group for reasons that do not change as
 * allocations are placed (status, datacenter, drivers, network, plugin
 * health), or undefined when it can. The reason reads after "N nodes".
 */
function staticReason(node: Node, datacenters: readonly string[], group: TaskGroup, pluginIds: readonly string[], rules: PlacementRules): string | undefined {
  if (node.status !== 'ready') return `were ${node.status === 'down' ? 'down' : 'not ready'}`;
  if (!isEligible(node)) return INELIGIBLE_REASON;
  if (!matchesDatacenter(datacenters, node.datacenter)) return 'were in another datacenter';
  const constraint = failedConstraint(rules, node);
  if (constraint !== undefined) return constraintReason(constraint);
  const network = missingNetworkReason(node, group.network.mode);
  if (network !== undefined) return network;
  for (const task of group.tasks) {
    const driver = node.drivers[task.driver];
    if (!driver || !driver.detected) return `lacked the driver "${task.driver}"`;
    if (!driver.healthy) return `had an unhealthy driver "${task.driver}"`;
    if (task.resources.memoryEnforced && (driver.cgroups ?? 'none') === 'none') {
      return `could not enforce resources (no cgroups) for driver "${task.driver}"`;
    }
    if (!supportsNetworkMode(driver.networkModes, group.network.mode)) {
      return `lacked network mode "${group.network.mode}" in driver "${task.driver}"`;
    }
    const refused = driverConfigReason(node, task, driver);
    if (refused !== undefined) return refused;
  }
  for (const pluginId of pluginIds) {
    if (!node.csiNodePlugins[pluginId]?.healthy) return `lacked a healthy node plugin for ${pluginId}`;
  }
  return undefined;
}

/** A volume's claims as the claim rules read them, with the ones this placement run adds. */
interface ClaimTally {
  volume: PlacementVolume;
  holders: ClaimHolder[];
}

function tally(volume: PlacementVolume, replacing: ReadonlySet<string>): ClaimTally {
  const attachmentMode = volume.attachmentMode ?? 'file-system';
  const holders = volume.claims
    .filter((c) => !replacing.has(c.allocId))
    .map((c) => ({ ...c, accessMode: c.accessMode ?? volume.accessMode, attachmentMode: c.attachmentMode ?? attachmentMode }));
  return { volume, holders };
}

/**
 * Why the claims already on the volume leave no room for a new claim by an
 * allocation on `nodeId`, or undefined when there is room: the rules claim
 * admission applies (`claimConflicts`), so a placement is never refused its claim.
 */
function claimReason(t: ClaimTally, need: VolumeNeed, nodeId: string): string | undefined {
  const { volume } = t;
  const conflicts = claimConflicts(t.holders, {
    nodeId,
    mode: need.readOnly ? 'read' : 'write',
    accessMode: volume.accessMode,
    attachmentMode: volume.attachmentMode ?? 'file-system',
  });
  // "No free write claim" says most about a second writer; any conflict refuses.
  const conflict = conflicts.find((c) => c.kind === 'writer') ?? conflicts[0];
  if (!conflict) return undefined;
  if (conflict.kind === 'writer') return `found no free write claim on volume ${volume.id}`;
  if (conflict.kind === 'other-node') return `could not use volume ${volume.id}, which is in use on another node`;
  return `could not use volume ${volume.id}, which is in use as ${conflict.holder.accessMode}/${conflict.holder.attachmentMode}`;
}

/**
 * Places allocations `indexes` of `group` on the best feasible nodes, one at a
 * time, counting each placement's resources, volumes and claims before the
 * next. Pure apart from updating `usage` (and the claims of `volumes`, which it
 * copies first). Never throws for an infeasible group: what could not be
 * placed is described in `failure` with per-reason node counts.
 */
/** Up to this many candidate nodes, every one is scored for every placement. */
const SCORE_ALL_UP_TO = 64;

/** How many nodes that fit a placement scores among `candidates`: all of a small cluster, 2 log2(n) of a large one. */
function scoringLimit(candidates: number): number {
  return candidates <= SCORE_ALL_UP_TO ? candidates : Math.max(SCORE_ALL_UP_TO / 4, 2 * Math.ceil(Math.log2(candidates)));
}

export function placeGroup(input: PlaceGroupInput): PlaceGroupResult {
  const { group, nodes, usage, jobId } = input;
  const replacing = input.replacing ?? new Set<string>();
  const need = groupResources(group);
  const spreadFit = input.algorithm === 'spread';
  // Claims added by this run are tallied here so the caller's volumes stay as read.
  const tallies = new Map<string, ClaimTally>();
  const volumeOf = (id: string): ClaimTally | undefined => {
    let t = tallies.get(id);
    if (!t) {
      const orig = input.volumes.get(id);
      if (!orig) return undefined;
      t = tally(orig, replacing);
      tallies.set(id, t);
    }
    return t;
  };

  // Static feasibility, once per node for the whole group.
  const pluginIds = new Set<string>();
  for (const index of input.indexes.length ? [input.indexes[0] as number] : []) {
    for (const n of volumeNeeds(group, index)) {
      const v = input.volumes.get(n.volumeId);
      if (v) pluginIds.add(v.pluginId);
    }
  }
  const rules = placementRules(input.job, group);
  const staticReasons = new Map<string, number>();
  const candidates: Node[] = [];
  const base = emptyMetric(nodes.length);
  const baseRecorder = new MetricRecorder(base);
  const pluginList = [...pluginIds];
  for (const node of nodes) {
    const reason = staticReason(node, input.datacenters, group, pluginList, rules);
    if (node.status === 'ready' && matchesDatacenter(input.datacenters, node.datacenter)) {
      base.nodesAvailable[node.datacenter] = (base.nodesAvailable[node.datacenter] ?? 0) + 1;
    }
    if (reason) {
      staticReasons.set(reason, (staticReasons.get(reason) ?? 0) + 1);
      baseRecorder.filtered(node, reason.startsWith(CONSTRAINT_PREFIX) ? reason.slice(CONSTRAINT_PREFIX.length, -1) : undefined);
    } else candidates.push(node);
  }
  const staticMetric = baseRecorder.done();
  const affinity = new AffinityScorer(rules.affinities);
  const affinityOf = new Map<string, number>();
  if (!affinity.empty) for (const node of candidates) affinityOf.set(node.id, affinity.score(node));
  const spread = new SpreadScorer(rules.spreads, group.name, Math.max(1, group.count));
  const counting = hasCountingRules(rules);
  const counts = counting ? new PlacementCounts(new Map(nodes.map((n) => [n.id, n])), input.existing ?? []) : undefined;

  // One string per port failure, so that counting it per node does not build a new one each time.
  const portFailures = new Map<string, string>();
  const portCache: PortCache = { views: new Map() };
  const exhaustedBy = (ports: string): string => {
    let r = portFailures.get(ports);
    if (r === undefined) portFailures.set(ports, (r = `exhausted ${ports}`));
    return r;
  };
  const placements: Placement[] = [];
  let failure: PlacementFailure | undefined;
  const limit = scoringLimit(candidates.length);
  let cursor = 0;
  for (const index of input.indexes) {
    const needs = volumeNeeds(group, index);
    const vols: Array<{ need: VolumeNeed; volume: PlacementVolume | undefined; tally: ClaimTally | undefined }> = needs.map((n) => {
      const t = volumeOf(n.volumeId);
      return { need: n, volume: t?.volume, tally: t };
    });
    const byPlugin = new Map<string, string[]>();
    for (const { volume } of vols) {
      if (!volume) continue;
      const ids = byPlugin.get(volume.pluginId) ?? [];
      if (!ids.includes(volume.id)) ids.push(volume.id);
      byPlugin.set(volume.pluginId, ids);
    }
    const reasons = new Map<string, number>();
    const note = (r: string): void => void reasons.set(r, (reasons.get(r) ?? 0) + 1);
    let filtered = 0;
    let exhausted = 0;
    let best: { node: Node; score: number } | undefined;
    const recorder = new MetricRecorder(staticMetric);
    const distinctCounts = (i: number): ReadonlyMap<string, number> => {
      const d = rules.distinctProperties[i] as PlacementRules['distinctProperties'][number];
      return (counts as PlacementCounts).byValue(d.attribute, d.scope, group.name);
    };
    if (counts && !spread.empty) spread.begin(counts);

    // On a large cluster a placement scores the first `limit` nodes that fit, from where the previous
    // placement stopped (Nomad's limit iterator over shuffled nodes), not every node: placing 10,000
    // allocations on 1,000 nodes would otherwise score ten million.
    let feasible = 0;
    let k = 0;
    for (; k < candidates.length; k++) {
      if (feasible >= limit) break;
      const node = candidates[(cursor + k) % candidates.length] as Node;
      const used = usage.get(node.id) ?? EMPTY_USAGE;
      let reason: string | undefined;
      let isExhaustion = false;
      const distinct = counts ? failedDistinct(rules, node, group.name, counts, distinctCounts) : undefined;
      if (distinct !== undefined) {
        note(constraintReason(distinct));
        recorder.filtered(node, distinct);
        filtered++;
        continue;
      }
      const hostVolumes = input.hostVolumes?.reason(node);
      if (hostVolumes !== undefined) {
        note(constraintReason(hostVolumes));
        recorder.filtered(node, hostVolumes);
        filtered++;
        continue;
      }
      for (const { need: n, volume, tally: t } of vols) {
        if (!volume || !t) reason = `could not use volume ${n.volumeId}, which is not registered`;
        else if (!volume.schedulable) reason = `could not use volume ${volume.id}, whose plugin has no healthy instances`;
        else if (!node.csiNodePlugins[volume.pluginId]?.healthy) reason = `lacked a healthy node plugin for ${volume.pluginId}`;
        else if (!topologyMatches(volume.topologies, node.csiNodePlugins[volume.pluginId]?.fingerprint?.node?.info.accessibleTopology)) {
          reason = `did not satisfy the topology of volume ${volume.id}`;
        } else reason = claimReason(t, n, node.id);
        if (reason) break;
      }
      if (!reason) {
        for (const { volume } of vols) {
          if (volume?.exhaustedNodes?.has(node.id) && !used.volumes.get(volume.pluginId)?.has(volume.id)) {
            reason = `reached the volume limit of plugin ${volume.pluginId}`;
            isExhaustion = true;
            break;
          }
        }
        // Max volumes per node, per plugin, counting volumes already there once.
        for (const [pluginId, ids] of reason ? [] : byPlugin) {
          const max = node.csiNodePlugins[pluginId]?.fingerprint?.node?.info.maxVolumesPerNode ?? 0;
          if (max === 0) continue;
          const there = used.volumes.get(pluginId);
          const added = there ? ids.filter((id) => !there.has(id)).length : ids.length;
          if ((there?.size ?? 0) + added > max) {
            reason = `reached the maximum number of volumes for plugin ${pluginId}`;
            isExhaustion = true;
            break;
          }
        }
      }
      if (!reason) {
        if (used.cpuMhz + need.cpuMhz > node.resources.cpuMhz) reason = 'exhausted cpu';
        else if (used.memoryMb + need.memoryMb > node.resources.memoryMb) reason = 'exhausted memory';
        else {
          // Nomad's "network: ..." dimension: a port collision or no free dynamic port.
          const ports = portsReason(node, used.ports, group.network, portCache);
          if (ports) reason = exhaustedBy(ports);
        }
        if (reason) isExhaustion = true;
      }
      if (reason) {
        note(reason);
        if (isExhaustion) {
          exhausted++;
          recorder.exhausted(reason);
        } else {
          filtered++;
          recorder.filtered(node);
        }
        continue;
      }
      // Scores as plain numbers: this loop runs nodes x allocations times.
      const fill = binpackScore(node, used, need);
      const binpack = spreadFit ? 1 - fill : fill;
      const collisions = used.jobAllocs.get(jobId) ?? 0;
      const anti = collisions > 0 ? -Math.min(1, (collisions + 1) / Math.max(1, group.count)) : 0;
      const aff = affinityOf.get(node.id) ?? 0;
      const sp = spread.empty ? 0 : spread.score(node);
      const score = (binpack + anti + aff + sp) / (1 + (anti ? 1 : 0) + (aff ? 1 : 0) + (sp ? 1 : 0));
      if (recorder.wouldKeep(score)) {
        const scores: NodeScores = { binpack };
        if (anti) scores.jobAntiAffinity = anti;
        if (aff) scores.nodeAffinity = aff;
        if (sp) scores.spread = sp;
        recorder.scored(node.id, scores, normalizedScore(scores));
      }
      feasible++;
      if (!best || score > best.score || (score === best.score && node.id < best.node.id)) best = { node, score };
    }
    if (candidates.length) cursor = (cursor + k) % candidates.length;

    if (!best) {
      if (!failure) {
        const all = new Map(staticReasons);
        for (const [r, n] of reasons) all.set(r, (all.get(r) ?? 0) + n);
        failure = {
          unplaced: 0,
          nodesEvaluated: nodes.length,
          nodesFiltered: filtered + [...staticReasons.values()].reduce((a, b) => a + b, 0),
          nodesExhausted: exhausted,
          reasons: Object.fromEntries(all),
          metrics: recorder.done(),
        };
      }
      failure.unplaced++;
      continue;
    }

    const node = best.node;
    counts?.add(node.id, group.name);
    const used = usage.get(node.id) ?? emptyUsage();
    usage.set(node.id, used);
    // portsReason found room, so this cannot fail.
    const ports = assignPorts(node, used.ports, group.network, input.random);
    if (typeof ports === 'string') throw new Error(`ports vanished on node ${node.id}: ${ports}`);
    holdPorts(used.ports, ports);
    placements.push({ index, nodeId: node.id, score: best.score, ports, metrics: recorder.done() });
    used.cpuMhz += need.cpuMhz;
    used.memoryMb += need.memoryMb;
    used.jobAllocs.set(jobId, (used.jobAllocs.get(jobId) ?? 0) + 1);
    input.hostVolumes?.placed(node.id, node);
    for (const { need: n, volume, tally: t } of vols) {
      if (!volume || !t) continue;
      const set = used.volumes.get(volume.pluginId) ?? new Set<string>();
      set.add(volume.id);
      used.volumes.set(volume.pluginId, set);
      t.holders.push({
        allocId: `placed:${index}`,
        nodeId: node.id,
        mode: n.readOnly ? 'read' : 'write',
        accessMode: volume.accessMode,
        attachmentMode: volume.attachmentMode ?? 'file-system',
      });
    }
  }
  return failure ? { placements, failure } : { placements };
}

const CONSTRAINT_PREFIX = 'Constraint "';

/** The failure reason for a constraint: describePlacementFailure prints it as `Constraint "X" filtered N nodes`. */
function constraintReason(text: string): string {
  return `${CONSTRAINT_PREFIX}${text}"`;
}

/**
 * Bin packing: prefer the node that would be fullest after the placement
 * (fewer, fuller nodes leave whole nodes free for big jobs), in [0, 1]. The
 * caller adds Nomad's job anti-affinity: a penalty of (allocations of the job
 * already there + 1) / the group's count, capped at -1, so that one node does
 * not carry a whole service. Higher is better.
 */
function binpackScore(node: Node, used: NodeUsage, need: { cpuMhz: number; memoryMb: number }): number {
  const cpu = (used.cpuMhz + need.cpuMhz) / Math.max(1, node.resources.cpuMhz);
  const mem = (used.memoryMb + need.memoryMb) / Math.max(1, node.resources.memoryMb);
  return (cpu + mem) / 2;
}
