// One evaluation of one job inside one store write: reconcile the job's
// allocations with its spec, place what is missing, stop what must stop,
// record the evaluation with its outcome and per-reason placement failures.
// Synchronous, so the whole decision is made and applied at one index.

import { randomUUID } from 'node:crypto';
import {
  DEFAULT_SCHEDULER_CONFIG,
  describePlacementFailure,
  launchesChildren,
  isClientTerminal,
  SCHEDULER_CONFIG_ID,
  volumeIdFor,
  type Allocation,
  type EvalTrigger,
  type Evaluation,
  type Job,
  type JobStatus,
  type Node,
  type PlacementFailure,
} from '../../structs/index.js';
import {
  groupResources,
  isLive,
  placeGroup,
  reconcile,
  reconcileSystem,
  type InPlaceUpdate,
  type Placement,
  type PlaceRequest,
  type StopDecision,
} from '../scheduler/index.js';
import { currentDeployment, recordRollout, revertsToStable } from '../deployments/index.js';
import { hostVolumeCheckerFor, recordStickyClaims } from '../hostvolumes/index.js';
import { rowKey, type RowInput, type StateReader, type WriteTxn } from '../state/index.js';
import { nodeUsage, placementVolumes, releaseStopped, usageForNamespace } from './placement-state.js';
import { PlanRoom } from './plan-room.js';

export interface EvaluateOptions {
  trigger: EvalTrigger;
  now: number;
  nodeId?: string;
  previousEval?: string;
  /**
   * When false (background triggers such as a node update), nothing is
   * written if there is nothing to do. Explicit triggers always record an
   * evaluation.
   */
  always: boolean;
  /** An existing evaluation (pending or blocked) to complete instead of creating a new one. */
  evalId?: string;
  /**
   * A dry run (`job plan`): the volume claims of the allocations this
   * evaluation stops count as free, as they will be when the run's
   * replacements are placed (the run's evaluation waits, blocked, for their
   * release and is retried then). Not for lost allocations: their silent
   * node's claims are held until it is heard from or fenced.
   */
  plan?: boolean;
}

export interface EvaluateOutcome {
  evaluation?: Evaluation;
  /** When a failed allocation may be rescheduled later: evaluate again then. */
  followUpAt?: number;
  /**
   * The plan was larger than one write may carry (WriteTxn.bytesLeft): what
   * fitted is written and the evaluation left pending; evaluate the job
   * again with the same `evalId` (in a new write) until this is unset.
   */
  more?: true;
}

/**
 * The job's allocations, in no order (its callers need none): ten thousand
 * of them for a large batch job, once per batch of status reports.
 */
export function jobAllocations(reader: StateReader, namespace: string, jobId: string): Allocation[] {
  return reader.list('allocations', { unordered: true, filter: (a) => a.jobId === jobId && a.namespace === namespace });
}

/** By ID, as a list sorted by key has them (allocation IDs are UUIDs: their keys are the IDs). */
function byAllocId(a: Allocation, b: Allocation): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** pending (nothing runs yet), running, or dead (stopped or finished, nothing live). */
export function jobStatusOf(job: Job, allocs: readonly Allocation[]): JobStatus {
  if (allocs.some(isLive)) return 'running';
  if (job.stop) return 'dead';
  // A periodic or parameterized job runs as long as it may launch children (Nomad shows it running).
  if (launchesChildren(job)) return 'running';
  if (job.type === 'batch' && allocs.length > 0 && allocs.every((a) => isClientTerminal(a.clientStatus) || a.desiredStatus !== 'run')) {
    return 'dead';
  }
  return 'pending';
}

/**
 * jobStatusOf the job's allocations as a write leaves them: `allocs` with
 * `written` (the rows it put, by ID) in their place. A live row written
 * decides it without a pass over the others (each part of a large plan
 * places live allocations).
 */
function jobStatusAfter(job: Job, allocs: readonly Allocation[], written: ReadonlyMap<string, Allocation>): JobStatus {
  for (const a of written.values()) if (isLive(a)) return 'running';
  if (written.size === 0) return jobStatusOf(job, allocs);
  const rows = allocs.map((a) => written.get(a.id) ?? a);
  const known = new Set(allocs.map((a) => a.id));
  for (const [id, a] of written) if (!known.has(id)) rows.push(a);
  return jobStatusOf(job, rows);
}

/**
 * The job's kept versions by number (of this job, not of a purged one of
 * the same ID), read once each: the reconciler compares an allocation with
 * the spec of the version it runs.
 */
function keptVersions(reader: StateReader, job: Job): (version: number) => Job | undefined {
  const seen = new Map<number, Job | undefined>();
  return (version) => {
    if (seen.has(version)) return seen.get(version);
    const kept = reader.get('jobVersions', rowKey(job.namespace, job.id, String(version).padStart(10, '0')))?.job;
    const found = kept && kept.createIndex === job.createIndex ? kept : undefined;
    seen.set(version, found);
    return found;
  };
}

/** The live allocations that this evaluation's stops leave (`live` itself when it stops none). */
function liveAfterStops(live: readonly Allocation[], stops: readonly StopDecision[]): readonly Allocation[] {
  if (stops.length === 0) return live;
  const stopping = new Set(stops.map((s) => s.allocId));
  return live.filter((a) => !stopping.has(a.id));
}

function newAllocation(job: Job, req: PlaceRequest, placement: Placement, now: number, reader: StateReader): RowInput<'allocations'> {
  const { nodeId } = placement;
  const group = job.groups.find((g) => g.name === req.group);
  if (!group) throw new Error(`group ${req.group} vanished`);
  const csiVolumes: NonNullable<Allocation['csiVolumes']> = [];
  for (const vol of Object.values(group.volumes)) {
    if (vol.type !== 'csi') continue;
    const volumeId = volumeIdFor(vol, req.index);
    const volume = reader.get('volumes', rowKey(job.namespace, volumeId));
    csiVolumes.push({ volumeId, pluginId: volume?.pluginId ?? '', readOnly: vol.readOnly });
  }
  const alloc: RowInput<'allocations'> = {
    id: randomUUID(),
    namespace: job.namespace,
    jobId: job.id,
    jobVersion: job.version,
    taskGroup: group.name,
    name: `${job.id}.${group.name}[${req.index}]`,
    index: req.index,
    nodeId,
    resources: groupResources(group),
    ...(placement.ports.length ? { ports: placement.ports } : {}),
    ...(placement.metrics ? { metrics: placement.metrics } : {}),
    csiVolumes,
    desiredStatus: 'run',
    desiredDescription: '',
    clientStatus: 'pending',
    clientDescription: '',
    taskStates: {},
    rescheduleAttempts: req.rescheduleAttempts,
    createTime: now,
    modifyTime: now,
  };
  if (req.previousAllocation) alloc.previousAllocation = req.previousAllocation;
  if (req.canary) alloc.deploymentStatus = { canary: true, timestamp: now };
  return alloc;
}

/**
 * Evaluates the job `namespace/jobId` inside `txn`. Writes the new and stopped
 * allocations, the job's status and an evaluation row (unless `always` is
 * false and there was nothing to do). A job that no longer exists yields a
 * completed evaluation that did nothing. Never throws for an unplaceable job:
 * the evaluation is `blocked` with the reasons.
 */
export function evaluateJob(txn: WriteTxn, namespace: string, jobId: string, opts: EvaluateOptions): EvaluateOutcome {
  const job = txn.get('jobs', rowKey(namespace, jobId));
  // One pass over the allocations serves the job's own, the live ones and the usage; only the job's
  // own are sorted (reconcile breaks ties in their order), not every allocation, once per part of a plan.
  const everyAlloc = txn.list('allocations', { unordered: true });
  const allocs = everyAlloc.filter((a) => a.jobId === jobId && a.namespace === namespace).sort(byAllocId);
  let stops: StopDecision[] = [];
  let inPlace: InPlaceUpdate[] = [];
  let requests: PlaceRequest[] = [];
  const placed: Array<RowInput<'allocations'>> = [];
  const failures: Record<string, PlacementFailure> = {};
  let followUpAt: number | undefined;
  /** Placements were left for the next write (see PlanRoom). */
  let cut = false;

  // A periodic or parameterized job places nothing itself: its children do.
  if (job && !launchesChildren(job)) {
    const nodes = txn.list('nodes');
    const live = everyAlloc.filter(isLive);
    const volumes = placementVolumes(txn, job, live);
    const usage = usageForNamespace(nodeUsage(txn, live), namespace);
    const nodesById = new Map(nodes.map((n) => [n.id, n]));
    const algorithm = txn.get('schedulerConfig', SCHEDULER_CONFIG_ID)?.algorithm ?? DEFAULT_SCHEDULER_CONFIG.algorithm;

    const jobAt = keptVersions(txn, job);
    if (job.type === 'system') {
      const sys = reconcileSystem(job, allocs, nodes, { usage, jobAt });
      stops = sys.stop;
      inPlace = sys.inPlace;
      releaseStopped(usage, stops, allocs);
      for (const miss of sys.missing) {
        const group = job.groups.find((g) => g.name === miss.group);
        const node = nodesById.get(miss.nodeId) as Node;
        if (!group) continue;
        const staying = liveAfterStops(live, stops);
        const hostVolumes = hostVolumeCheckerFor(txn, job, group, staying, nodesById);
        const r = placeGroup({ jobId, datacenters: job.datacenters, group, indexes: [0], nodes: [node], usage, volumes, job, algorithm, ...(hostVolumes ? { hostVolumes } : {}) });
        const p = r.placements[0];
        if (p) {
          const req: PlaceRequest = { group: group.name, index: 0, rescheduleAttempts: 0 };
          if (miss.previousAllocation) req.previousAllocation = miss.previousAllocation;
          placed.push(newAllocation(job, req, p, opts.now, txn));
        } else if (r.failure) mergeFailure(failures, group.name, r.failure);
      }
    } else {
      const deployment = currentDeployment(txn, job);
      const plan = reconcile(job, allocs, nodesById, opts.now, { usage, jobAt, ...(deployment ? { deployment } : {}), ...(revertsToStable(txn, job) ? { noCanaries: true } : {}) });
      stops = plan.stop;
      inPlace = plan.inPlace;
      requests = plan.place;
      followUpAt = plan.followUpAt;
      releaseStopped(usage, stops, allocs);
      // What stays of the job, and what this evaluation places, for distinct_* and spread.
      const stopping = new Set(stops.map((s) => s.allocId));
      const existing = allocs.filter((a) => isLive(a) && !stopping.has(a.id)).map((a) => ({ nodeId: a.nodeId, group: a.taskGroup }));
      // Under a write size limit, only what fits is placed now (the rest by the next write):
      // placing a part at a time, sized by the rows placed so far.
      const room = new PlanRoom(txn, job);
      const jobAllocById = stops.length > 0 ? new Map(allocs.map((a) => [a.id, a])) : undefined;
      let left = room.forPlacements(stops.map((st) => jobAllocById?.get(st.allocId)));
      let rowBytes = 0;
      const staying = liveAfterStops(live, stops);
      const replacing = opts.plan ? new Set(stops.filter((st) => !st.lost).map((st) => st.allocId)) : undefined;
      for (const group of job.groups) {
        // One checker per group for the whole evaluation: it counts what this evaluation places.
        const hostVolumes = hostVolumeCheckerFor(txn, job, group, staying, nodesById);
        let reqs = plan.place.filter((p) => p.group === group.name);
        const byIndex = new Map(reqs.map((q) => [q.index, q]));
        // One placement at least when nothing else would be written: every write makes progress.
        while (reqs.length > 0 && (left > 0 || placed.length + stops.length === 0)) {
          const take = left === Infinity ? reqs.length : rowBytes === 0 ? 1 : Math.max(placed.length + stops.length === 0 ? 1 : 0, Math.min(reqs.length, Math.floor(left / rowBytes)));
          if (take === 0) break;
          const r = placeGroup({
            jobId,
            datacenters: job.datacenters,
            group,
            indexes: reqs.slice(0, take).map((q) => q.index),
            nodes,
            usage,
            volumes,
            job,
            existing,
            algorithm,
            ...(hostVolumes ? { hostVolumes } : {}),
            ...(replacing ? { replacing } : {}),
          });
          for (const p of r.placements) {
            const alloc = newAllocation(job, byIndex.get(p.index) as PlaceRequest, p, opts.now, txn);
            placed.push(alloc);
            existing.push({ nodeId: p.nodeId, group: group.name });
            if (left !== Infinity) {
              const bytes = room.rowBytes(alloc);
              rowBytes = Math.max(rowBytes, Math.ceil(bytes * 1.1));
              left -= bytes;
            }
          }
          reqs = reqs.slice(take);
          if (r.failure) {
            failures[group.name] = r.failure;
            break;
          }
        }
        if (reqs.length > 0 && !failures[group.name]) cut = true;
      }
    }
  } else {
    stops = allocs
      .filter((a) => a.desiredStatus === 'run' && !isClientTerminal(a.clientStatus))
      .map((a) => ({ allocId: a.id, description: job ? 'the job launches child jobs now' : 'job purged', lost: false }));
  }

  const failed = Object.keys(failures).length > 0;
  const existing = opts.evalId ? txn.get('evaluations', rowKey(opts.evalId)) : undefined;
  const evalId = existing?.id ?? randomUUID();
  // Re-checking a blocked evaluation that still cannot place anything changes nothing.
  if (!opts.always && stops.length === 0 && placed.length === 0 && inPlace.length === 0 && (!existing || existing.status === 'blocked')) {
    return followUpAt === undefined ? {} : { followUpAt };
  }

  // The job's allocations by ID, for the stops and in-place updates (a part of a large plan has neither).
  const byId = stops.length > 0 || inPlace.length > 0 ? new Map(allocs.map((a) => [a.id, a])) : new Map<string, Allocation>();
  // The rows this evaluation writes for the job's allocations, for its status.
  const after = new Map<string, Allocation>();
  // A store with a transaction size limit gets what fits; the rest is left to the next write of the
  // same evaluation, which reconciles again (a crash in between leaves it pending, and allocations
  // already placed count: nothing is placed twice).
  const room = new PlanRoom(txn, job);
  let stopped = 0;
  for (const s of stops) {
    if (stopped > 0 && room.full()) break;
    const a = byId.get(s.allocId);
    stopped++;
    if (!a) continue;
    const next: Allocation = { ...a, desiredStatus: 'stop', desiredDescription: s.description, modifyTime: opts.now };
    if (s.lost) {
      next.clientStatus = 'lost';
      next.clientDescription = 'node is down';
    }
    after.set(a.id, txn.put('allocations', next));
  }
  // Placements may rely on what the stops free: none until every stop is written.
  const fits = stopped < stops.length ? 0 : room.fitting(placed, stopped === 0 && inPlace.length === 0);
  const written = placed.slice(0, fits);
  // Same allocation, new job version (and resources): its node applies them to the running tasks. Written
  // once every placement is; in a rolling group it joins the version's deployment anew, its health judged again (Nomad's in-place update).
  const toUpdate = fits === placed.length && stopped === stops.length && job ? inPlaceRows(job, inPlace, byId, evalId, opts.now) : [];
  const updatedRows = toUpdate.slice(0, Math.max(0, room.fitting([...written, ...toUpdate], stopped === 0 && written.length === 0) - written.length));
  const updated = updatedRows.length;
  if (job) recordRollout(txn, job, requests, written, updatedRows, opts.now);
  for (const a of written) {
    const stored = txn.put('allocations', { ...a, evalId });
    after.set(stored.id, stored);
    if (job) recordStickyClaims(txn, job, stored);
  }
  for (const row of updatedRows) after.set(row.id, txn.put('allocations', row));
  const more = cut || stopped < stops.length || written.length < placed.length || updated < toUpdate.length;

  if (job) {
    const status = jobStatusAfter(job, allocs, after);
    if (status !== job.status) txn.put('jobs', { ...job, status });
  }

  const blockedReason = Object.entries(failures)
    .map(([g, f]) => `group "${g}": ${f.unplaced} allocation${f.unplaced === 1 ? '' : 's'} not placed: ${describePlacementFailure(f)}`)
    .join('; ');
  const blocked = failed && job?.type !== 'system';
  // An evaluation written in parts counts what every part did.
  const sofar = existing?.status === 'pending' ? existing : undefined;
  const evaluation: RowInput<'evaluations'> = {
    id: evalId,
    namespace,
    jobId,
    type: job?.type ?? existing?.type ?? 'service',
    priority: job?.priority ?? existing?.priority ?? 50,
    triggeredBy: existing?.triggeredBy ?? opts.trigger,
    status: more ? 'pending' : blocked ? 'blocked' : 'complete',
    statusDescription: more
      ? 'placing in parts: the plan is larger than one state write'
      : blocked
        ? 'some allocations could not be placed'
        : placed.length || stops.length || inPlace.length || sofar
          ? 'done'
          : 'nothing to do',
    blockedReason,
    failedPlacements: failures,
    placed: (sofar?.placed ?? 0) + written.length,
    stopped: (sofar?.stopped ?? 0) + stopped,
    updatedInPlace: (sofar?.updatedInPlace ?? 0) + updated,
    waitUntil: 0,
    createTime: existing?.createTime ?? opts.now,
    modifyTime: opts.now,
  };
  if (opts.nodeId) evaluation.nodeId = opts.nodeId;
  if (opts.previousEval) evaluation.previousEval = opts.previousEval;
  if (existing?.createIndex) evaluation.createIndex = existing.createIndex;
  const stored = txn.put('evaluations', evaluation);
  return { evaluation: stored, ...(followUpAt === undefined ? {} : { followUpAt }), ...(more ? { more: true as const } : {}) };
}

/**
 * The rows of the allocations updated in place to `job`'s version. In a
 * rolling group recordRollout ties each to the version's deployment, its
 * health judged again.
 */
function inPlaceRows(job: Job, inPlace: readonly InPlaceUpdate[], byId: ReadonlyMap<string, Allocation>, evalId: string, now: number): Allocation[] {
  const rows: Allocation[] = [];
  const groups = new Map(job.groups.map((g) => [g.name, { resources: Object.freeze(groupResources(g)) }]));
  for (const u of inPlace) {
    const a = byId.get(u.allocId);
    const g = groups.get(u.group);
    if (!a || !g) continue;
    rows.push({ ...a, jobVersion: job.version, resources: g.resources, evalId, modifyTime: now });
  }
  return rows;
}

function mergeFailure(into: Record<string, PlacementFailure>, group: string, f: PlacementFailure): void {
  const cur = into[group];
  if (!cur) {
    into[group] = { ...f, reasons: { ...f.reasons } };
    return;
  }
  cur.unplaced += f.unplaced;
  cur.nodesEvaluated += f.nodesEvaluated;
  cur.nodesFiltered += f.nodesFiltered;
  cur.nodesExhausted += f.nodesExhausted;
  for (const [r, n] of Object.entries(f.reasons)) cur.reasons[r] = (cur.reasons[r] ?? 0) + n;
}
