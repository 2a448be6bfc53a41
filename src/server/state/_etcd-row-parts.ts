// The etcd store keeps a row's part that its later versions rarely change
// under a key of its own, written only when that part changes: an
// allocation's placement metrics (Nomad's AllocMetric: some 60 % of the
// row's bytes, set once by the scheduler) would otherwise go through etcd
// and every server's watch again with each status report of its node
// (placed, running, complete: three times). The rows above the store are
// whole: the replica puts the part back on the row it decodes. Private to
// src/server/state.

import type { DataTable } from './state-store.js';

/** Per table, the field kept under a key of its own (`<prefix>/parts/<table>/<field>/<row key>`). */
const DETACHED: Partial<Record<DataTable, string>> = { allocations: 'metrics' };

/** The field of `table`'s rows kept apart, if any. */
export function detachedField(table: DataTable): string | undefined {
  return DETACHED[table];
}

/** The etcd key of the part `field` of row `key` of `table`. */
export function partKey(prefix: string, table: DataTable, field: string, key: string): string {
  return `${prefix}/parts/${table}/${field}/${key}`;
}

/** The table, field and row key a part key (the key less `<prefix>/parts/`) names; undefined for none this code keeps. */
export function parsePartKey(rest: string): { table: DataTable; field: string; key: string } | undefined {
  const a = rest.indexOf('/');
  const b = a < 0 ? -1 : rest.indexOf('/', a + 1);
  if (b < 0) return undefined;
  const table = rest.slice(0, a) as DataTable;
  const field = rest.slice(a + 1, b);
  return DETACHED[table] === field ? { table, field, key: rest.slice(b + 1) } : undefined;
}
