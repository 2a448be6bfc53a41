// An evaluation's placement failures in words, from Nomad's AllocationMetric
// (as Nomad's formatAllocMetrics lays them out): one line per reason nodes
// were ruled out. Berth's own filter reasons read after the node count
// ("2 nodes lacked a healthy node plugin for hostpath"); constraints,
// classes and dimensions in Nomad's words. Pure.

import type { AllocationMetric, Evaluation } from '../api/index.js';

/**
 * Whether a `ConstraintFiltered` key is one of Berth's filter reasons (worded
 * to follow "N nodes": "were down", "lacked the driver \"docker\"") rather
 * than a constraint's text. Here, not in src/api, so that a CLI command loads
 * no schema code. Pure.
 */
export function isPlacementReason(key: string): boolean {
  return /^(were|was|lacked|had|could|did|found|reached|exhausted) /.test(key);
}

const nodes = (n: number): string => `${n} node${n === 1 ? '' : 's'}`;

/** Most nodes first, then by name. */
function byCount(counts: Record<string, number> | null): Array<[string, number]> {
  return Object.entries(counts ?? {}).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** A reason of Berth's after its node count: "1 node was down", "2 nodes were down". */
function reasonLine(reason: string, n: number): string {
  return `${nodes(n)} ${n === 1 ? reason.replace(/^were /, 'was ') : reason}`;
}

/** Why placement failed on each node it ruled out, one line each (no bullet). */
export function metricLines(m: AllocationMetric): string[] {
  const out: string[] = [];
  if (m.NodesEvaluated === 0) out.push('No nodes were eligible for evaluation');
  for (const [dc, n] of byCount(m.NodesAvailable)) if (n === 0) out.push(`No nodes are available in datacenter "${dc}"`);
  for (const [cls, n] of byCount(m.ClassFiltered)) out.push(`Class "${cls}": ${nodes(n)} excluded by filter`);
  for (const [c, n] of byCount(m.ConstraintFiltered)) out.push(isPlacementReason(c) ? reasonLine(c, n) : `Constraint "${c}": ${nodes(n)} excluded by filter`);
  if (m.NodesExhausted > 0) out.push(`Resources exhausted on ${nodes(m.NodesExhausted)}`);
  for (const [cls, n] of byCount(m.ClassExhausted)) out.push(`Class "${cls}" exhausted on ${nodes(n)}`);
  for (const [dim, n] of byCount(m.DimensionExhausted)) out.push(isPlacementReason(dim) ? reasonLine(dim, n) : `Dimension "${dim}" exhausted on ${nodes(n)}`);
  for (const q of m.QuotaExhausted ?? []) out.push(`Quota limit hit "${q}"`);
  return out;
}

/** How many allocations of the group failed to place: the metric's one and those coalesced with it. */
export function unplaced(m: AllocationMetric): number {
  return m.CoalescedFailures + 1;
}

/** The evaluation's failed groups, by name. */
export function failedGroups(e: Pick<Evaluation, 'FailedTGAllocs'>): Array<[string, AllocationMetric]> {
  return Object.entries(e.FailedTGAllocs ?? {}).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/**
 * `Task Group "web" (failed to place 2 allocations):` and a `  * ` line per
 * reason, for each failed group (or only `group`); `heading` words the
 * group line ("Task Group" in Nomad's status commands, "Task group" in the
 * run monitor).
 */
export function failedPlacementLines(e: Pick<Evaluation, 'FailedTGAllocs'>, opts: { heading?: string; group?: string; indent?: string } = {}): string[] {
  const indent = opts.indent ?? '';
  const out: string[] = [];
  for (const [group, m] of failedGroups(e)) {
    if (opts.group !== undefined && group !== opts.group) continue;
    const n = unplaced(m);
    out.push(`${indent}${opts.heading ?? 'Task Group'} ${JSON.stringify(group)} (failed to place ${n} allocation${n === 1 ? '' : 's'}):`);
    for (const line of metricLines(m)) out.push(`${indent}  * ${line}`);
  }
  return out;
}

/** One line for an error message: `group "web": 1 allocation not placed: 1 node was down; ...`; "" without failures. */
export function placementSummary(e: Pick<Evaluation, 'FailedTGAllocs'>, only?: string): string {
  return failedGroups(e)
    .filter(([group]) => only === undefined || group === only)
    .map(([group, m]) => {
      const n = unplaced(m);
      return `group "${group}": ${n} allocation${n === 1 ? '' : 's'} not placed: ${metricLines(m).join('; ') || 'no node fits'}`;
    })
    .join('; ');
}
