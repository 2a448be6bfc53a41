// An evaluation: one run of the scheduler for a job, with why it ran and what
// came of it. Placement failures are kept per task group with per-reason node
// counts, as Nomad does ("2 nodes lacked a healthy node plugin for hostpath").

import type { AllocMetric } from './placement-rules.js';

export type EvalTrigger =
  | 'job-register'
  | 'job-deregister'
  | 'node-update'
  | 'alloc-failure'
  | 'alloc-stop'
  | 'reschedule'
  | 'blocked-retry'
  | 'periodic-job'
  | 'job-dispatch'
  | 'deployment-watcher'
  | 'node-drain';

export type EvalStatus = 'pending' | 'complete' | 'failed' | 'blocked' | 'canceled';

/** Why allocations of one task group could not all be placed. */
export interface PlacementFailure {
  /** Allocations that could not be placed. */
  unplaced: number;
  nodesEvaluated: number;
  /** Nodes filtered out by a feasibility check. */
  nodesFiltered: number;
  /** Nodes that were feasible but out of a resource. */
  nodesExhausted: number;
  /** Reason -> how many nodes it ruled out, e.g. { 'lacked a healthy node plugin for hostpath': 2 }. */
  reasons: Record<string, number>;
  /** Nomad's AllocMetric of the first placement that failed (per-constraint counts, exhausted dimensions). */
  metrics?: AllocMetric;
}

export interface Evaluation {
  id: string;
  namespace: string;
  jobId: string;
  type: 'service' | 'batch' | 'system';
  priority: number;
  triggeredBy: EvalTrigger;
  status: EvalStatus;
  statusDescription: string;
  /** When blocked: a summary of why placement failed. */
  blockedReason: string;
  /** Task group -> why placements failed. Empty when everything was placed. */
  failedPlacements: Record<string, PlacementFailure>;
  /** Allocations placed / stopped by this evaluation. */
  placed: number;
  stopped: number;
  /** Allocations whose tasks' resources were updated in place (same allocation, no restart). Absent on older evaluations. */
  updatedInPlace?: number;
  /** The node whose change triggered it, for node-update. */
  nodeId?: string;
  /** Milliseconds since the epoch before which it must not run (delayed reschedules). 0 = now. */
  waitUntil: number;
  /** The evaluation that created this one (a follow-up or a blocked retry). */
  previousEval?: string;
  createIndex: number;
  modifyIndex: number;
  createTime: number;
  modifyTime: number;
}

/** "2 nodes lacked a healthy node plugin for hostpath; 1 node was down". */
export function describePlacementFailure(f: PlacementFailure): string {
  const parts = Object.entries(f.reasons)
    .sort((a, b) => b[1] - a[1])
    .map(([reason, n]) => (reason.startsWith('Constraint "') ? `${reason} filtered ${n} node${n === 1 ? '' : 's'}` : `${n} node${n === 1 ? '' : 's'} ${n === 1 ? reason.replace(/^were /, 'was ') : reason}`));
  if (f.nodesEvaluated === 0) parts.unshift('no nodes were eligible');
  return parts.join('; ');
}
