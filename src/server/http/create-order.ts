// The order of Nomad's lists of evaluations and deployments, and their
// paging tokens: by ID when the query has a prefix, else oldest first.

/**
 * The paging token of a row of a list in create order (Nomad's
 * CreateIndexAndIDTokenizer, "<index>.<id>"), the index zero-padded so that
 * tokens sort as their rows do. Opaque to clients, who send it back.
 */
export function createIndexToken(row: { CreateIndex: number; ID: string }): string {
  return `${String(row.CreateIndex).padStart(20, '0')}.${row.ID}`;
}

/** Rows in Nomad's list order: by ID with a prefix, else oldest first (and by ID within one index). */
export function nomadListOrder<T extends { id: string; createIndex: number }>(rows: T[], byId: boolean): T[] {
  return byId ? rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) : rows.sort((a, b) => a.createIndex - b.createIndex || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
