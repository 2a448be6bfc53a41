// Berth's evaluations in Nomad's shape (src/api Evaluation). Berth keeps
// less on an evaluation than Nomad: the links Nomad stores both ways
// (`NextEval`) and the deployment an evaluation worked under are found in
// the snapshot, through an EvalLinks built once per answer.

import { GO_ZERO_TIME, type Evaluation, type EvaluationStub } from '../../api/index.js';
import type { Evaluation as BerthEvaluation } from '../../structs/index.js';
import { rowKey, type StateReader } from '../state/index.js';
import { failedPlacementOut } from './alloc-metric-shapes.js';

/** Milliseconds as nanoseconds: a duration (Nomad's time.Duration), or a time since the epoch as Unix nanoseconds (CreateTime). */
export function nanos(ms: number): number {
  return ms * 1_000_000;
}

/** Milliseconds since the epoch as a Go time.Time in JSON; 0 is Go's zero time. */
export function goTime(ms: number): string {
  return ms > 0 ? new Date(ms).toISOString() : GO_ZERO_TIME;
}

/**
 * What an evaluation's Nomad shape needs beyond its row, read from one
 * snapshot: the evaluation that follows each one up (its `NextEval`) and
 * the deployments of each job (its `DeploymentID`). Built lazily: a read of
 * one evaluation lists the evaluations once, a list reads them once for all.
 */
export class EvalLinks {
  readonly #snap: StateReader;
  #next: Map<string, string> | undefined;
  #deployments: Map<string, Array<{ id: string; createIndex: number }>> | undefined;

  constructor(snap: StateReader) {
    this.#snap = snap;
  }

  /** The evaluation created as `id`'s follow-up (it names `id` as its previous), or "". */
  nextOf(id: string): string {
    if (!this.#next) {
      this.#next = new Map();
      for (const e of this.#snap.list('evaluations')) if (e.previousEval) this.#next.set(e.previousEval, e.id);
    }
    return this.#next.get(id) ?? '';
  }

  /**
   * The deployment the scheduler saw when it ran `e`, as Nomad records it:
   * the job's latest deployment written no later than the evaluation; "".
   */
  deploymentOf(e: BerthEvaluation): string {
    if (!this.#deployments) {
      this.#deployments = new Map();
      for (const d of this.#snap.list('deployments')) {
        const key = `${d.namespace}\u0000${d.jobId}`;
        const list = this.#deployments.get(key) ?? [];
        list.push({ id: d.id, createIndex: d.createIndex });
        this.#deployments.set(key, list);
      }
      for (const list of this.#deployments.values()) list.sort((a, b) => b.createIndex - a.createIndex);
    }
    return this.#deployments.get(`${e.namespace}\u0000${e.jobId}`)?.find((d) => d.createIndex <= e.modifyIndex)?.id ?? '';
  }

  /**
   * The evaluations linked to `e` by previous, next and blocked links, near
   * or far (Nomad's `?related=true`), `e` left out, oldest first.
   */
  related(e: BerthEvaluation): BerthEvaluation[] {
    const seen = new Map<string, BerthEvaluation>([[e.id, e]]);
    const queue = [e];
    for (let cur = queue.shift(); cur; cur = queue.shift()) {
      for (const id of [cur.previousEval, this.nextOf(cur.id)]) {
        if (!id || seen.has(id)) continue;
        const linked = this.#snap.get('evaluations', rowKey(id));
        if (!linked) continue;
        seen.set(id, linked);
        queue.push(linked);
      }
    }
    seen.delete(e.id);
    return [...seen.values()].sort((a, b) => a.createIndex - b.createIndex);
  }
}

/** An evaluation in Nomad's shape; `related` fills RelatedEvals (null otherwise). Pure but for `links`' reads. */
export function evaluationOut(e: BerthEvaluation, links: EvalLinks, related?: readonly BerthEvaluation[]): Evaluation {
  const failed = Object.entries(e.failedPlacements ?? {});
  return {
    ID: e.id,
    Priority: e.priority,
    Type: e.type,
    TriggeredBy: e.triggeredBy,
    Namespace: e.namespace,
    JobID: e.jobId,
    // Berth does not record the job's or the node's index at the time.
    JobModifyIndex: 0,
    NodeID: e.nodeId ?? '',
    NodeModifyIndex: 0,
    DeploymentID: links.deploymentOf(e),
    Status: e.status,
    StatusDescription: e.statusDescription,
    Wait: 0,
    WaitUntil: goTime(e.waitUntil),
    NextEval: links.nextOf(e.id),
    PreviousEval: e.previousEval ?? '',
    // Berth blocks the evaluation itself rather than making a second, blocked one.
    BlockedEval: '',
    RelatedEvals: related ? related.map((r) => evaluationStubOut(r, links)) : null,
    FailedTGAllocs: failed.length ? Object.fromEntries(failed.map(([group, f]) => [group, failedPlacementOut(f)])) : null,
    PlanAnnotations: null,
    ClassEligibility: null,
    EscapedComputedClass: false,
    QuotaLimitReached: '',
    MissingNonNodeResources: null,
    AnnotatePlan: false,
    QueuedAllocations: Object.fromEntries(failed.map(([group, f]) => [group, f.unplaced])),
    // Berth does not record the snapshot the scheduler read.
    SnapshotIndex: 0,
    CreateIndex: e.createIndex,
    ModifyIndex: e.modifyIndex,
    CreateTime: nanos(e.createTime),
    ModifyTime: nanos(e.modifyTime),
    BerthPlaced: e.placed,
    BerthStopped: e.stopped,
    BerthUpdatedInPlace: e.updatedInPlace ?? 0,
  };
}

/** An evaluation in brief (Nomad's EvaluationStub). */
export function evaluationStubOut(e: BerthEvaluation, links: EvalLinks): EvaluationStub {
  return {
    ID: e.id,
    Priority: e.priority,
    Type: e.type,
    TriggeredBy: e.triggeredBy,
    Namespace: e.namespace,
    JobID: e.jobId,
    NodeID: e.nodeId ?? '',
    DeploymentID: links.deploymentOf(e),
    Status: e.status,
    StatusDescription: e.statusDescription,
    WaitUntil: goTime(e.waitUntil),
    NextEval: links.nextOf(e.id),
    PreviousEval: e.previousEval ?? '',
    BlockedEval: '',
    CreateIndex: e.createIndex,
    ModifyIndex: e.modifyIndex,
    CreateTime: nanos(e.createTime),
    ModifyTime: nanos(e.modifyTime),
  };
}
