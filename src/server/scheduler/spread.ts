// Spread scoring as Nomad's SpreadIterator does it (scheduler/spread.go). With
// targets, a node whose attribute value is below its desired share (percent
// of the group's count) scores up to its spread's weight share, one above it
// scores negative; a value no target names takes the share left over (the
// implicit "*" target) or the full penalty -1 when nothing is left. Without
// targets, allocations spread evenly: a value with fewer allocations than the
// others scores up, the most used ones score down.

import type { Node, Spread } from '../../structs/index.js';
import { resolveTarget, type PlacementCounts } from './constraints.js';

const IMPLICIT = '*';

interface SpreadInfo {
  spread: Spread;
  /** Value -> desired allocations; empty for an even spread. */
  desired: Map<string, number>;
}

/** Scores nodes for one task group's spreads; `begin` reads the counts before each placement. */
export class SpreadScorer {
  readonly #infos: SpreadInfo[];
  readonly #sumWeights: number;
  readonly #group: string;
  #used: Array<ReadonlyMap<string, number>> = [];
  /** Per spread: node ID -> its value of the attribute (looked up once per node). */
  readonly #values: Array<Map<string, string | undefined>>;
  /** Per spread: the least and most allocations any value has now (0 when none). */
  #range: Array<{ min: number; max: number }> = [];

  constructor(spreads: readonly Spread[], group: string, count: number) {
    this.#group = group;
    this.#sumWeights = spreads.reduce((n, s) => n + s.weight, 0);
    this.#infos = spreads.map((spread) => {
      const desired = new Map<string, number>();
      let sum = 0;
      for (const t of spread.targets) {
        const n = (t.percent / 100) * count;
        desired.set(t.value, n);
        sum += n;
      }
      if (spread.targets.length > 0 && sum < count) desired.set(IMPLICIT, count - sum);
      return { spread, desired };
    });
    this.#values = spreads.map(() => new Map());
  }

  get empty(): boolean {
    return this.#infos.length === 0;
  }

  /** Reads how the group's allocations are spread now; call before scoring the nodes for one placement. */
  begin(counts: PlacementCounts): void {
    this.#used = this.#infos.map((i) => counts.byValue(i.spread.attribute, 'group', this.#group));
    this.#range = this.#used.map((used) => {
      let min = 0;
      let max = 0;
      for (const n of used.values()) {
        if (min === 0 || n < min) min = n;
        if (max === 0 || n > max) max = n;
      }
      return { min, max };
    });
  }

  /** The node's spread score for the next placement; 0 means "no opinion". */
  score(node: Node): number {
    let total = 0;
    for (let i = 0; i < this.#infos.length; i++) {
      const info = this.#infos[i] as SpreadInfo;
      const used = this.#used[i] as ReadonlyMap<string, number>;
      const cache = this.#values[i] as Map<string, string | undefined>;
      let value = cache.get(node.id);
      if (value === undefined && !cache.has(node.id)) cache.set(node.id, (value = resolveTarget(info.spread.attribute, node)));
      if (info.desired.size === 0) {
        total += evenSpreadBoost(used, this.#range[i] as { min: number; max: number }, value);
        continue;
      }
      // This placement counts as used.
      const usedCount = (value === undefined ? 0 : (used.get(value) ?? 0)) + 1;
      const desired = (value === undefined ? undefined : info.desired.get(value)) ?? info.desired.get(IMPLICIT);
      if (desired === undefined || desired === 0) {
        total -= 1;
        continue;
      }
      total += ((desired - usedCount) / desired) * (info.spread.weight / this.#sumWeights);
    }
    return total;
  }
}

/** Nomad's evenSpreadScoreBoost: favour the least used values, penalise when already even. */
function evenSpreadBoost(used: ReadonlyMap<string, number>, { min, max }: { min: number; max: number }, value: string | undefined): number {
  if (used.size === 0) return 0;
  if (value === undefined) return -1;
  const current = used.get(value) ?? 0;
  if (current !== min) return min === 0 ? -1 : (min - current) / min;
  if (min === max) return -1;
  return (max - min) / min;
}
