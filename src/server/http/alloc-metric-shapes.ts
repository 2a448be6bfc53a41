// Berth's placement metrics in Nomad's AllocationMetric shape (src/api): an
// allocation's `Metrics`, and the `FailedTGAllocs` of an evaluation or a
// plan, made from the scheduler's PlacementFailure.

import type { AllocationMetric } from '../../api/index.js';
import type { AllocMetric, PlacementFailure } from '../../structs/index.js';

/** Berth's reason for a node failing a constraint: `Constraint "<text>"` (the scheduler's constraintReason). */
const CONSTRAINT_REASON = /^Constraint "(.*)"$/s;

/**
 * A dimension as Nomad names it: Berth records an exhausted one as
 * `exhausted cpu`, `exhausted network: reserved port collision http=8080`;
 * Nomad says `cpu`, `network: reserved port collision http=8080`. Berth's
 * CSI limits (`reached the volume limit of plugin X`) stay as worded.
 */
function dimensionOf(reason: string): string {
  return reason.startsWith('exhausted ') ? reason.slice('exhausted '.length) : reason;
}

function renamed(counts: Readonly<Record<string, number>>, name: (key: string) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(counts)) out[name(k)] = (out[name(k)] ?? 0) + n;
  return out;
}

/** What placement looked at for one allocation (or one failed placement), in Nomad's shape. Pure. */
export function allocMetricOut(m: AllocMetric, nodesInPool: number = m.nodesEvaluated): AllocationMetric {
  return {
    NodesEvaluated: m.nodesEvaluated,
    NodesFiltered: m.nodesFiltered,
    NodesInPool: nodesInPool,
    NodePool: 'default',
    NodesAvailable: { ...m.nodesAvailable },
    ClassFiltered: { ...m.classFiltered },
    ConstraintFiltered: { ...m.constraintFiltered },
    NodesExhausted: m.nodesExhausted,
    ClassExhausted: null,
    DimensionExhausted: renamed(m.dimensionExhausted, dimensionOf),
    QuotaExhausted: null,
    ResourcesExhausted: null,
    Scores: null,
    AllocationTime: 0,
    CoalescedFailures: 0,
    ScoreMetaData: m.scoreMetaData.map((s) => ({ NodeID: s.nodeId, Scores: { ...s.scores }, NormScore: s.normScore })),
  };
}

/**
 * Why a task group's allocations could not all be placed, in Nomad's shape:
 * the metric of the first placement that failed, `CoalescedFailures` the
 * others, and every reason a node was ruled out: a constraint by its text, a
 * filter reason in Berth's words (both in `ConstraintFiltered`, as Nomad
 * keeps its own "missing drivers" there), an exhausted resource by its
 * dimension. Pure.
 */
export function failedPlacementOut(f: PlacementFailure): AllocationMetric {
  const base = allocMetricOut(
    f.metrics ?? { nodesEvaluated: f.nodesEvaluated, nodesFiltered: 0, nodesAvailable: {}, classFiltered: {}, constraintFiltered: {}, nodesExhausted: 0, dimensionExhausted: {}, scoreMetaData: [] },
  );
  const exhaustion = new Set(Object.keys(f.metrics?.dimensionExhausted ?? {}));
  const constraints: Record<string, number> = {};
  const dimensions: Record<string, number> = {};
  for (const [reason, n] of Object.entries(f.reasons)) {
    const constraint = CONSTRAINT_REASON.exec(reason)?.[1];
    if (constraint !== undefined) constraints[constraint] = n;
    else if (exhaustion.has(reason) || (!f.metrics && /^(exhausted|reached the) /.test(reason))) dimensions[dimensionOf(reason)] = n;
    else constraints[reason] = n;
  }
  return {
    ...base,
    NodesEvaluated: f.nodesEvaluated,
    NodesFiltered: f.nodesFiltered,
    NodesInPool: f.nodesEvaluated,
    NodesExhausted: f.nodesExhausted,
    ConstraintFiltered: constraints,
    DimensionExhausted: dimensions,
    CoalescedFailures: Math.max(0, f.unplaced - 1),
  };
}
