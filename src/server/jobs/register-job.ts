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
  type TaskGroup,
} from '../../structs/index.js';
import { recordJobVersion, sameSpec } from '../deployments/index.js';
import { rowKey, type ScratchTxn, type WriteTxn } from '../state/index.js';
import { evaluateJob } from './evaluate.js';
import { diffJobs } from './job-diff.js';
import { problemsAgainstState } from './validate-job.js';

/** The resource values an allocation's tasks can take in place (cgroup limits); other resource fields replace it. */
const IN_PLACE_RESOURCE_FIELDS = ['cpuMhz', 'memoryMb', 'memoryMaxMb', 'cores', 'pidsMax'] as const;

/**
 * A group without what changes neither its allocations nor their tasks: its
 * count, and with `withoutResources` its tasks' resource values and its
 * restart and reschedule policies (Nomad's tasksUpdated looks at neither:
 * the allocations take them in place). Each task carries
 * the meta it sees (the job's, under the group's, under its own): a change of
 * the job's meta reaches the tasks' environment and replaces them, as
 * Nomad's tasksUpdated decides with the combined task meta.
 */
function comparable(group: TaskGroup, withoutResources: boolean, jobMeta: Record<string, string> | undefined): unknown {
  return {
    ...group,
    count: 0,
    ...(withoutResources ? { restart: undefined, reschedule: undefined } : {}),
    tasks: group.tasks.map((t) => {
      const seen = { ...t, combinedMeta: { ...jobMeta, ...group.meta, ...t.meta } };
      if (!withoutResources) return seen;
      const resources: Record<string, unknown> = { ...t.resources };
      for (const f of IN_PLACE_RESOURCE_FIELDS) delete resources[f];
      return { ...seen, resources };
    }),
  };
}

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
 * in the same transaction when `schedule` is `now` (a plan), left pending for
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
      const old = prev.groups.find((p) => p.name === g.name);
      // A count change alone scales; a change of tasks' resource values alone updates
      // the allocations in place where they fit; any other change replaces them.
      const prevGroup = prev.groupVersions[g.name] ?? prev.version;
      groupVersions[g.name] = old && sameSpec(comparable(old, true, prev.meta), comparable(g, true, spec.meta)) ? prevGroup : version;
      groupResourceVersions[g.name] =
        old && sameSpec(comparable(old, false, prev.meta), comparable(g, false, spec.meta)) ? (prev.groupResourceVersions?.[g.name] ?? prevGroup) : version;
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
  const outcome = evaluateJob(txn, spec.namespace, spec.id, { trigger: 'job-register', now, always: true });
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
