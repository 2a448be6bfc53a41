// Nomad's search API (api/search.go, api/contexts): PUT/POST /v1/search
// (IDs by prefix) and /v1/search/fuzzy (names containing the text), per
// context: jobs, nodes, allocs, plugins, volumes, namespaces, evals,
// deployment; a job also yields matches of its groups, tasks, services,
// commands and images, each with the Scope of its parents.

import { z } from 'zod';
import { map, uint, nanos } from './_go.js';
import { lazySchema } from './lazy-schema.js';

/** Nomad's contexts.Context: what a search looks through; "all" for every one. */
export const SearchContext = lazySchema(() => z.enum(['all', 'jobs', 'nodes', 'allocs', 'evals', 'deployment', 'plugins', 'volumes', 'namespaces', 'groups', 'services', 'tasks', 'images', 'commands', 'classes', 'scaling_policy', 'quotas', 'recommendations']));
export type SearchContext = z.infer<typeof SearchContext>;

const queryMeta = () => ({ Index: uint, LastContact: nanos, KnownLeader: z.boolean(), NextToken: z.string() });
/** The QueryOptions a search body may carry (the query's parameters win). */
const queryOptions = () => ({ Region: z.string().optional(), Namespace: z.string().optional(), AuthToken: z.string().optional() });

/** PUT /v1/search: IDs that start with Prefix. */
export const SearchRequest = lazySchema(() => z.object({ Prefix: z.string().optional(), Context: z.string().optional(), ...queryOptions() }));
export type SearchRequest = z.infer<typeof SearchRequest>;

export const SearchResponse = lazySchema(() => z.strictObject({
  /** Context -> the IDs (names for namespaces) that start with the prefix, sorted, at most 20. */
  Matches: map(z.array(z.string())),
  /** Context -> whether more matched than were listed. */
  Truncations: map(z.boolean()),
  ...queryMeta(),
}));
export type SearchResponse = z.infer<typeof SearchResponse>;

/** PUT /v1/search/fuzzy: names that contain Text (case-insensitive). */
export const FuzzySearchRequest = lazySchema(() => z.object({ Text: z.string().optional(), Context: z.string().optional(), ...queryOptions() }));
export type FuzzySearchRequest = z.infer<typeof FuzzySearchRequest>;

/**
 * One match: the object's name (a node's, an allocation's, a job's...) or ID,
 * and the IDs of its parents from the namespace down (a task's Scope is
 * [namespace, job, group]; a node's is [node ID]; an allocation's
 * [namespace, alloc ID]; a volume's [namespace]).
 */
export const FuzzyMatch = lazySchema(() => z.strictObject({ ID: z.string(), Scope: z.array(z.string()).optional() }));
export type FuzzyMatch = z.infer<typeof FuzzyMatch>;

export const FuzzySearchResponse = lazySchema(() => z.strictObject({
  /** Context -> matches, best first (where the text occurs, then the shorter name). */
  Matches: map(z.array(FuzzyMatch)),
  Truncations: map(z.boolean()),
  ...queryMeta(),
}));
export type FuzzySearchResponse = z.infer<typeof FuzzySearchResponse>;
