// Nomad's search endpoints (command/agent/search_endpoint.go, nomad/search_endpoint.go):
//   PUT/POST /v1/search        (read) IDs that start with `Prefix`, per context
//   PUT/POST /v1/search/fuzzy  (read) names that contain `Text` (case-insensitive), per context
// A context is Nomad's: jobs, nodes, allocs, evals, deployment, plugins,
// volumes, namespaces, or "all". A fuzzy search of jobs also matches their
// groups, tasks, services, commands (exec, raw_exec) and images (docker),
// each with the Scope of its parents ([namespace, job, group, task]).
// Berth matches volumes by name fuzzily too (Nomad only by ID prefix):
// a volume's ID, Scope [namespace]. At most 20 matches a context, best
// first; Truncations says where more matched. Namespace: the query's
// `namespace` (`*` for every one), else the body's, else default.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { FuzzySearchRequest, SearchRequest, type FuzzyMatch, type FuzzySearchResponse, type SearchResponse } from '../../api/index.js';
import type { Job } from '../../structs/index.js';
import { namespacesIn } from '../namespaces/index.js';
import type { StateReader, TableName } from '../state/index.js';
import { ApiError } from './api-error.js';
import { queryMeta } from './job-params.js';
import { inNamespace, nomadRead } from './nomad-read.js';
import { objectBody, type RouteContext } from './route-context.js';

/** At most this many matches a context (Nomad's truncateLimit). */
export const SEARCH_LIMIT = 20;
/** Nomad's default search.min_term_length for a fuzzy search. */
const MIN_TERM_LENGTH = 2;

/** The contexts "all" stands for, in Nomad's order. */
const PREFIX_CONTEXTS = ['allocs', 'deployment', 'evals', 'jobs', 'nodes', 'namespaces', 'plugins', 'volumes'] as const;
const FUZZY_CONTEXTS = ['allocs', 'jobs', 'nodes', 'namespaces', 'plugins', 'volumes'] as const;
type PrefixContext = (typeof PREFIX_CONTEXTS)[number];
type FuzzyContext = (typeof FUZZY_CONTEXTS)[number];
const TABLES: readonly TableName[] = ['jobs', 'nodes', 'allocations', 'evaluations', 'deployments', 'plugins', 'volumes', 'namespaces'];

/** A match before sorting: where the text starts in the name. */
interface Scored {
  id: string;
  scope?: string[];
  at: number;
}

/** The contexts a request names: each of `known` for "all" (or none given); ApiError INVALID for one Berth does not search. */
function contextsOf<C extends string>(raw: string | undefined, known: readonly C[]): readonly C[] {
  if (raw === undefined || raw === '' || raw === 'all') return known;
  if ((known as readonly string[]).includes(raw)) return [raw as C];
  throw new ApiError('INVALID', `Context: "${raw}" is not a context Berth searches (one of all, ${known.join(', ')})`, { field: 'Context' });
}

function namespaceOf(req: FastifyRequest, body: { Namespace?: string | undefined }): string {
  const q = (req.query as Record<string, string | undefined>)['namespace'];
  return q || body.Namespace || 'default';
}

/** Sorted as Nomad sorts: where the text occurs, then the shorter name, then by name. */
function byScore(a: Scored, b: Scored): number {
  return a.at - b.at || a.id.length - b.id.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Adds a match of `name` against `text` (lower case) to `into`. */
function consider(into: Scored[], name: string | undefined, text: string, scope?: string[]): void {
  if (!name) return;
  const at = name.toLowerCase().indexOf(text);
  if (at >= 0) into.push({ id: name, at, ...(scope ? { scope } : {}) });
}

/** A job's matches by context: the job's name, its groups, tasks, services, commands and images (Nomad's fuzzyMatchesJob). */
function jobMatches(j: Job, text: string, out: Map<string, Scored[]>): void {
  const into = (ctx: string): Scored[] => out.get(ctx) ?? (out.set(ctx, []).get(ctx) as Scored[]);
  const ns = j.namespace;
  consider(into('jobs'), j.name ?? j.id, text, [ns, j.id]);
  for (const g of j.groups) {
    consider(into('groups'), g.name, text, [ns, j.id]);
    for (const s of g.services ?? []) consider(into('services'), s.name, text, [ns, j.id, g.name]);
    for (const t of g.tasks) {
      consider(into('tasks'), t.name, text, [ns, j.id, g.name]);
      for (const s of t.services ?? []) consider(into('services'), s.name, text, [ns, j.id, g.name, t.name]);
      const param = t.driver === 'docker' ? ['images', 'image'] : t.driver === 'exec' || t.driver === 'raw_exec' ? ['commands', 'command'] : undefined;
      const value = param ? t.config[param[1] as string] : undefined;
      if (param && typeof value === 'string') consider(into(param[0] as string), value, text, [ns, j.id, g.name, t.name]);
    }
  }
}

/** Nomad's fuzzy search over a snapshot. Pure. */
export function fuzzySearch(snap: StateReader, text: string, contexts: readonly FuzzyContext[], namespace: string): Pick<FuzzySearchResponse, 'Matches' | 'Truncations'> {
  const lower = text.toLowerCase();
  const inNs = inNamespace(namespace);
  const found = new Map<string, Scored[]>();
  const list = (ctx: string): Scored[] => found.get(ctx) ?? (found.set(ctx, []).get(ctx) as Scored[]);
  const truncations: Record<string, boolean> = {};
  for (const ctx of contexts) {
    truncations[ctx] = false;
    if (ctx === 'jobs') for (const j of snap.list('jobs').filter(inNs)) jobMatches(j, lower, found);
    else if (ctx === 'nodes') for (const n of snap.list('nodes')) consider(list(ctx), n.name, lower, [n.id]);
    else if (ctx === 'allocs') for (const a of snap.list('allocations').filter(inNs)) consider(list(ctx), a.name, lower, [a.namespace, a.id]);
    else if (ctx === 'plugins') for (const p of snap.list('plugins')) consider(list(ctx), p.id, lower);
    else if (ctx === 'volumes') for (const v of snap.list('volumes').filter(inNs)) consider(list(ctx), v.id, lower, [v.namespace]);
    else for (const n of namespacesIn(snap)) if (namespace === '*' || n.name === namespace) consider(list(ctx), n.name, lower);
  }
  const matches: Record<string, FuzzyMatch[]> = {};
  for (const [ctx, all] of found) {
    if (all.length === 0) continue;
    all.sort(byScore);
    if (all.length > SEARCH_LIMIT) truncations[ctx] = true;
    matches[ctx] = all.slice(0, SEARCH_LIMIT).map((m) => ({ ID: m.id, ...(m.scope ? { Scope: m.scope } : {}) }));
  }
  return { Matches: matches, Truncations: truncations };
}

/** Nomad's prefix search over a snapshot: IDs (a namespace's name) starting with `prefix`, sorted. Pure. */
export function prefixSearch(snap: StateReader, prefix: string, contexts: readonly PrefixContext[], namespace: string): Pick<SearchResponse, 'Matches' | 'Truncations'> {
  const inNs = inNamespace(namespace);
  const ids = (ctx: PrefixContext): string[] => {
    switch (ctx) {
      case 'jobs':
        return snap.list('jobs').filter(inNs).map((j) => j.id);
      case 'nodes':
        return snap.list('nodes').map((n) => n.id);
      case 'allocs':
        return snap.list('allocations').filter(inNs).map((a) => a.id);
      case 'evals':
        return snap.list('evaluations').filter(inNs).map((e) => e.id);
      case 'deployment':
        return snap.list('deployments').filter(inNs).map((d) => d.id);
      case 'plugins':
        return snap.list('plugins').map((p) => p.id);
      case 'volumes':
        return snap.list('volumes').filter(inNs).map((v) => v.id);
      case 'namespaces':
        return namespacesIn(snap).filter((n) => namespace === '*' || n.name === namespace).map((n) => n.name);
    }
  };
  const matches: Record<string, string[]> = {};
  const truncations: Record<string, boolean> = {};
  for (const ctx of contexts) {
    const all = [...new Set(ids(ctx).filter((id) => id.startsWith(prefix)))].sort();
    matches[ctx] = all.slice(0, SEARCH_LIMIT);
    truncations[ctx] = all.length > SEARCH_LIMIT;
  }
  return { Matches: matches, Truncations: truncations };
}

/** A request body read with its schema; ApiError INVALID naming the field. */
function bodyOf<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } } }, raw: unknown): T {
  const parsed = schema.safeParse(objectBody(raw));
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.map(String).join('.') ?? '';
  throw new ApiError('INVALID', `${field ? `${field}: ` : ''}${issue?.message ?? 'invalid'}`, { field });
}

export function registerSearchRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const prefix = async (req: FastifyRequest, reply: FastifyReply): Promise<SearchResponse> => {
    const body = bodyOf(SearchRequest, req.body);
    const contexts = contextsOf(body.Context, PREFIX_CONTEXTS);
    const namespace = namespaceOf(req, body);
    let index = 0;
    const found = await nomadRead(ctx, req, reply, TABLES, (snap) => {
      index = Math.max(1, ...TABLES.map((t) => snap.tableIndex(t)));
      return prefixSearch(snap, body.Prefix ?? '', contexts, namespace);
    });
    return { ...found, ...queryMeta(index) };
  };
  const fuzzy = async (req: FastifyRequest, reply: FastifyReply): Promise<FuzzySearchResponse> => {
    const body = bodyOf(FuzzySearchRequest, req.body);
    const text = body.Text ?? '';
    if (text.length < MIN_TERM_LENGTH) throw new ApiError('INVALID', `fuzzy search query must be at least ${MIN_TERM_LENGTH} characters, got ${text.length}`, { field: 'Text' });
    const contexts = contextsOf(body.Context, FUZZY_CONTEXTS);
    const namespace = namespaceOf(req, body);
    let index = 0;
    const found = await nomadRead(ctx, req, reply, TABLES, (snap) => {
      index = Math.max(1, ...TABLES.map((t) => snap.tableIndex(t)));
      return fuzzySearch(snap, text, contexts, namespace);
    });
    return { ...found, ...queryMeta(index) };
  };
  for (const method of ['put', 'post'] as const) {
    app[method]('/v1/search', { config: { access: 'read' } }, prefix);
    app[method]('/v1/search/fuzzy', { config: { access: 'read' } }, fuzzy);
  }
}
