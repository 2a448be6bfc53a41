// The chaos kit's report: what a run saw, and its figures as text. Private
// to test/chaos (see _harness.ts).

import type { ClusterKind } from './_cluster.js';

export interface Violation {
  cycle: number | 'setup' | 'final';
  cluster: ClusterKind;
  what: string;
}

export interface ChaosReport {
  seed: number;
  cycles: number;
  cyclesRun: number;
  cleanCycles: number;
  durationMs: number;
  /** SIGKILLed agent (dev) or client restarted in steady state -> back, its tasks kept, in ms. */
  adoptionMs: number[];
  wedged: number;
  twoWriters: number;
  linesChecked: number;
  violations: Violation[];
}

function p50(xs: number[]): number | undefined {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
}

/** The figures of issue 12 this run measures, and every violation, as text. */
export function formatReport(r: ChaosReport): string {
  const ms = (x: number | undefined): string => (x === undefined ? 'n/a' : x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${Math.round(x)} ms`);
  const rows = [
    ['measure', 'this run', 'goal'],
    ['cycles without a leak (claim, mount, process, container, veth, iptables rule, netns, lease) or lost line', `${r.cleanCycles} of ${r.cyclesRun}${r.cyclesRun < r.cycles ? ` (${r.cycles} planned)` : ''}`, `${r.cycles} of ${r.cycles}`],
    ['a SIGKILLed agent back with its tasks adopted, p50', `${ms(p50(r.adoptionMs))} (n=${r.adoptionMs.length}, max ${ms(r.adoptionMs.length ? Math.max(...r.adoptionMs) : undefined)})`, '< 1 s'],
    ['a wedged job (no convergence after a resubmit)', String(r.wedged), 'none'],
    ['two live writers seen in the writer file', String(r.twoWriters), '0'],
  ];
  const w = [0, 1, 2].map((i) => Math.max(...rows.map((row) => (row[i] as string).length)));
  const table = rows.map((row, i) => `| ${row.map((c, j) => c.padEnd(w[j] as number)).join(' | ')} |${i === 0 ? `\n|${w.map((n) => '-'.repeat(n + 2)).join('|')}|` : ''}`).join('\n');
  const lines = [
    `chaos: seed ${r.seed}, ${r.cyclesRun} of ${r.cycles} cycles in ${(r.durationMs / 1000).toFixed(0)} s, ${r.linesChecked} writer lines checked`,
    table,
    r.violations.length ? `${r.violations.length} violation(s):` : 'no violations',
    ...r.violations.map((v) => `  [${v.cluster} cycle ${v.cycle}] ${v.what}`),
    `replay: CHAOS_SEED=${r.seed} CHAOS_CYCLES=${r.cycles} npm run chaos`,
  ];
  return lines.join('\n');
}
