// A job registration inside a write transaction: the new version, its
// groups' versions (what replaces allocations, what updates them in place),
// and the evaluation. Shared by `register` (a committed write that leaves the
// evaluation pending for the evaluation worker) and `plan` (a scratch
// transaction, evaluated at once and thrown away), so that a plan shows what
// a run does.

import { randomUUID } from 'node:crypto';
import {
  JobValidationError,
  jobModifyIndex,
  publicJob,
  specOfJob,
  type EvalTrigger,
  type Evaluation,
  type Job,
  type JobPlan,
  type JobSpec,
} from '../../structs/index.js';
import { recordJobVersion, sameSpec } from '../deployments/index.js';
import { groupChange } from '../scheduler/index.js';
import { rowKey, type ScratchTxn, type WriteTxn } from '../state/index.js';
import { evaluateJob } from './evaluate.js';
import { diffJobs } from './job-diff.js';
import { problemsAgainstState } from './validate-job.js';

/**
 * Puts a pending evaluation of `job` inside `txn`: the scheduler's work,
 * durable with the change that asked for it, done later by the evaluation
 * worker (JobService.evaluatePending), as Nomad's job register leaves it to
 * its eval broker.
 */
export function putPendingEvaluation(txn: WriteTxn, job: Pick<Job, 'namespace' | 'id' | 'type' | 'priority'>, trigger: EvalTrigger, now: number): Evaluation {
  return txn.put('evaluations', {
    id: randomUUID(),
    namespace: job.namespace,
    jobId: job.id,
    type: job.type,
    priority: job.priority,
    triggeredBy: trigger,
    status: 'pending',
    statusDescription: 'waiting for the scheduler',
    blockedReason: '',
    failedPlacements: {},
    placed: 0,
    stopped: 0,
    waitUntil: 0,
    createTime: now,
    modifyTime: now,
  });
}

/**
 * Registers (or updates) `spec` inside `txn` with its evaluation: evaluated
 * in the same transaction when `schedule` is `now` (a plan: placed as the run
 * will place it, see EvaluateOptions.plan), left pending for
 * the evaluation worker when `later` (a registration). Throws
 * JobValidationError when the spec names volumes or plugins the state
 * cannot serve; nothing is written then.
 */
export function registerIn(txn: WriteTxn, spec: JobSpec, now: number, schedule: 'now' | 'later'): { job: Job; evaluation: Evaluation } {
  const problems = problemsAgainstState(spec, txn);
  if (problems.length) throw new JobValidationError(problems);
  const prev = txn.get('jobs', rowKey(spec.namespace, spec.id));
  let version = 0;
  const groupVersions: Record<string, number> = {};
  const groupResourceVersions: Record<string, number> = {};
  if (prev) {
    const changed = !sameSpec(specOfJob(prev), spec);
    version = changed ? prev.version + 1 : prev.version;
    for (const g of spec.groups) {
      // What the group's tasks see decides (scheduler's groupChange, Nomad's tasksUpdated): a change of it
      // replaces the allocations, of resource values alone updates them in place where they fit, of
      // anything else (count, constraints, update...) updates them in place where their node still fits.
      const prevGroup = prev.groupVersions[g.name] ?? prev.version;
      const change = groupChange(prev, spec, g.name);
      groupVersions[g.name] = change === 'destructive' ? version : prevGroup;
      groupResourceVersions[g.name] = change === 'same' ? (prev.groupResourceVersions?.[g.name] ?? prevGroup) : version;
    }
  } else {
    for (const g of spec.groups) groupVersions[g.name] = groupResourceVersions[g.name] = 0;
  }
  const job = txn.put('jobs', {
    ...spec,
    stop: false,
    status: prev?.status ?? 'pending',
    version,
    groupVersions,
    groupResourceVersions,
    submitTime: now,
    submitIndex: txn.writeIndex,
    ...(prev ? { createIndex: prev.createIndex } : {}),
  });
  recordJobVersion(txn, job);
  if (schedule === 'later') return { job, evaluation: putPendingEvaluation(txn, job, 'job-register', now) };
  const outcome = evaluateJob(txn, spec.namespace, spec.id, { trigger: 'job-register', now, always: true, plan: true });
  return { job: txn.get('jobs', rowKey(job.namespace, job.id)) as Job, evaluation: outcome.evaluation as Evaluation };
}

/** What a plan run in `txn` would do: the diff against `prev`, placements, stops, failures. Pure over the transaction. */
export function describePlan(txn: ScratchTxn, prev: Job | undefined, spec: JobSpec, evaluation: Evaluation): JobPlan {
  // Mount flags may carry credentials: the diff compares what reads show ([REDACTED] flags).
  const diff = diffJobs(prev ? publicJob(specOfJob(prev)) : undefined, publicJob(spec));
  const placements: JobPlan['placements'] = [];
  const stops: JobPlan['stops'] = [];
  let inPlaceUpdates = 0;
  const updates = new Map<string, Record<string, number>>();
  const bump = (group: string, what: string): void => {
    const u = updates.get(group) ?? {};
    u[what] = (u[what] ?? 0) + 1;
    updates.set(group, u);
  };
  const touched = new Set<string>();
  for (const { row: a, before } of txn.changed('allocations')) {
    touched.add(a.id);
    if (!before) {
      placements.push({ group: a.taskGroup, index: a.index ?? 0, nodeId: a.nodeId, nodeName: txn.get('nodes', rowKey(a.nodeId))?.name ?? '', name: a.name ?? '' });
      bump(a.taskGroup, 'create');
    } else if (a.desiredStatus !== 'run' && before.desiredStatus === 'run') {
      stops.push({ allocId: a.id, group: a.taskGroup, name: a.name ?? '', description: a.desiredDescription });
      bump(a.taskGroup, 'destroy');
    } else if (a.jobVersion !== before.jobVersion) {
      inPlaceUpdates++;
      bump(a.taskGroup, 'in-place update');
    }
  }
  for (const a of txn.list('allocations', { filter: (x) => x.jobId === spec.id && x.namespace === spec.namespace && x.desiredStatus === 'run' })) {
    if (!touched.has(a.id)) bump(a.taskGroup, 'ignore');
  }
  for (const g of diff.groups) g.updates = updates.get(g.name) ?? {};
  placements.sort((a, b) => (a.group === b.group ? a.index - b.index : a.group < b.group ? -1 : 1));
  const changes = diff.type !== 'None' || placements.length > 0 || stops.length > 0 || inPlaceUpdates > 0;
  return { diff, jobModifyIndex: jobModifyIndex(prev), placements, stops, inPlaceUpdates, failedPlacements: evaluation.failedPlacements, changes };
}
