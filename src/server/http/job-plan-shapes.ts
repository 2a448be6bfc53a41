// A job plan in Nomad's shapes (PUT /v1/job/:id/plan answers
// JobPlanResponse): the diff of the job as Nomad's API writes it (the
// running job against the planned one, both in Nomad's Job shape, so field
// and block names are Nomad's: `Count`, `Env[KEY]`, `Config`, `Constraint`,
// `Task Group`'s `Updates`), the scheduler's decisions per group
// (DesiredTGUpdates), and why placements failed (FailedTGAllocs, Nomad's
// AllocationMetric, as alloc-metric-shapes.ts writes it). Nomad diffs non-contextually here: only what changed
// is listed (a new job lists every field it sets).

import type * as api from '../../api/index.js';
import type { JobPlan } from '../../structs/index.js';
import { failedPlacementOut } from './alloc-metric-shapes.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const isEmpty = (v: unknown): boolean => v === null || v === undefined;
const isPrimitive = (v: unknown): boolean => v === null || typeof v !== 'object';

/** Fields of a job, group or task that its diff leaves out: its name, its children, the server's bookkeeping. */
const JOB_SKIP = new Set([
  'ID',
  'TaskGroups',
  'Status',
  'StatusDescription',
  'Stable',
  'Version',
  'SubmitTime',
  'CreateIndex',
  'ModifyIndex',
  'JobModifyIndex',
  'Update',
  'NomadTokenID',
  'VersionTag',
  'Stop',
  'Payload',
]);
const GROUP_SKIP = new Set(['Name', 'Tasks']);
const TASK_SKIP = new Set(['Name']);

/** Nomad's names for the blocks of a list (`Constraints` -> `Constraint`); the rest lose their plural `s`. */
const BLOCK_NAMES: Record<string, string> = {
  Affinities: 'Affinity',
  ReservedPorts: 'Static Port',
  DynamicPorts: 'Dynamic Port',
  Checks: 'Check',
};
const blockName = (key: string): string => BLOCK_NAMES[key] ?? (key.endsWith('s') ? key.slice(0, -1) : key);

/** Maps of plain values Nomad flattens into `Name[key]` fields. */
const FLAT_MAPS = new Set(['Meta', 'Env']);

/** A value as Nomad's flatmap writes it: "" for nil. */
function text(v: unknown): string {
  if (v === null || v === undefined) return '';
  return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
}

function diffType(old: unknown, now: unknown): 'Added' | 'Deleted' | 'Edited' {
  if (isEmpty(old)) return 'Added';
  if (isEmpty(now)) return 'Deleted';
  return 'Edited';
}

const orNull = <T>(list: T[]): T[] | null => (list.length ? list : null);

/** A task's `Config` flattened as Nomad's flatmap does: `args[0]`, `mount[0].source`. */
function flatten(v: unknown, prefix: string, out: Map<string, string>): void {
  if (Array.isArray(v)) v.forEach((x, i) => flatten(x, `${prefix}[${i}]`, out));
  else if (isObj(v)) for (const [k, x] of Object.entries(v)) flatten(x, prefix ? `${prefix}.${k}` : k, out);
  else if (!isEmpty(v)) out.set(prefix, text(v));
}

/** Field diffs of two flat maps (name -> text), sorted by name. */
function flatFields(old: Map<string, string>, now: Map<string, string>): api.FieldDiff[] {
  const names = [...new Set([...old.keys(), ...now.keys()])].sort();
  const out: api.FieldDiff[] = [];
  for (const n of names) {
    const a = old.get(n);
    const b = now.get(n);
    if (a === b) continue;
    out.push({ Type: diffType(a, b), Name: n, Old: a ?? '', New: b ?? '', Annotations: null });
  }
  return out;
}

/** The fields and blocks of one object that changed (`skip` left out). */
function diffParts(old: Obj | undefined, now: Obj | undefined, skip: ReadonlySet<string> = new Set()): { fields: api.FieldDiff[]; objects: api.ObjectDiff[] } {
  const fields: api.FieldDiff[] = [];
  const objects: api.ObjectDiff[] = [];
  const keys = [...new Set([...Object.keys(old ?? {}), ...Object.keys(now ?? {})])].filter((k) => !skip.has(k)).sort();
  for (const k of keys) {
    const a = old?.[k];
    const b = now?.[k];
    if (JSON.stringify(a ?? null) === JSON.stringify(b ?? null)) continue;
    if (FLAT_MAPS.has(k) && (isObj(a) || isObj(b))) {
      const flat = (m: unknown): Map<string, string> => new Map(Object.entries(isObj(m) ? m : {}).map(([x, y]) => [`${k}[${x}]`, text(y)]));
      fields.push(...flatFields(flat(a), flat(b)));
    } else if (k === 'Config' && (isObj(a) || isObj(b))) {
      const [fa, fb] = [new Map<string, string>(), new Map<string, string>()];
      flatten(a, '', fa);
      flatten(b, '', fb);
      const changed = flatFields(fa, fb);
      if (changed.length) objects.push({ Type: diffType(a, b), Name: 'Config', Fields: changed, Objects: null });
    } else if (isObj(a) || isObj(b)) {
      const d = diffObject(k, isObj(a) ? a : undefined, isObj(b) ? b : undefined);
      if (d) objects.push(d);
    } else if (Array.isArray(a) || Array.isArray(b)) {
      objects.push(...diffList(k, Array.isArray(a) ? a : [], Array.isArray(b) ? b : []));
    } else if (isPrimitive(a) && isPrimitive(b)) {
      fields.push({ Type: diffType(a, b), Name: k, Old: text(a), New: text(b), Annotations: null });
    }
  }
  return { fields, objects };
}

/** A block's diff, or undefined when nothing in it changed. */
function diffObject(name: string, old: Obj | undefined, now: Obj | undefined): api.ObjectDiff | undefined {
  const { fields, objects } = diffParts(old, now);
  if (!fields.length && !objects.length) return undefined;
  return { Type: diffType(old, now), Name: name, Fields: orNull(fields), Objects: orNull(objects) };
}

/**
 * A list's diff. Plain values (Datacenters) are one block of that name with a
 * field per value added or removed, as Nomad's string sets; blocks
 * (Constraints, Services, ...) are compared by content: a removed one is
 * Deleted, a new one Added.
 */
function diffList(key: string, old: unknown[], now: unknown[]): api.ObjectDiff[] {
  const id = (v: unknown): string => JSON.stringify(v);
  const oldIds = new Set(old.map(id));
  const newIds = new Set(now.map(id));
  if ([...old, ...now].every(isPrimitive)) {
    const fields: api.FieldDiff[] = [];
    for (const v of old) if (!newIds.has(id(v))) fields.push({ Type: 'Deleted', Name: key, Old: text(v), New: '', Annotations: null });
    for (const v of now) if (!oldIds.has(id(v))) fields.push({ Type: 'Added', Name: key, Old: '', New: text(v), Annotations: null });
    return fields.length ? [{ Type: diffType(old.length ? old : null, now.length ? now : null), Name: key, Fields: fields, Objects: null }] : [];
  }
  const out: api.ObjectDiff[] = [];
  const name = blockName(key);
  for (const v of old) if (!newIds.has(id(v))) out.push(diffObject(name, isObj(v) ? v : { Value: v }, undefined) ?? { Type: 'Deleted', Name: name, Fields: null, Objects: null });
  for (const v of now) if (!oldIds.has(id(v))) out.push(diffObject(name, undefined, isObj(v) ? v : { Value: v }) ?? { Type: 'Added', Name: name, Fields: null, Objects: null });
  return out;
}

type Named = Obj & { Name?: unknown };
const byName = (list: unknown): Map<string, Named> => new Map((Array.isArray(list) ? (list as Named[]) : []).map((x) => [String(x.Name ?? ''), x]));

function diffTask(name: string, old: Named | undefined, now: Named | undefined, annotation: string | undefined): api.TaskDiff {
  const { fields, objects } = diffParts(old, now, TASK_SKIP);
  const type = !old ? 'Added' : !now ? 'Deleted' : fields.length || objects.length ? 'Edited' : 'None';
  return { Type: type, Name: name, Fields: orNull(fields), Objects: orNull(objects), Annotations: type === 'Edited' && annotation ? [annotation] : null };
}

/** A count going up forces a create, going down a destroy (Nomad's annotateCountChange). */
function annotateCount(fields: api.FieldDiff[]): void {
  const count = fields.find((f) => f.Name === 'Count');
  if (!count) return;
  const [was, is] = [Number(count.Old || 0), Number(count.New || 0)];
  if (was !== is) count.Annotations = [was < is ? 'forces create' : 'forces destroy'];
}

function diffGroup(name: string, old: Named | undefined, now: Named | undefined, updates: Record<string, number> | undefined): api.TaskGroupDiff {
  const { fields, objects } = diffParts(old, now, GROUP_SKIP);
  // A plan's diff (with the scheduler's updates) is annotated, as Nomad's; a version's diff is not.
  if (updates) annotateCount(fields);
  const oldTasks = byName(old?.['Tasks']);
  const newTasks = byName(now?.['Tasks']);
  // What Berth's scheduler would do to the group's allocations for a task change, as Nomad annotates it.
  const annotation = updates?.['in-place update'] ? 'forces in-place update' : updates?.['create'] && updates['destroy'] ? 'forces create/destroy update' : undefined;
  const tasks = [...new Set([...oldTasks.keys(), ...newTasks.keys()])].sort().map((t) => diffTask(t, oldTasks.get(t), newTasks.get(t), annotation));
  let type = !old ? 'Added' : !now ? 'Deleted' : fields.length || objects.length || tasks.some((t) => t.Type !== 'None') ? 'Edited' : 'None';
  if (type === 'None' && !now) type = 'Deleted';
  return { Type: type, Name: name, Fields: orNull(fields), Objects: orNull(objects), Tasks: orNull(tasks), Updates: updates && Object.keys(updates).length ? updates : null };
}

/**
 * The diff of the job `now` against `old` (undefined: a new job) as Nomad's
 * API writes it, with each group's scheduler decisions (`create`,
 * `destroy`, `in-place update`, `ignore`) in its `Updates`. Pure.
 */
export function nomadJobDiff(old: api.Job | undefined, now: api.Job, updates: ReadonlyMap<string, Record<string, number>> = new Map()): api.JobDiff {
  const { fields, objects } = diffParts(old as Obj | undefined, now as Obj, JOB_SKIP);
  const oldGroups = byName(old?.TaskGroups);
  const newGroups = byName(now.TaskGroups);
  const groups = [...new Set([...oldGroups.keys(), ...newGroups.keys()])]
    .sort()
    .map((g) => diffGroup(g, oldGroups.get(g), newGroups.get(g), updates.get(g)));
  const type = !old ? 'Added' : fields.length || objects.length || groups.some((g) => g.Type !== 'None') ? 'Edited' : 'None';
  return { Type: type, ID: now.ID ?? '', Fields: orNull(fields), Objects: orNull(objects), TaskGroups: orNull(groups) };
}

/** A group's diff's Updates, from its DesiredUpdates as Nomad's annotateTaskGroup names them; kinds with none left out. */
function groupUpdates(u: api.DesiredUpdates): Record<string, number> {
  const named: Array<[string, number]> = [
    ['ignore', u.Ignore],
    ['create', u.Place],
    ['migrate', u.Migrate],
    ['destroy', u.Stop],
    ['in-place update', u.InPlaceUpdate],
    ['create/destroy update', u.DestructiveUpdate],
    ['canary', u.Canary],
  ];
  return Object.fromEntries(named.filter(([, n]) => n > 0));
}

/** An empty count of the scheduler's decisions for one group. */
function noUpdates(): api.DesiredUpdates {
  return { Ignore: 0, Place: 0, Migrate: 0, Stop: 0, InPlaceUpdate: 0, DestructiveUpdate: 0, Canary: 0, Preemptions: 0, Disconnect: 0, Reconnect: 0, RescheduleNow: 0, RescheduleLater: 0 };
}

/**
 * Berth's plan (JobService.plan) as Nomad's JobPlanResponse: `old` and `now`
 * are the running job and the planned one in Nomad's Job shape (for the
 * diff, when `withDiff`), `nextLaunch` a periodic job's next launch (ms).
 */
export function planResponse(plan: JobPlan, old: api.Job | undefined, now: api.Job, opts: { withDiff: boolean; index: number; nextLaunch?: number }): api.JobPlanResponse {
  const desired: Record<string, api.DesiredUpdates> = {};
  const updates = new Map<string, Record<string, number>>();
  for (const g of plan.diff.groups) {
    const u = noUpdates();
    // What the scheduler wants to place, as Nomad counts it: those it could not place too (FailedTGAllocs says why).
    u.Place = (g.updates['create'] ?? 0) + (plan.failedPlacements[g.name]?.unplaced ?? 0);
    u.Stop = g.updates['destroy'] ?? 0;
    u.InPlaceUpdate = g.updates['in-place update'] ?? 0;
    u.Ignore = g.updates['ignore'] ?? 0;
    // A group the plan removes has no diff group of its own in Berth's plan when nothing of it runs.
    if (now.TaskGroups?.some((t) => t.Name === g.name) || Object.keys(g.updates).length) desired[g.name] = u;
    updates.set(g.name, groupUpdates(u));
  }
  for (const t of now.TaskGroups ?? []) desired[t.Name ?? ''] ??= noUpdates();
  const failed = Object.entries(plan.failedPlacements);
  return {
    Annotations: { DesiredTGUpdates: desired, PreemptedAllocs: null },
    FailedTGAllocs: failed.length ? Object.fromEntries(failed.map(([g, f]) => [g, failedPlacementOut(f)])) : null,
    JobModifyIndex: plan.jobModifyIndex,
    CreatedEvals: null,
    Diff: opts.withDiff ? nomadJobDiff(old, now, updates) : null,
    NextPeriodicLaunch: opts.nextLaunch === undefined ? '0001-01-01T00:00:00Z' : new Date(opts.nextLaunch).toISOString(),
    Warnings: '',
    Index: opts.index,
    BerthPlacements: plan.placements.map((p) => ({ Group: p.group, Index: p.index, Name: p.name, NodeID: p.nodeId, NodeName: p.nodeName })),
    BerthStops: plan.stops.map((st) => ({ AllocID: st.allocId, Group: st.group, Name: st.name, Description: st.description })),
  };
}
