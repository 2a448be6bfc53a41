// Node affinity scoring as Nomad's NodeAffinityIterator does it (scheduler/rank.go):
// the weights of the affinities a node matches, summed and divided by the sum
// of every affinity's absolute weight, so a node matching all positive
// affinities scores 1 and one matching all negative ones scores -1.

import type { Affinity, Node } from '../../structs/index.js';
import { compileRule } from './constraints.js';

/** Scores nodes against a fixed list of affinities. Pure once built. */
export class AffinityScorer {
  readonly #rules: Array<{ weight: number; check: (node: Node) => boolean }>;
  readonly #total: number;

  constructor(affinities: readonly Affinity[]) {
    this.#rules = affinities.map((a) => ({ weight: a.weight, check: compileRule(a) }));
    this.#total = affinities.reduce((n, a) => n + Math.abs(a.weight), 0);
  }

  get empty(): boolean {
    return this.#rules.length === 0;
  }

  /** In [-1, 1]; 0 when no affinity matches (or there are none). */
  score(node: Node): number {
    if (this.#total === 0) return 0;
    let sum = 0;
    for (const r of this.#rules) if (r.check(node)) sum += r.weight;
    return sum / this.#total;
  }
}
