// The two-way table behind Berth's Nomad JSON converters: one table per
// Nomad object says, for each of its PascalCase fields, which canonical
// field it is and how a value converts, so that a field added once is read
// (Nomad JSON -> canonical input) and written (canonical spec -> Nomad JSON)
// by the same row. Reading refuses a field Berth does not support by name
// at its Nomad path, notes one Nomad fills with a default Berth has no
// setting for, and drops the server's bookkeeping. Writing walks a shape
// beside the table (NomadShape: each field of Nomad's object in Go's order,
// with Go's zero value where Berth has none), so the answer has every field
// of Nomad's shape. The shapes are data made from src/api's zod schemas,
// the one place Nomad's shape is written down, and a test keeps them equal
// (nomad-job-shapes.test.ts): walking the schemas themselves cost each
// answer a Proxy trap a field, and the first answer after a start built
// ~40 lazy schemas.

import { formatPath, type JobProblem } from './job-parse.js';

/** What a translation gives: the canonical input, where each of its paths came from, and what was refused or ignored. */
export interface NomadTranslation {
  input: Record<string, unknown>;
  /** Canonical path (`groups[0].tasks[0].driver`) -> path in the Nomad object (`TaskGroups[0].Tasks[0].Driver`). */
  origins: Map<string, string>;
  /** Fields refused, each at its Nomad path. */
  problems: JobProblem[];
  /** Nomad paths ignored because Berth has no such setting (a default Nomad filled in). */
  ignored: string[];
}

/** What reading collects as it goes. */
export type Translation = Omit<NomadTranslation, 'input'>;

/** One attribute's conversion, both ways. */
export interface Conv {
  /** Nomad -> canonical; undefined leaves the canonical field unset. `parent` is the Nomad object holding the value. */
  in(value: unknown, at: string, t: Translation, parent: Record<string, unknown>): unknown;
  /** Canonical -> Nomad; undefined writes the Nomad field's zero value. */
  out(value: unknown): unknown;
}

export type Rule =
  /** An attribute, renamed (and converted). `to: ''` has no canonical field: read by its conv only, written as zero. */
  | { to: string; conv?: Conv }
  /** A nested object. */
  | { to: string; obj: Table }
  /** A list of objects. */
  | { to: string; list: Table }
  /** A map of name -> object. */
  | { to: string; byName: Table }
  /** An object's own key in its parent's map (a volume's Name): not read, written from the key. */
  | { key: true }
  /** Converted by the caller, both ways (a group's Networks). */
  | { custom: true }
  /** Server bookkeeping: dropped silently, written as zero. */
  | { drop: true }
  /** Something Berth has no equivalent for: refused when it carries a value. */
  | { unsupported: string }
  /** Filled in by Nomad with its defaults and meaningless to Berth: noted when it carries a value. */
  | { defaulted: true };

export type Table = Readonly<Record<string, Rule>>;

/**
 * A table for a Nomad shape `T` (a type from src/api): a row for every one of
 * its fields, so a field added to the shape fails the typecheck until the
 * table says what it is. Rows for fields outside `T` (what older Nomads or
 * Nomad's server-side structs write) are allowed.
 */
export type TableOf<T> = { readonly [K in keyof T]-?: Rule } & Table;

export const attr = (to: string, conv?: Conv): Rule => (conv ? { to, conv } : { to });
export const DROP: Rule = { drop: true };
export const DEFAULTED: Rule = { defaulted: true };
export const KEY: Rule = { key: true };
export const CUSTOM: Rule = { custom: true };
export const unsupported = (what: string): Rule => ({ unsupported: what });

/** A field Berth takes only at its one value (or left empty): dropped then, refused otherwise; written as zero. */
export const onlyValue = (allowed: string, message: string): Rule => ({
  to: '',
  conv: {
    in: (v, at, t) => {
      if (v !== allowed && !isEmpty(v)) t.problems.push({ path: at, message });
      return undefined;
    },
    out: () => undefined,
  },
});

export const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Null, "", 0, false, and lists and objects of nothing else: what Nomad writes for a setting left alone. */
export function isEmpty(v: unknown): boolean {
  if (v === null || v === undefined || v === '' || v === 0 || v === false) return true;
  if (Array.isArray(v)) return v.every(isEmpty);
  if (isObject(v)) return Object.values(v).every(isEmpty);
  return false;
}

/** Nanoseconds (Nomad's durations in JSON) -> a duration string: 30000000000 -> "30s", 0 -> "0s". Other values pass through. */
export function nanosToDuration(value: unknown): unknown {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) return value;
  if (value === 0) return '0s';
  const units: Array<[string, number]> = [
    ['h', 3_600_000_000_000],
    ['m', 60_000_000_000],
    ['s', 1_000_000_000],
    ['ms', 1_000_000],
  ];
  for (const [unit, ns] of units) if (value % ns === 0) return `${value / ns}${unit}`;
  return `${Math.max(0, Math.round(value / 1_000_000))}ms`;
}

const NS_PER_MS = 1_000_000;
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A duration string ("1h30m", "500ms") -> nanoseconds; anything else passes through (the schema refused it already). */
function durationToNanos(value: unknown): unknown {
  if (typeof value !== 'string' || !/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(value)) return value;
  let ms = 0;
  for (const m of value.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) ms += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
  return Math.round(ms) * NS_PER_MS;
}

const msToNanos = (v: unknown): unknown => (typeof v === 'number' ? v * NS_PER_MS : v);
const nanosToMs = (v: unknown): unknown => (typeof v === 'number' ? Math.round(v / NS_PER_MS) : v);

/** A `*time.Duration` (null: unset, 0: zero) <-> a duration string. */
export const duration: Conv = { in: nanosToDuration, out: durationToNanos };
/** A `time.Duration` value field, where Nomad writes 0 for unset <-> a duration string. */
export const durationOrUnset: Conv = { in: (v) => (v === 0 ? undefined : nanosToDuration(v)), out: durationToNanos };
/** A `*time.Duration` <-> milliseconds. */
export const millis: Conv = { in: nanosToMs, out: msToNanos };
/** A `time.Duration` value field (0: unset) <-> milliseconds. */
export const millisOrUnset: Conv = { in: (v) => (v === 0 ? undefined : nanosToMs(v)), out: msToNanos };
/** A number Nomad writes as 0 when unset (MemoryMaxMB, Cores, Priority): unset here too. */
export const unsetIfZero: Conv = { in: (v) => (v === 0 ? undefined : v), out: (v) => v };

// ---------------------------------------------------------------------------
// Reading: Nomad JSON -> canonical input.

/** Where a read is in both objects: the canonical path and the Nomad path of the object being read. */
export interface ReadAt {
  canon: PropertyKey[];
  nomad: PropertyKey[];
}

/** Notes that the canonical `path` came from `nomad` in the Nomad object. */
function record(t: Translation, path: PropertyKey[], nomad: PropertyKey[]): void {
  t.origins.set(formatPath(path), formatPath(nomad));
}

/**
 * Walks one Nomad object by its table; `at` are the canonical and Nomad paths of the object.
 * A job's Nomad JSON is mostly null and "" (Nomad writes every field it has): those are
 * passed over before any path is made, and a field's printed path is made only when a
 * problem, an ignored field or a conversion needs it (this runs for every field of every
 * registration). `at` undefined is a quick read: the same input, but no origin recorded
 * and no path made (a problem or an ignored field carries only its key); a caller that
 * finds a problem reads again with paths to report it (nomad-job.ts's readNomadJobQuick).
 */
export function readObject(raw: Record<string, unknown>, table: Table, at: ReadAt | undefined, t: Translation): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(raw)) {
    const value = raw[key];
    // Nomad writes null and "" for what was left unset: nothing to read, refuse or ignore (all of them empty).
    if (value === null || value === undefined || value === '') continue;
    const rule = Object.hasOwn(table, key) ? table[key] : undefined;
    if (!rule) {
      if (!isEmpty(value)) t.problems.push({ path: pathOf(at, key), message: `unknown field "${key}" (not part of Nomad's job or volume JSON that Berth reads)` });
      continue;
    }
    if ('drop' in rule || 'key' in rule || 'custom' in rule) continue;
    if ('defaulted' in rule) {
      if (!isEmpty(value)) t.ignored.push(pathOf(at, key));
      continue;
    }
    if ('unsupported' in rule) {
      if (!isEmpty(value)) t.problems.push({ path: pathOf(at, key), message: `Berth does not support ${rule.unsupported}; remove "${key}"` });
      continue;
    }
    const here = at && { canon: [...at.canon, rule.to], nomad: [...at.nomad, key] };
    if ('obj' in rule) {
      if (here) record(t, here.canon, here.nomad);
      out[rule.to] = isObject(value) ? readObject(value, rule.obj, here, t) : value;
    } else if ('list' in rule) {
      if (here) record(t, here.canon, here.nomad);
      out[rule.to] = Array.isArray(value)
        ? value.map((item, i) => {
            const each = here && { canon: [...here.canon, i], nomad: [...here.nomad, i] };
            if (each) record(t, each.canon, each.nomad);
            return isObject(item) ? readObject(item, rule.list, each, t) : item;
          })
        : value;
    } else if ('byName' in rule) {
      if (here) record(t, here.canon, here.nomad);
      out[rule.to] = isObject(value)
        ? Object.fromEntries(
            Object.entries(value).map(([name, item]) => {
              const each = here && { canon: [...here.canon, name], nomad: [...here.nomad, name] };
              if (each) record(t, each.canon, each.nomad);
              return [name, isObject(item) ? readObject(item, rule.byName, each, t) : item];
            }),
          )
        : value;
    } else {
      const converted = rule.conv ? rule.conv.in(value, here ? formatPath(here.nomad) : key, t, raw) : value;
      if (rule.to && converted !== undefined) {
        if (here) record(t, here.canon, here.nomad);
        out[rule.to] = converted;
      }
    }
  }
  return out;
}

/** A field's printed Nomad path, or only its key in a quick read. */
const pathOf = (at: ReadAt | undefined, key: string): string => (at ? formatPath([...at.nomad, key]) : key);

/**
 * Reads a whole Nomad object found at `prefix` (`['Job']`, `['Volumes', 0]`).
 * `quick`: no origins and no Nomad paths (readObject's quick read). Pure; never throws.
 */
export function readNomad(raw: Record<string, unknown>, table: Table, prefix: PropertyKey[], opts: { quick?: boolean } = {}): NomadTranslation {
  const t: Translation = { origins: new Map(), problems: [], ignored: [] };
  if (opts.quick) return { input: readObject(raw, table, undefined, t), ...t };
  t.origins.set('', formatPath(prefix));
  const input = readObject(raw, table, { canon: [], nomad: prefix }, t);
  return { input, ...t };
}

/**
 * Problems found later in a translated input (the job schema's, at
 * canonical paths such as `groups[0].tasks[0].config.command`) at the Nomad
 * paths they came from (`Job.TaskGroups[0].Tasks[0].Config.command`): the
 * nearest ancestor the translation recorded, and the rest as the canonical
 * path has it. What a route answers a Nomad client with. Pure.
 */
export function atNomadPaths(t: Pick<NomadTranslation, 'origins'>, problems: readonly JobProblem[]): JobProblem[] {
  return problems.map((p) => ({ ...p, path: mapPath(t.origins, p.path) }));
}

/**
 * The inverse of atNomadPaths: problems at Nomad paths (a server's answer
 * to the Nomad JSON a client sent) at the canonical paths of the job they
 * were written from, which a job file can locate. `t` is the translation of
 * what was sent (`nomadJobToSpec(sent)`). Pure.
 */
export function fromNomadPaths(t: Pick<NomadTranslation, 'origins'>, problems: readonly JobProblem[]): JobProblem[] {
  const canonical = new Map<string, string>();
  for (const [canon, nomad] of t.origins) if (!canonical.has(nomad)) canonical.set(nomad, canon);
  return problems.map((p) => ({ ...p, path: mapPath(canonical, p.path) }));
}

/** `path` through `map`: its nearest ancestor found there, the rest as it is. */
function mapPath(map: ReadonlyMap<string, string>, path: string): string {
  for (let p = path; ; ) {
    const to = map.get(p);
    if (to !== undefined) {
      const rest = path.slice(p.length);
      return to ? to + rest : rest.replace(/^\./, '');
    }
    if (!p) return path;
    const cut = Math.max(p.lastIndexOf('.'), p.lastIndexOf('['));
    p = cut > 0 ? p.slice(0, cut) : '';
  }
}

// ---------------------------------------------------------------------------
// Writing: canonical spec -> Nomad JSON, every field of the API's shape.

/** A value Go's encoder writes for a field Berth has nothing for: null for a pointer, slice or map; a value type's zero; undefined (left out) for omitempty. */
export type Zero = null | '' | 0 | false | undefined;

/**
 * One Nomad object's fields as Go writes them: each field in Go's order with
 * its zero value, and the shape of what a nested field holds (the object, a
 * list's element, a map's value) where a table descends into it. Data
 * (nomad-job-shapes.ts, made from src/api's schemas and checked against them
 * by its test), so that writing a job reads no zod schema.
 */
export interface NomadShape {
  readonly zero: Readonly<Record<string, Zero>>;
  readonly nested?: Readonly<Record<string, NomadShape>>;
}

/**
 * Writes one canonical object as the Nomad object of `shape`, field by
 * field in the shape's order: a row's canonical value converted, else the
 * field's zero value. `key` is the object's name in its parent's map. Pure.
 */
export function writeObject(canon: Record<string, unknown>, table: Table, shape: NomadShape, key?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const { zero } = shape;
  for (const field in zero) {
    const rule = Object.hasOwn(table, field) ? table[field] : undefined;
    let written: unknown;
    if (rule && 'key' in rule) written = key;
    else if (rule && 'to' in rule && rule.to) {
      const value = canon[rule.to];
      if (value !== undefined) written = writeValue(value, rule, shape.nested?.[field]);
    }
    if (written === undefined) written = zero[field];
    if (written !== undefined) out[field] = written;
  }
  return out;
}

function writeValue(value: unknown, rule: Rule, nested: NomadShape | undefined): unknown {
  if ('obj' in rule) return isObject(value) ? writeObject(value, rule.obj, nestedShape(nested)) : undefined;
  if ('list' in rule) return Array.isArray(value) ? value.map((item) => (isObject(item) ? writeObject(item, rule.list, nestedShape(nested)) : item)) : undefined;
  if ('byName' in rule) {
    return isObject(value) ? Object.fromEntries(Object.entries(value).map(([name, item]) => [name, isObject(item) ? writeObject(item, rule.byName, nestedShape(nested), name) : item])) : undefined;
  }
  return 'conv' in rule && rule.conv ? rule.conv.out(value) : value;
}

/** The shapes file lists a nested shape for every field a table descends into (its test checks it). */
function nestedShape(shape: NomadShape | undefined): NomadShape {
  if (!shape) throw new Error('nomad-job-shapes.ts lacks the shape of a nested Nomad object a table descends into');
  return shape;
}
