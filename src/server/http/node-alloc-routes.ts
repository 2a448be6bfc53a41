// The node agent's allocation routes (Berth's internal protocol, as Nomad's
// RPC is). The incremental allocation sync (structs/alloc-sync.ts), as
// Nomad's client does it: a blocking GET /v1/node/:id/allocation-indexes
// answers each allocation's ID and alloc modify index; POST
// /v1/node/:id/allocations/pull sends the allocations the node asks for,
// and each job once, only when the node does not hold that version. A node
// of 200 allocations whose one allocation changed gets 200 small numbers
// and one allocation, not 200 allocations each with its job. A node that
// names what it holds (`since`, `heldJobs`) gets the changed allocations
// in the indexes answer itself and pulls only what did not fit: a change
// costs it one request, not two (each request's fixed cost was the largest
// share of a 10,000-allocation job's CPU).

import type { FastifyInstance } from 'fastify';
import {
  ALLOC_PULL_MAX,
  CLIENT_ALLOC_FIELDS,
  isHeldJob,
  publicJob,
  type Allocation,
  type AllocIndexesAnswer,
  type AllocIndexesInline,
  type AllocPullAnswer,
  type HeldJob,
  type Job,
} from '../../structs/index.js';
import type { AllocationUpdate } from '../jobs/index.js';
import { copyWithout, rowKey, type StateReader, type StateStore } from '../state/index.js';
import { AllocationsByNode } from './allocations-by-node.js';
import { ApiError } from './api-error.js';
import { blockingReadOf, parseBlockingQuery, type BlockingQuery } from './blocking.js';
import { setIndexHeaders } from './nomad-read.js';
import { replayReadBody } from './main-fast-register.js';
import { objectBody, type RouteContext } from './route-context.js';

type Params = { id: string };

/** How long a pull waits for this server's state to reach the index the node names. */
const PULL_CATCH_UP_MS = 10_000;

/**
 * The node's allocations as a blocking read woken only by writes to them (a
 * thousand nodes' watches are not all answered for each write). `read`
 * gets the node's allocations; undefined when the node is unknown.
 */
export function readNodeAllocations<T>(
  store: StateStore,
  nodeId: string,
  query: BlockingQuery,
  signal: AbortSignal,
  read: (allocs: Allocation[], snap: StateReader) => T,
): Promise<{ index: number; result: T | undefined }> {
  return blockingReadOf(store, 'allocations', { key: nodeIdOf, is: nodeId }, query, signal, (snap) => {
    if (!snap.get('nodes', rowKey(nodeId))) return undefined;
    return read(allocationsOfNode(store, snap, nodeId), snap);
  });
}

/** The node of an allocation row (undefined for none: a deleted row's event may carry none). */
function nodeIdOf(row: unknown): string | undefined {
  const id = (row as { nodeId?: unknown } | null)?.nodeId;
  return typeof id === 'string' ? id : undefined;
}

/** Per store, each node's allocations, kept current from its event history (allocations-by-node.ts). */
const byNodeOf = new WeakMap<StateStore, AllocationsByNode>();

/** The allocations on `nodeId` in `snap`, sorted by ID, as a list is. */
function allocationsOfNode(store: StateStore, snap: StateReader, nodeId: string): Allocation[] {
  let byNode = byNodeOf.get(store);
  if (!byNode) byNodeOf.set(store, (byNode = new AllocationsByNode()));
  return byNode.of(snap, nodeId);
}

interface Seen {
  /** The version of the allocation last seen (the store's row: no copy). */
  row: Allocation;
  /** The modify index of the version whose server fields are those of `row` (AllocIndexesAnswer). */
  allocModifyIndex: number;
}

/**
 * Each node's allocations as this server last answered them, for their
 * alloc modify index: a version whose server fields are those of the
 * version seen before keeps that one's index; any other gets its own.
 * Invariant: an entry's row has the server fields of the version its
 * allocModifyIndex names, so the same number always means the same server
 * fields. A server
 * that never saw an allocation (just started, or another server answered
 * before) gives its current modify index: the node pulls it once more.
 * In memory, one small entry per allocation, holding the row last seen
 * (the store's own object: an older version is let go at the node's next
 * read); never throws.
 */
export class AllocModifyIndexes {
  readonly #byNode = new Map<string, Map<string, Seen>>();
  /** Per node, the index this server last sent the node its indexes at (`sent`). */
  readonly #sentAt = new Map<string, number>();

  /**
   * The alloc modify index of each of the node's allocations now; forgets
   * allocations no longer listed. `news` is false when a node that has seen
   * this server's last answer (it asks from `asked`, at or past the index
   * of that answer) would learn nothing from this one: the same
   * allocations, each with the same number.
   */
  answer(nodeId: string, allocs: readonly Allocation[], asked?: number): { indexes: Record<string, number>; news: boolean } {
    const before = this.#byNode.get(nodeId);
    const sentAt = this.#sentAt.get(nodeId);
    const now = new Map<string, Seen>();
    const out: Record<string, number> = {};
    let same = before !== undefined && sentAt !== undefined && asked !== undefined && asked >= sentAt && before.size === allocs.length;
    for (const a of allocs) {
      const prior = before?.get(a.id);
      const seen = this.#see(prior, a);
      if (same && prior?.allocModifyIndex !== seen.allocModifyIndex) same = false;
      now.set(a.id, seen);
      out[a.id] = seen.allocModifyIndex;
    }
    this.#byNode.set(nodeId, now);
    return { indexes: out, news: !same };
  }

  /** The node was sent its indexes as of `index`. */
  sent(nodeId: string, index: number): void {
    this.#sentAt.set(nodeId, index);
  }

  /** Records versions sent to the node (a pull may send a newer one than the last indexes answer saw); returns each one's index. */
  record(nodeId: string, allocs: readonly Allocation[]): Record<string, number> {
    let known = this.#byNode.get(nodeId);
    if (!known) this.#byNode.set(nodeId, (known = new Map()));
    const out: Record<string, number> = {};
    for (const a of allocs) {
      const seen = this.#see(known.get(a.id), a);
      known.set(a.id, seen);
      out[a.id] = seen.allocModifyIndex;
    }
    return out;
  }

  /** A node that is gone. */
  forget(nodeId: string): void {
    this.#byNode.delete(nodeId);
    this.#sentAt.delete(nodeId);
  }

  #see(seen: Seen | undefined, a: Allocation): Seen {
    if (seen && (seen.row === a || seen.row.modifyIndex === a.modifyIndex)) return seen;
    return { row: a, allocModifyIndex: seen && sameServerFields(seen.row, a) ? seen.allocModifyIndex : a.modifyIndex };
  }
}

/** What the comparison leaves out: the fields the node reports, and the placement metrics, which nodes are not sent (sentToNode). */
const NOT_SERVER_FIELDS = new Set<string>([...CLIENT_ALLOC_FIELDS, 'metrics']);

/**
 * Whether two versions of an allocation have the same server fields (all
 * but NOT_SERVER_FIELDS), as their JSON would say: a key holding undefined
 * counts as absent; the order of keys does not matter. Compared field by
 * field, stopping at the first difference: a follower decodes each version
 * into new objects, and a SHA-1 of each version's JSON (before) cost the
 * serving server some 30-50 us a version. Pure.
 */
export function sameServerFields(a: Allocation, b: Allocation): boolean {
  let keys = 0;
  for (const k in a) {
    if (NOT_SERVER_FIELDS.has(k)) continue;
    const v = (a as unknown as Record<string, unknown>)[k];
    if (v === undefined) continue;
    keys++;
    if (!sameJson(v, (b as unknown as Record<string, unknown>)[k])) return false;
  }
  for (const k in b) {
    if (!NOT_SERVER_FIELDS.has(k) && (b as unknown as Record<string, unknown>)[k] !== undefined) keys--;
  }
  return keys === 0;
}

/** Equal as JSON values (what JSON.parse makes: null, booleans, numbers, strings, arrays, plain objects). */
function sameJson(x: unknown, y: unknown): boolean {
  if (x === y) return true;
  if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
  if (Array.isArray(x)) {
    if (!Array.isArray(y) || x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!sameJson(x[i], y[i])) return false;
    return true;
  }
  if (Array.isArray(y)) return false;
  const xo = x as Record<string, unknown>;
  const yo = y as Record<string, unknown>;
  let keys = 0;
  for (const k in xo) {
    const v = xo[k];
    if (v === undefined) continue;
    keys++;
    if (!sameJson(v, yo[k])) return false;
  }
  for (const k in yo) if (yo[k] !== undefined) keys--;
  return keys === 0;
}

/**
 * The allocation as a node gets it: without its placement metrics (why the
 * scheduler chose the node: for `alloc status --verbose`, which servers
 * answer), some 60 % of the row's bytes, which no node reads. Pure.
 */
function sentToNode(a: Allocation): Allocation {
  // Without reading the metrics, which the store may keep undecoded (copyWithout).
  return Object.hasOwn(a, 'metrics') ? (copyWithout(a, 'metrics') as unknown as Allocation) : a;
}

/**
 * Registers the node agent's allocation routes, Berth's internal protocol:
 * the two of the incremental sync, the whole list (what a node falls back
 * to) and the node's status reports. The last two live under
 * /v1/internal/...: Nomad's GET /v1/node/:id/allocations is the public list
 * (alloc-routes.ts).
 */
export function registerNodeAllocRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps, signalOf } = ctx;
  const { store, jobs: jobService } = deps;
  const indexes = new AllocModifyIndexes();

  // The node's allocations, each with its job, as a blocking read (a node of this build syncs
  // incrementally instead, below). Only the node itself gets the job's mount flags
  // (it mounts with them); readers see them redacted, as everywhere.
  app.get<{ Params: Params; Querystring: Record<string, string | undefined> }>(
    '/v1/internal/node/:id/allocations',
    { config: { access: 'node-read' } },
    async (req, reply) => {
      const forNode = req.caller?.role === 'node';
      const { index, result } = await readNodeAllocations(store, req.params.id, parseBlockingQuery(req.query), signalOf(req, reply), (allocs, snap) => {
        const jobsById = new Map<string, Job | undefined>();
        return allocs.map((a) => {
          const key = rowKey(a.namespace, a.jobId);
          if (!jobsById.has(key)) {
            const job = snap.get('jobs', key);
            jobsById.set(key, job && !forNode ? publicJob(job) : job);
          }
          const job = jobsById.get(key);
          return job ? { ...sentToNode(a), job } : sentToNode(a);
        });
      });
      if (!result) throw new ApiError('NOT_FOUND', `node "${req.params.id}" not found`);
      setIndexHeaders(ctx, reply, index);
      return result;
    },
  );

  // The node's status reports of its allocations, applied all or none. On the leader they are served ahead
  // of the router (main-fast-node.ts), which hands on what it does not take with the body it read.
  app.post<{ Params: Params }>('/v1/internal/node/:id/allocations', { config: { access: 'node' }, preParsing: replayReadBody }, async (req, reply) => {
    const body = objectBody(req.body);
    const list = body['allocations'];
    if (!Array.isArray(list)) throw new ApiError('INVALID', 'allocations must be a list', { field: 'allocations' });
    const updates: AllocationUpdate[] = list.map((u, i) => {
      const o = objectBody(u, `allocations[${i}]`);
      if (typeof o['id'] !== 'string' || typeof o['clientStatus'] !== 'string') {
        throw new ApiError('INVALID', `allocations[${i}] needs an id and a clientStatus`, { field: `allocations[${i}]` });
      }
      return o as unknown as AllocationUpdate;
    });
    const { index } = await jobService.updateAllocations(req.params.id, updates);
    setIndexHeaders(ctx, reply, index);
    return { index };
  });

  // The node's allocation indexes, as a blocking read; with `since`, the changed allocations too (AllocIndexesAnswer).
  app.get<{ Params: Params; Querystring: Record<string, string | undefined> }>(
    '/v1/node/:id/allocation-indexes',
    { config: { access: 'node-read' } },
    async (req, reply): Promise<AllocIndexesAnswer> => {
      const nodeId = req.params.id;
      const query = parseBlockingQuery(req.query);
      const signal = signalOf(req, reply);
      const inline = inlineRequestOf(req.query);
      const deadline = Date.now() + query.waitMs;
      for (let asked = query; ; ) {
        const { index, result } = await readNodeAllocations(store, nodeId, asked, signal, (allocs, snap) => ({ ...indexes.answer(nodeId, allocs, query.index), allocs, snap }));
        if (!result) {
          indexes.forget(nodeId);
          throw new ApiError('NOT_FOUND', `node "${nodeId}" not found`);
        }
        // Woken by writes that changed nothing the node would pull (its own status reports, which
        // move the allocations' modify index but not their alloc modify index): it waits on. A burst
        // of 200 task starts was some 60 status POSTs, each a read answered and an empty change handled.
        const left = deadline - Date.now();
        if (query.index !== undefined && !result.news && left > 0) {
          asked = { index, waitMs: left };
          continue;
        }
        indexes.sent(nodeId, index);
        setIndexHeaders(ctx, reply, index);
        if (!inline) return { allocations: result.indexes };
        const changed: Allocation[] = [];
        for (const a of result.allocs) {
          if (changed.length === ALLOC_PULL_MAX) break;
          if (result.indexes[a.id]! > inline.since) changed.push(a);
        }
        const { allocations, jobs } = pullAnswerOf(result.snap, changed, inline.heldJobs, req.caller?.role === 'node');
        return { allocations: result.indexes, pulled: { allocations, jobs } };
      }
    },
  );

  // A read, though a POST (the IDs may be many): every server answers it from its own state (leader-forward.ts).
  app.post<{ Params: Params }>('/v1/node/:id/allocations/pull', { config: { access: 'node-read' } }, async (req, reply): Promise<AllocPullAnswer> => {
    const nodeId = req.params.id;
    const { ids, minIndex, heldJobs } = pullRequestOf(req.body);
    const signal = signalOf(req, reply);
    if (store.snapshot().tableIndex('allocations') < minIndex) {
      await store.blockUntil(['allocations'], minIndex - 1, { signal, timeoutMs: PULL_CATCH_UP_MS });
    }
    const snap = store.snapshot();
    const index = Math.max(1, snap.tableIndex('allocations'));
    if (index < minIndex) {
      throw new ApiError('UNAVAILABLE', `this server's state (allocation index ${index}) is behind the index asked for (${minIndex}); retry`, { retryable: true });
    }
    if (!snap.get('nodes', rowKey(nodeId))) throw new ApiError('NOT_FOUND', `node "${nodeId}" not found`);
    const allocations: Allocation[] = [];
    for (const id of ids) {
      const a = snap.get('allocations', rowKey(id));
      if (a && a.nodeId === nodeId) allocations.push(a);
    }
    setIndexHeaders(ctx, reply, index);
    const answer = pullAnswerOf(snap, allocations, heldJobs, req.caller?.role === 'node');
    return { ...answer, allocModifyIndex: indexes.record(nodeId, allocations) };
  });
}

/**
 * The allocations as a node is sent them, and the current job of each,
 * once, unless `heldJobs` names that version. Only the node itself gets the
 * job's mount flags (it mounts with them); readers see them redacted. Pure
 * but for reading `snap`.
 */
function pullAnswerOf(snap: StateReader, allocs: readonly Allocation[], heldJobs: readonly HeldJob[], forNode: boolean): { allocations: Allocation[]; jobs: Job[] } {
  const jobs: Job[] = [];
  const answered = new Set<string>();
  for (const a of allocs) {
    const key = rowKey(a.namespace, a.jobId);
    if (answered.has(key)) continue;
    answered.add(key);
    const job = snap.get('jobs', key);
    if (job && !heldJobs.some((h) => isHeldJob(h, job))) jobs.push(forNode ? job : publicJob(job));
  }
  return { allocations: allocs.map(sentToNode), jobs };
}

/** The `since` and `heldJobs` query parameters (AllocIndexesInline); undefined without `since`. Throws ApiError INVALID naming the parameter. */
function inlineRequestOf(query: Record<string, string | undefined>): AllocIndexesInline | undefined {
  const rawSince = query['since'];
  if (rawSince === undefined || rawSince === '') return undefined;
  const since = Number(rawSince);
  if (!Number.isSafeInteger(since) || since < 0) throw new ApiError('INVALID', 'since must be a non-negative integer', { field: 'since' });
  const rawHeld = query['heldJobs'];
  if (rawHeld === undefined || rawHeld === '') return { since, heldJobs: [] };
  let tuples: unknown;
  try {
    tuples = JSON.parse(rawHeld);
  } catch {
    tuples = undefined;
  }
  const valid =
    Array.isArray(tuples) &&
    tuples.every((t) => Array.isArray(t) && t.length === 4 && typeof t[0] === 'string' && typeof t[1] === 'string' && typeof t[2] === 'number' && typeof t[3] === 'number');
  if (!valid) throw new ApiError('INVALID', 'heldJobs must be JSON of [namespace, id, createIndex, version] lists', { field: 'heldJobs' });
  return { since, heldJobs: (tuples as Array<[string, string, number, number]>).map(([namespace, id, createIndex, version]) => ({ namespace, id, createIndex, version })) };
}

/** Reads and checks a pull's body. Throws ApiError INVALID naming the field. */
function pullRequestOf(body: unknown): { ids: string[]; minIndex: number; heldJobs: HeldJob[] } {
  const o = objectBody(body);
  const ids = o['ids'];
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) throw new ApiError('INVALID', 'ids must be a list of allocation IDs', { field: 'ids' });
  if (ids.length > ALLOC_PULL_MAX) throw new ApiError('INVALID', `ids names ${ids.length} allocations; at most ${ALLOC_PULL_MAX} per pull`, { field: 'ids' });
  const minIndex = o['minIndex'] ?? 0;
  if (typeof minIndex !== 'number' || !Number.isSafeInteger(minIndex) || minIndex < 0) {
    throw new ApiError('INVALID', 'minIndex must be a non-negative integer', { field: 'minIndex' });
  }
  const held = o['heldJobs'] ?? [];
  if (!Array.isArray(held)) throw new ApiError('INVALID', 'heldJobs must be a list', { field: 'heldJobs' });
  const heldJobs = held.map((h: unknown, i): HeldJob => {
    const j = objectBody(h, `heldJobs[${i}]`);
    if (typeof j['namespace'] !== 'string' || typeof j['id'] !== 'string' || typeof j['createIndex'] !== 'number' || typeof j['version'] !== 'number') {
      throw new ApiError('INVALID', `heldJobs[${i}] needs a namespace, an id, a createIndex and a version`, { field: `heldJobs[${i}]` });
    }
    return { namespace: j['namespace'], id: j['id'], createIndex: j['createIndex'], version: j['version'] };
  });
  return { ids: ids as string[], minIndex, heldJobs };
}
