// What placement looked at for one allocation, as Nomad's `api.AllocationMetric`
// (api/allocations.go; the server's structs.AllocMetric encodes the same
// fields). One shape for the three places Nomad answers it: an allocation's
// `Metrics`, an evaluation's `FailedTGAllocs` and a job plan's
// `FailedTGAllocs`. Go encodes a nil map or slice as null, so each is nullable.
//
// Berth fills `ConstraintFiltered` as Nomad does, with each constraint's text
// (`${meta.rack} = r9`) and with its own filter reasons, each worded to read
// after "N nodes" (`lacked a healthy node plugin for hostpath`, `were down`):
// Nomad's own reasons ("missing drivers") sit in the same map (the CLI's
// placement-failures.ts tells the two apart to word them).

import { z } from 'zod';
import { Resources } from './resources.js';
import { int, list, map, nanos } from './_go.js';
import { lazySchema } from './lazy-schema.js';

/** A node's scores in the top of one placement (Nomad's NodeScoreMeta). */
export const NodeScoreMeta = lazySchema(() => z.strictObject({
  NodeID: z.string(),
  /** Scorer name ("binpack", "job-anti-affinity", ...) -> score. */
  Scores: map(z.number()),
  NormScore: z.number(),
}));
export type NodeScoreMeta = z.infer<typeof NodeScoreMeta>;

const counts = lazySchema(() => map(int));

export const AllocationMetric = lazySchema(() => z.strictObject({
  /** Nodes looked at (Berth: every node of the cluster). */
  NodesEvaluated: int,
  NodesFiltered: int,
  NodesInPool: int,
  /** Berth has one node pool, "default". */
  NodePool: z.string(),
  /** Datacenter -> nodes in it that were ready and in the job's datacenters. */
  NodesAvailable: counts,
  ClassFiltered: counts,
  /** Constraint text (or filter reason) -> nodes it filtered. */
  ConstraintFiltered: counts,
  NodesExhausted: int,
  ClassExhausted: counts,
  /** Dimension ("cpu", "memory", "network: port collision ...") -> nodes out of it. */
  DimensionExhausted: counts,
  QuotaExhausted: list(z.string()),
  /** Task -> the resources it asked that no node had; Berth sends null. */
  ResourcesExhausted: map(Resources),
  /** Deprecated in Nomad for ScoreMetaData. */
  Scores: map(z.number()),
  /** Nanoseconds placement took. */
  AllocationTime: nanos,
  /** Further allocations of the group that failed alike (a failed group's unplaced count - 1). */
  CoalescedFailures: int,
  /** The best-scored nodes, best first. */
  ScoreMetaData: list(NodeScoreMeta),
}));
export type AllocationMetric = z.infer<typeof AllocationMetric>;
