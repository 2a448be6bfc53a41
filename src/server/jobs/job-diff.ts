// The diff of two versions of a job spec, in Nomad's shape (JobDiff ->
// task groups -> tasks, each with fields and nested objects, typed
// Added/Deleted/Edited/None), for `job plan`. Only what changed is listed.
// Pure.

import type { DiffType, FieldDiff, GroupDiff, JobDiff, JobSpec, ObjectDiff, TaskDiff, TaskGroup } from '../../structs/index.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const isPrimitiveList = (v: unknown): boolean => Array.isArray(v) && v.every((x) => !x || typeof x !== 'object');
/** Field names as Nomad prints them: `count` -> `Count`. */
const title = (k: string): string => k.charAt(0).toUpperCase() + k.slice(1);
/** A list's blocks are named in the singular, as Nomad names them: `Constraints` -> `Constraint`. */
const singular = (k: string): string => (k.endsWith('ies') ? `${k.slice(0, -3)}y` : k.endsWith('s') ? k.slice(0, -1) : k);
const text = (v: unknown): string => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));

function typeOf(old: unknown, now: unknown): DiffType {
  if (old === undefined) return 'Added';
  if (now === undefined) return 'Deleted';
  return 'Edited';
}

/** Diffs two objects' fields and nested objects, leaving out `skip` keys; undefined when nothing changed. */
function diffObject(name: string, old: Obj | undefined, now: Obj | undefined, skip: readonly string[] = []): ObjectDiff | undefined {
  const fields: FieldDiff[] = [];
  const objects: ObjectDiff[] = [];
  const keys = [...new Set([...Object.keys(old ?? {}), ...Object.keys(now ?? {})])].filter((k) => !skip.includes(k)).sort();
  for (const k of keys) {
    const a = old?.[k];
    const b = now?.[k];
    if (JSON.stringify(a) === JSON.stringify(b)) continue;
    if (isObj(a) || isObj(b)) {
      const d = diffObject(title(k), isObj(a) ? a : undefined, isObj(b) ? b : undefined);
      if (d) objects.push(d);
    } else if ((Array.isArray(a) || Array.isArray(b)) && !(isPrimitiveList(a ?? []) && isPrimitiveList(b ?? []))) {
      objects.push(...diffList(singular(title(k)), (a as unknown[] | undefined) ?? [], (b as unknown[] | undefined) ?? []));
    } else {
      fields.push({ type: typeOf(a, b), name: title(k), old: text(a), new: text(b) });
    }
  }
  if (!fields.length && !objects.length) return undefined;
  return { type: typeOf(old, now), name, fields, objects };
}

/** A list of blocks (constraints, templates, ...): by content, as Nomad compares them: removed ones Deleted, new ones Added. */
function diffList(name: string, old: unknown[], now: unknown[]): ObjectDiff[] {
  const key = (v: unknown): string => JSON.stringify(v);
  const oldKeys = new Set(old.map(key));
  const newKeys = new Set(now.map(key));
  const out: ObjectDiff[] = [];
  for (const v of old) if (!newKeys.has(key(v))) out.push(diffObject(name, isObj(v) ? v : { value: v }, undefined) as ObjectDiff);
  for (const v of now) if (!oldKeys.has(key(v))) out.push(diffObject(name, undefined, isObj(v) ? v : { value: v }) as ObjectDiff);
  return out;
}

function diffTask(old: Obj | undefined, now: Obj | undefined, name: string): TaskDiff {
  const d = diffObject(name, old, now, ['name']);
  return { type: d?.type ?? 'None', name, fields: d?.fields ?? [], objects: d?.objects ?? [], annotations: [] };
}

function diffGroup(old: TaskGroup | undefined, now: TaskGroup | undefined, name: string): GroupDiff {
  const d = diffObject(name, old as Obj | undefined, now as Obj | undefined, ['name', 'tasks']);
  const names = [...new Set([...(old?.tasks ?? []).map((t) => t.name), ...(now?.tasks ?? []).map((t) => t.name)])];
  const tasks = names.map((n) =>
    diffTask(old?.tasks.find((t) => t.name === n) as Obj | undefined, now?.tasks.find((t) => t.name === n) as Obj | undefined, n),
  );
  let type: DiffType = d?.type ?? 'None';
  if (type === 'None' && tasks.some((t) => t.type !== 'None')) type = 'Edited';
  if (!old) type = 'Added';
  if (!now) type = 'Deleted';
  return { type, name, fields: d?.fields ?? [], objects: d?.objects ?? [], tasks, updates: {} };
}

/** The diff of `now` against `old` (undefined: a new job). Pure. */
export function diffJobs(old: JobSpec | undefined, now: JobSpec): JobDiff {
  const d = diffObject(now.id, old as Obj | undefined, now as Obj, ['groups', 'id']);
  const names = [...new Set([...(old?.groups ?? []).map((g) => g.name), ...now.groups.map((g) => g.name)])];
  const groups = names.map((n) => diffGroup(old?.groups.find((g) => g.name === n), now.groups.find((g) => g.name === n), n));
  let type: DiffType = old ? (d || groups.some((g) => g.type !== 'None') ? 'Edited' : 'None') : 'Added';
  if (!old) type = 'Added';
  return { type, name: now.id, fields: d?.fields ?? [], objects: d?.objects ?? [], groups };
}
