// The order of Nomad's lists of evaluations, deployments and allocations,
// and their paging tokens: by ID when the query has a prefix, else oldest
// first.

import type { FastifyRequest } from 'fastify';

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

/**
 * Nomad writes the token as `<create index>.<ID>`; one given so (by a
 * client that built it, or kept it from Nomad) is padded as ours are.
 * Call before the list is read.
 */
export function normalizeNextToken(req: FastifyRequest): void {
  const q = req.query as Record<string, string | undefined>;
  const m = /^(\d+)\.(.*)$/.exec(q['next_token'] ?? '');
  if (m) q['next_token'] = `${(m[1] as string).padStart(20, '0')}.${m[2] as string}`;
}
