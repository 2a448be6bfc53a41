// Nomad's AllocMetric for one placement: how many nodes were looked at, which
// checks filtered or exhausted them, and the best-scored nodes with each
// score (binpack, job-anti-affinity, node-affinity, allocation-spread) and
// their normalized total, which is the mean of the scores that apply (Nomad's
// ScoreNormalizationIterator). `alloc status --verbose` prints it.

import type { AllocMetric, Node } from '../../structs/index.js';

/** How many scored nodes a metric keeps, as Nomad keeps its top five. */
export const TOP_SCORES = 5;

/** The components of one node's score; undefined components do not apply to it. */
export interface NodeScores {
  binpack: number;
  jobAntiAffinity?: number;
  nodeAffinity?: number;
  spread?: number;
}

/** Mean of the scores that apply. Pure. */
export function normalizedScore(s: NodeScores): number {
  let sum = s.binpack;
  let n = 1;
  for (const v of [s.jobAntiAffinity, s.nodeAffinity, s.spread]) {
    if (v === undefined) continue;
    sum += v;
    n++;
  }
  return sum / n;
}

function scoreRecord(s: NodeScores): Record<string, number> {
  const out: Record<string, number> = { binpack: s.binpack };
  if (s.jobAntiAffinity !== undefined) out['job-anti-affinity'] = s.jobAntiAffinity;
  if (s.nodeAffinity !== undefined) out['node-affinity'] = s.nodeAffinity;
  if (s.spread !== undefined) out['allocation-spread'] = s.spread;
  return out;
}

/** Collects one placement's metric. Not thread-shared; one per placement. */
export class MetricRecorder {
  readonly metric: AllocMetric;
  readonly #top: Array<{ nodeId: string; scores: NodeScores; norm: number }> = [];

  /** `base` carries what every placement of a group shares (the static filtering). */
  constructor(base: AllocMetric) {
    this.metric = {
      ...base,
      nodesAvailable: { ...base.nodesAvailable },
      classFiltered: { ...base.classFiltered },
      constraintFiltered: { ...base.constraintFiltered },
      dimensionExhausted: { ...base.dimensionExhausted },
      scoreMetaData: [],
    };
  }

  filtered(node: Node, constraint?: string): void {
    const m = this.metric;
    m.nodesFiltered++;
    if (constraint !== undefined) {
      m.constraintFiltered[constraint] = (m.constraintFiltered[constraint] ?? 0) + 1;
      const cls = node.nodeClass ?? '';
      if (cls) m.classFiltered[cls] = (m.classFiltered[cls] ?? 0) + 1;
    }
  }

  exhausted(dimension: string): void {
    this.metric.nodesExhausted++;
    this.metric.dimensionExhausted[dimension] = (this.metric.dimensionExhausted[dimension] ?? 0) + 1;
  }

  /** Whether a node with this normalized score would enter the top scores (so its scores are worth building). */
  wouldKeep(norm: number): boolean {
    const top = this.#top;
    return top.length < TOP_SCORES || norm > (top[top.length - 1] as { norm: number }).norm;
  }

  scored(nodeId: string, scores: NodeScores, norm: number): void {
    const top = this.#top;
    if (!this.wouldKeep(norm)) return;
    let i = top.length;
    while (i > 0 && (top[i - 1] as { norm: number }).norm < norm) i--;
    top.splice(i, 0, { nodeId, scores: { ...scores }, norm });
    if (top.length > TOP_SCORES) top.pop();
  }

  /** The finished metric. */
  done(): AllocMetric {
    this.metric.scoreMetaData = this.#top.map((t) => ({ nodeId: t.nodeId, scores: scoreRecord(t.scores), normScore: t.norm }));
    return this.metric;
  }
}

/** An empty metric for `nodesEvaluated` nodes. */
export function emptyMetric(nodesEvaluated: number): AllocMetric {
  return {
    nodesEvaluated,
    nodesFiltered: 0,
    nodesAvailable: {},
    classFiltered: {},
    constraintFiltered: {},
    nodesExhausted: 0,
    dimensionExhausted: {},
    scoreMetaData: [],
  };
}
