// Nomad's query semantics, shared by every read route: the query options a
// Nomad client sends (`namespace`, `prefix`, `index`/`wait` for a blocking
// query, `filter`, `per_page`/`next_token`, `reverse`, `region`) and the
// headers it reads back (`X-Nomad-Index`, `X-Nomad-KnownLeader`,
// `X-Nomad-LastContact`, `X-Nomad-NextToken`). Routes read rows from a store
// snapshot, convert them to Nomad's shapes (src/api), and hand the list here
// for filtering and paging, so a filter sees the fields a user sees.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { compileFilter } from '../../lib/index.js';
import type { StateReader, TableName } from '../state/index.js';
import { ApiError } from './api-error.js';
import { blockingRead, parseBlockingQuery } from './blocking.js';
import type { RouteContext } from './route-context.js';

/** The query options of one read, as Nomad's `QueryOptions`. */
export interface QueryOptions {
  /** `default` when absent; `*` for every namespace. */
  namespace: string;
  /** An ID prefix ('' for all). */
  prefix: string;
  /** Wait until the index passes this (a blocking query); undefined: answer at once. */
  index?: number;
  waitMs: number;
  /** A go-bexpr filter expression over the answer's rows. */
  filter?: string;
  perPage?: number;
  nextToken?: string;
  reverse: boolean;
}

/** Reads Nomad's query options. Throws ApiError INVALID naming the parameter. */
export function queryOptions(query: Record<string, unknown>): QueryOptions {
  const str = (k: string): string | undefined => {
    const v = query[k];
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  const blocking = parseBlockingQuery(query);
  const opts: QueryOptions = { namespace: str('namespace') ?? 'default', prefix: str('prefix') ?? '', waitMs: blocking.waitMs, reverse: str('reverse') === 'true' };
  if (blocking.index !== undefined) opts.index = blocking.index;
  const filter = str('filter');
  if (filter !== undefined) opts.filter = filter;
  const perPage = str('per_page');
  if (perPage !== undefined) {
    const n = Number(perPage);
    if (!Number.isSafeInteger(n) || n < 0) throw new ApiError('INVALID', 'per_page must be a non-negative integer', { field: 'per_page' });
    if (n > 0) opts.perPage = n;
  }
  const next = str('next_token');
  if (next !== undefined) opts.nextToken = next;
  return opts;
}

/** Whether a row's namespace is the one asked for (`*`: all). */
export function inNamespace(ns: string): (row: { namespace: string }) => boolean {
  return ns === '*' ? () => true : (row) => row.namespace === ns;
}

/**
 * Sets the headers every Nomad answer carries: the index the answer is at,
 * whether a leader is known, and how long since the leader was heard from
 * (0 on the leader itself and on a solo server).
 */
export function setIndexHeaders(ctx: RouteContext, reply: FastifyReply, index: number): void {
  const h = indexHeaders(ctx.deps, index);
  for (let i = 0; i + 1 < h.length; i += 2) void reply.header(h[i] as string, h[i + 1]);
}

/** The index headers of an answer at `index` (name, value, ...; lowercase, as fastify writes them). */
export function indexHeaders(deps: Pick<RouteContext['deps'], 'leadership'>, index: number): string[] {
  const leadership = deps.leadership?.();
  const knownLeader = leadership === undefined || leadership.leader !== undefined;
  return ['x-nomad-index', String(Math.max(1, index)), 'x-nomad-knownleader', knownLeader ? 'true' : 'false', 'x-nomad-lastcontact', '0'];
}

/**
 * One read as Nomad answers it: waits as the query's `index`/`wait` ask
 * (until one of `tables` passes the index, or the wait runs out), runs
 * `read` on a snapshot, sets the index headers, and resolves with the
 * result. Rejects with AbortedError when the client goes away, ApiError
 * INVALID for malformed options.
 */
export async function nomadRead<T>(
  ctx: RouteContext,
  req: FastifyRequest,
  reply: FastifyReply,
  tables: readonly TableName[],
  read: (snap: StateReader, opts: QueryOptions) => T,
): Promise<T> {
  const opts = queryOptions(req.query as Record<string, unknown>);
  const q = opts.index === undefined ? { waitMs: opts.waitMs } : { index: opts.index, waitMs: opts.waitMs };
  const { index, result } = await blockingRead(ctx.deps.store, tables, q, ctx.signalOf(req, reply), (snap) => read(snap, opts));
  setIndexHeaders(ctx, reply, index);
  return result;
}

/**
 * A list as Nomad answers it: the rows (already in Nomad's shape) kept by
 * the query's `filter`, in reverse when asked, and cut to a page of
 * `per_page` starting at `next_token`; `X-Nomad-NextToken` names the first
 * row of the next page when there is one. `tokenOf` gives a row's paging
 * token (default its `ID`); rows must come sorted by it. Throws ApiError
 * INVALID for a filter that does not parse or names a field wrongly.
 */
export function listPage<T>(rows: readonly T[], req: FastifyRequest, reply: FastifyReply, tokenOf: (row: T) => string = defaultToken): T[] {
  const opts = queryOptions(req.query as Record<string, unknown>);
  let out = [...rows];
  if (opts.filter !== undefined) {
    let keep: (row: unknown) => boolean;
    try {
      keep = compileFilter(opts.filter);
    } catch (err) {
      throw new ApiError('INVALID', `failed to read filter expression: ${(err as Error).message}`, { field: 'filter' });
    }
    out = out.filter((row) => keep(row));
  }
  if (opts.reverse) out.reverse();
  if (opts.nextToken !== undefined) {
    const at = opts.nextToken;
    const start = out.findIndex((row) => (opts.reverse ? tokenOf(row) <= at : tokenOf(row) >= at));
    out = start < 0 ? [] : out.slice(start);
  }
  if (opts.perPage !== undefined && out.length > opts.perPage) {
    void reply.header('X-Nomad-NextToken', tokenOf(out[opts.perPage] as T));
    out = out.slice(0, opts.perPage);
  }
  return out;
}

function defaultToken(row: unknown): string {
  const id = (row as { ID?: unknown }).ID;
  return typeof id === 'string' ? id : '';
}
