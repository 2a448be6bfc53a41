// The etcd helpers of the etcd StateStore: decoding a row, the size limit, nesting a large write in
// sub-Txns within etcd's --max-txn-ops, the end of a key prefix's range, and
// which failures mean "etcd cannot answer now". Private to src/server/state.

import type { IKeyValue, IRequestOp } from 'etcd3';
import { type Row } from './_store-view.js';
import { defineLazyPart, freezeRow, LazyPart, rowWith } from './_lazy-part.js';
import { describeError } from '../../lib/index.js';
import { StateStoreError } from './errors.js';

/**
 * etcd refuses a Txn with more than --max-txn-ops (default 128) compares or
 * operations at one level. Bigger writes nest their operations in sub-Txns of
 * at most this many each (all applied at one revision), and compare the
 * markers of the tables they read instead of each key.
 */
export const TXN_LEVEL_OPS = 100;
/** etcd's default --max-txn-ops. A sub-Txn gets what its parents left: this less the largest list of each level above. */
export const MAX_TXN_OPS = 128;

/** How many operations fit under `budget` with nesting (etcd's per-level rule), memoized. */
const capacities = new Map<number, number>();
function capacity(budget: number): number {
  if (budget <= 2) return Math.max(0, budget);
  let best = capacities.get(budget);
  if (best !== undefined) return best;
  best = budget;
  for (let m = 2; m < budget; m++) best = Math.max(best, m * capacity(budget - m));
  capacities.set(budget, best);
  return best;
}

/**
 * Nests `ops` in sub-Txns so that etcd accepts them: each level holds at
 * most `budget` entries, less `taken` (its compares or failure ops), and a
 * sub-Txn's own budget is what the level above left (etcd checks a nested
 * Txn against --max-txn-ops minus its parent's largest list). A write of
 * 10,000 allocations nests two levels deep. Throws when even that cannot fit.
 */
export function nestOps(ops: IRequestOp[], budget: number, taken = 0): IRequestOp[] {
  if (ops.length <= budget) return ops;
  for (let m = 2; m < budget; m++) {
    const inner = budget - Math.max(taken, m);
    if (inner < 1) break;
    if (m * capacity(inner) < ops.length) continue;
    const size = Math.ceil(ops.length / m);
    const out: IRequestOp[] = [];
    for (let i = 0; i < ops.length; i += size) out.push({ request_txn: { compare: [], success: nestOps(ops.slice(i, i + size), inner), failure: [] } });
    return out;
  }
  throw new StateStoreError('STORE_IO', `a write of ${ops.length} changes is too large for one etcd transaction`);
}

/** The first key after every key that starts with `prefix` (a Range's end). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

/** A gRPC/etcd failure that means "etcd cannot answer now" (no quorum, unreachable, deadline) rather than a bug. */
export function isUnavailable(err: unknown): boolean {
  const text = `${(err as Error)?.name ?? ''} ${(err as Error)?.message ?? ''}`;
  return /Unavailable|DeadlineExceeded|deadline|timed out|no leader|BrokenCircuit|ECONNREFUSED|connect|Cancelled|Internal|leader changed/i.test(text);
}

/** The error of an etcd call that could not be made now (`what` failed). */
export function unavailable(what: string, err: unknown): StateStoreError {
  return new StateStoreError(
    'STORE_UNAVAILABLE',
    `the state store (etcd) is unavailable: ${what} failed: ${describeError(err)}. etcd may have lost its quorum or be unreachable; retry once it is back`,
    { cause: err },
  );
}

/** etcd refused a request over its --max-request-bytes. */
export function isTooLarge(err: unknown): boolean {
  return /request is too large/i.test(`${(err as Error)?.message ?? ''}`);
}

/** The error a write gets when etcd refused its Txn as too large. */
export function tooLarge(cause: unknown, changes: number, bytes: number): StateStoreError {
  return new StateStoreError(
    'STORE_TOO_LARGE',
    `a state write of ${changes} changes (${Math.round(bytes / 1024)} KiB) is larger than etcd accepts in one request; raise etcd's --max-request-bytes`,
    { cause },
  );
}

/**
 * A row as the replica keeps it: the key's JSON, frozen, with its create and
 * mod revisions as indexes. `part` is asked for the row's detached part
 * (_etcd-row-parts.ts) when the JSON leaves `field` out; a LazyPart it gives
 * becomes a getter on the row that decodes the part at its first read (an
 * enumerable own property: spreads, JSON and readers see a plain value).
 * Throws STORE_CORRUPT.
 */
export function decodeRow(kv: IKeyValue, what: string, part?: { field: string; value: () => unknown }): Row {
  const parsed = decodeJson(kv, what);
  // Not an object (a damaged key): a row of its own keys, as before (spread).
  const body = (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed : { ...(parsed as object) }) as Record<string, unknown>;
  if (part && !Object.hasOwn(body, part.field)) {
    const value = part.value();
    if (value instanceof LazyPart) defineLazyPart(body, value);
    else if (value !== undefined) body[part.field] = value;
  }
  // The parsed object is this row's own: its indexes are set on it, not on a copy (the JSON carries both
  // keys, as the writer's guess, so they keep their place; a row without them gets them last, as a copy did).
  body['createIndex'] = Number(kv.create_revision);
  body['modifyIndex'] = Number(kv.mod_revision);
  return freezeRow(body) as Row;
}

/** A key's value as JSON. Throws STORE_CORRUPT. */
export function decodeJson(kv: IKeyValue, what: string): unknown {
  try {
    return JSON.parse(kv.value.toString()) as unknown;
  } catch (err) {
    throw new StateStoreError('STORE_CORRUPT', `etcd key ${what} is not valid JSON`, { cause: err });
  }
}

/** The rows of one Txn, by etcd key, with the value sent for each. */
export type SentRows = Map<string, { value: Buffer; row: Row }>;

/**
 * The row of a Put the watch brought: when it is the value this server sent
 * (`sent`: the rows of its Txn in flight), the row it built from that JSON,
 * with the key's revisions as indexes (no parse, no deep freeze: a leader
 * would otherwise decode every row it wrote a second time); else decodeRow,
 * with `part` (see there). Throws STORE_CORRUPT.
 */
export function watchedRow(kv: IKeyValue, key: string, sent: SentRows | undefined, part?: { field: string; value: () => unknown }): Row {
  const mine = sent?.get(key);
  if (mine && mine.value.equals(kv.value)) {
    const createIndex = Number(kv.create_revision);
    const modifyIndex = Number(kv.mod_revision);
    // The write guessed its revision (the store's index + 1): when etcd gave that one, the row as built is the row, not copied again.
    if (mine.row.createIndex === createIndex && mine.row.modifyIndex === modifyIndex && Object.isFrozen(mine.row)) return mine.row;
    return Object.freeze(rowWith(mine.row, { createIndex, modifyIndex }));
  }
  return decodeRow(kv, key, part);
}
