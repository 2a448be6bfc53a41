// A row's detached part (_etcd-row-parts.ts: an allocation's placement
// metrics) kept as its JSON until something reads it: on a follower as the
// watch brought it, on the leader as its own write sent it. Only `alloc
// status`, the event stream, a snapshot and the rare write that replaces the
// part read it; placing, reporting and syncing allocations never do. The row
// carries it as an enumerable getter (spreads, JSON and readers see a plain
// value), so code that copies a row and means to keep the part lazy copies it
// with `rowWith`. Private to src/server/state, but for `rowWith`, which the
// folder's door exports.

import { deepFreeze } from './_deep-freeze.js';

/**
 * A part's JSON, decoded and frozen at its first read, not before. Never
 * throws: a part that is not JSON reads as absent (logged by nobody; the row
 * stays).
 */
export class LazyPart {
  /** The row field the part is. */
  readonly field: string;
  /** The part's JSON until it is read (a string of its own: a view into a watch message would hold the whole message). */
  #json: string | undefined;
  #value: unknown;

  constructor(field: string, json: string) {
    this.field = field;
    this.#json = json;
  }

  /** The part's value (the same frozen object at every read). */
  read(): unknown {
    const json = this.#json;
    if (json !== undefined) {
      this.#json = undefined;
      try {
        this.#value = deepFreeze(JSON.parse(json) as unknown);
      } catch {
        this.#value = undefined;
      }
    }
    return this.#value;
  }

  /** Whether `value` is what this part already read to (so a row carrying `value` carries this part), without reading it. */
  gave(value: unknown): boolean {
    return this.#json === undefined && value !== undefined && this.#value === value;
  }

  /** The part's JSON (as it came while unread; its value's JSON once read). */
  json(): string | undefined {
    return this.#json ?? JSON.stringify(this.#value);
  }
}

/**
 * Where a row keeps its LazyPart: a symbol-keyed, non-enumerable property (not in spreads, JSON, keys or
 * deep-equality), read by one getter shared by every such row, so that the rows share their hidden classes.
 */
const LAZY_PART = Symbol('lazyPart');

/** The getter of a row's lazy detached field. */
function readLazyPart(this: Record<symbol, LazyPart>): unknown {
  return this[LAZY_PART]!.read();
}

/** The LazyPart `row` carries, if any (read or not). */
export function lazyPartOf(row: object | undefined): LazyPart | undefined {
  return row === undefined ? undefined : (row as Record<symbol, LazyPart | undefined>)[LAZY_PART];
}

/** What `row` holds in its detached `field`: its LazyPart (read or not), else the value (undefined: none). Reads no lazy part. */
export function partOf(row: Record<string, unknown> | undefined, field: string): unknown {
  if (!row) return undefined;
  return lazyPartOf(row) ?? row[field];
}

/** The JSON of a part as partOf gives it (undefined: none). */
export function partJsonOf(part: unknown): string | undefined {
  return part instanceof LazyPart ? part.json() : JSON.stringify(part);
}

/**
 * Gives `body` the lazy field `part.field`: the getter, where the field then
 * goes in key order. Call before freezing `body` (freeze it with freezeRow:
 * deepFreeze would read the part).
 */
export function defineLazyPart(body: object, part: LazyPart): void {
  Object.defineProperty(body, LAZY_PART, { value: part, enumerable: false });
  Object.defineProperty(body, part.field, { get: readLazyPart, enumerable: true, configurable: true });
}

/** Freezes a row and what it holds, without reading a lazy part (deepFreeze for a row without one). */
export function freezeRow<T extends object>(body: T): T {
  const lazy = lazyPartOf(body);
  if (!lazy) return deepFreeze(body);
  for (const k of Object.keys(body)) {
    if (k === lazy.field) continue;
    const v = (body as Record<string, unknown>)[k];
    if (typeof v === 'object' && v !== null) deepFreeze(v);
  }
  return Object.freeze(body);
}

/** Sets an own data property as a spread or an object literal would (`__proto__` included: an own key, not the prototype). */
function setOwn(out: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  else out[k] = v;
}

/** `{ ...row }` without `field`, that field not read (a destructuring `{ [field]: _, ...rest }` reads it). */
export function copyWithout(row: object, field: string): Record<string, unknown> {
  if (!lazyPartOf(row)) {
    // No getter to keep from running: the rest copy (a clone of the object at once, not key by key).
    const { [field]: _part, ...rest } = row as Record<string, unknown>;
    return rest;
  }
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(row)) if (k !== field) setOwn(out, k, (row as Record<string, unknown>)[k]);
  return out;
}

/**
 * `{ ...row, ...fields }` (the same keys in the same order, not frozen), but
 * a lazy part of `row` that `fields` does not replace stays lazy: a status
 * report of an allocation copies its row without decoding its placement
 * metrics, and the write (Txn.put) sees the stored part and keeps it.
 */
export function rowWith<T extends object>(row: T, fields: Partial<T>): T {
  const lazy = lazyPartOf(row);
  if (!lazy || Object.hasOwn(fields, lazy.field)) return { ...row, ...fields };
  const from = row as Record<string, unknown>;
  const set = fields as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(from)) {
    if (Object.hasOwn(set, k)) setOwn(out, k, set[k]);
    else if (k === lazy.field) defineLazyPart(out, lazy);
    else setOwn(out, k, from[k]);
  }
  for (const k of Object.keys(set)) if (!Object.hasOwn(from, k)) setOwn(out, k, set[k]);
  return out as T;
}
