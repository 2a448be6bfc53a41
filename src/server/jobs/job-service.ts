// Jobs as users manage them: register (or update), stop, purge; allocation
// status as nodes report it; allocation stop. Every change is one store write
// that also evaluates the job, so a registration returns with its
// allocations placed (or its evaluation blocked, with the reasons).

import { isDeepStrictEqual } from 'node:util';
import { systemClock, type Clock, type Logger } from '../../lib/index.js';
import {
  isClientTerminal,
  JobValidationError,
  parseJobSpec,
  type AllocClientStatus,
  type Allocation,
  type CheckResult,
  type ServiceReport,
  type EvalTrigger,
  type Evaluation,
  type Job,
  type JobSpec,
  type TaskGroup,
  type TaskState,
  type AllocNetworkStatus,
} from '../../structs/index.js';
import { rowKey, type StateStore } from '../state/index.js';
import { syncAllocServices } from '../services/index.js';
import { evaluateJob, jobAllocations, jobStatusOf } from './evaluate.js';
import { isCollectable } from './garbage-collector.js';
import { checkDispatch, dispatchChildId, liveChildren, periodicChildId, putChildJob, type DispatchRequest } from './child-jobs.js';
import { JobError } from './job-errors.js';
import { problemsAgainstState } from './validate-job.js';

export { JobError };

export interface JobServiceOptions {
  store: StateStore;
  clock?: Clock;
  logger: Logger;
}

/** What a node may report about one of its allocations. */
export interface AllocationUpdate {
  id: string;
  clientStatus: AllocClientStatus;
  clientDescription?: string;
  taskStates?: Record<string, TaskState>;
  /** The allocation's network (mode, address) once its client made it. */
  network?: AllocNetworkStatus;
  /** The latest result of each service check (replaces the stored ones); absent: unchanged. */
  checks?: Record<string, CheckResult>;
  /** The allocation's services as the client resolved them; absent: unchanged (see syncAllocServices). */
  services?: ServiceReport[];
}

export interface RegisterResult {
  job: Job;
  evaluation: Evaluation;
  index: number;
}

/** A periodic launch: the child job and its evaluation, or why nothing was launched. */
export type LaunchResult = { job: Job; evaluation: Evaluation; index: number } | { skipped: string; index: number };

const CLIENT_STATUSES: readonly AllocClientStatus[] = ['pending', 'running', 'complete', 'failed', 'lost'];

/** Equal as JSON, whatever the order of keys (a job file in HCL and the same job in JSON list a config's keys differently). */
function sameSpec(a: unknown, b: unknown): boolean {
  const plain = (v: unknown): unknown => (v === undefined ? v : JSON.parse(JSON.stringify(v)));
  return isDeepStrictEqual(plain(a), plain(b));
}

function specOf(job: Job): JobSpec {
  const { stop: _s, status: _st, version: _v, groupVersions: _g, groupResourceVersions: _r, submitTime: _t, submitIndex: _si, createIndex: _c, modifyIndex: _m, ...spec } =
    job;
  return spec;
}

/** The resource values an allocation's tasks can take in place (cgroup limits); other resource fields replace it. */
const IN_PLACE_RESOURCE_FIELDS = ['cpuMhz', 'memoryMb', 'memoryMaxMb', 'cores', 'pidsMax'] as const;

/** A group without what changes neither its allocations nor their tasks: its count, and with `resources` its tasks' resource values. */
function comparable(group: TaskGroup, withoutResources: boolean): unknown {
  if (!withoutResources) return { ...group, count: 0 };
  return {
    ...group,
    count: 0,
    tasks: group.tasks.map((t) => {
      const resources: Record<string, unknown> = { ...t.resources };
      for (const f of IN_PLACE_RESOURCE_FIELDS) delete resources[f];
      return { ...t, resources };
    }),
  };
}

export class JobService {
  readonly #store: StateStore;
  readonly #clock: Clock;
  readonly #log: Logger;

  constructor(opts: JobServiceOptions) {
    this.#store = opts.store;
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger.child({ component: 'jobs' });
  }

  /**
   * Registers a new job or updates one (same namespace and ID), and evaluates
   * it. A stopped job registered again runs again. Throws JobValidationError
   * (code INVALID) listing every problem, with field paths, when the spec is
   * malformed or names volumes/plugins/access modes the server cannot serve.
   * Safe to repeat (an unchanged spec keeps its version).
   */
  async register(input: unknown): Promise<RegisterResult> {
    const spec = parseJobSpec(input);
    const now = this.#clock.now();
    const { index, result } = await this.#store.write((txn) => {
      const problems = problemsAgainstState(spec, txn);
      if (problems.length) throw new JobValidationError(problems);
      const prev = txn.get('jobs', rowKey(spec.namespace, spec.id));
      let version = 0;
      const groupVersions: Record<string, number> = {};
      const groupResourceVersions: Record<string, number> = {};
      if (prev) {
        const changed = !sameSpec(specOf(prev), spec);
        version = changed ? prev.version + 1 : prev.version;
        for (const g of spec.groups) {
          const old = prev.groups.find((p) => p.name === g.name);
          // A count change alone scales; a change of tasks' resource values alone updates
          // the allocations in place where they fit; any other change replaces them.
          const prevGroup = prev.groupVersions[g.name] ?? prev.version;
          groupVersions[g.name] = old && sameSpec(comparable(old, true), comparable(g, true)) ? prevGroup : version;
          groupResourceVersions[g.name] =
            old && sameSpec(comparable(old, false), comparable(g, false)) ? (prev.groupResourceVersions?.[g.name] ?? prevGroup) : version;
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
      const outcome = evaluateJob(txn, spec.namespace, spec.id, { trigger: 'job-register', now, always: true });
      return { job: txn.get('jobs', rowKey(job.namespace, job.id)) as Job, evaluation: outcome.evaluation as Evaluation };
    });
    this.#log.info({ jobId: spec.id, namespace: spec.namespace, evalId: result.evaluation.id, status: result.evaluation.status }, 'job registered');
    return { ...result, index };
  }

  /**
   * Stops the job: every allocation is told to stop; the job stays readable
   * (status dead once nothing runs). With `purge`, the job row is deleted as
   * well, with its allocations that have stopped and hold no claim (the
   * garbage collector deletes the others once they have). Throws JobError NOT_FOUND. Safe to repeat.
   */
  async stop(namespace: string, jobId: string, opts: { purge?: boolean } = {}): Promise<{ evaluation: Evaluation; index: number }> {
    const now = this.#clock.now();
    const { index, result } = await this.#store.write((txn) => {
      const job = txn.get('jobs', rowKey(namespace, jobId));
      if (!job) throw new JobError('NOT_FOUND', `job "${jobId}" not found in namespace "${namespace}"`);
      if (opts.purge) txn.delete('jobs', rowKey(namespace, jobId));
      else txn.put('jobs', { ...job, stop: true });
      const evaluation = evaluateJob(txn, namespace, jobId, { trigger: 'job-deregister', now, always: true }).evaluation as Evaluation;
      // Allocations already stopped go with the purged job; the others once they stop (the garbage collector).
      if (opts.purge) for (const a of jobAllocations(txn, namespace, jobId)) if (isCollectable(txn, a)) txn.delete('allocations', rowKey(a.id));
      return evaluation;
    });
    this.#log.info({ jobId, namespace, purge: Boolean(opts.purge) }, 'job stopped');
    return { evaluation: result, index };
  }

  /**
   * Evaluates the job again (a node changed, an allocation failed, a blocked
   * evaluation may now succeed). With `always` false nothing is written when
   * there is nothing to do. Returns the evaluation (if written) and when a
   * delayed reschedule is due.
   */
  async evaluate(
    namespace: string,
    jobId: string,
    opts: { trigger: EvalTrigger; always?: boolean; nodeId?: string; evalId?: string },
  ): Promise<{ evaluation?: Evaluation; followUpAt?: number; index: number }> {
    const now = this.#clock.now();
    const { index, result } = await this.#store.write((txn) =>
      evaluateJob(txn, namespace, jobId, {
        trigger: opts.trigger,
        now,
        always: opts.always ?? false,
        ...(opts.nodeId ? { nodeId: opts.nodeId } : {}),
        ...(opts.evalId ? { evalId: opts.evalId } : {}),
      }),
    );
    return { ...result, index };
  }

  /**
   * Applies a node's reports about its own allocations (client status, task
   * states). Allocations of other nodes are refused with JobError FORBIDDEN,
   * unknown ones with NOT_FOUND; nothing is applied then. A failed allocation
   * is rescheduled by the evaluation worker per its group's policy.
   */
  async updateAllocations(nodeId: string, updates: readonly AllocationUpdate[]): Promise<{ index: number }> {
    const now = this.#clock.now();
    const { index } = await this.#store.write((txn) => {
      const jobs = new Set<string>();
      for (const u of updates) {
        if (!CLIENT_STATUSES.includes(u.clientStatus)) throw new JobError('INVALID', `unknown client status "${String(u.clientStatus)}"`);
        const alloc = txn.get('allocations', rowKey(u.id));
        if (!alloc) throw new JobError('NOT_FOUND', `allocation "${u.id}" not found`);
        if (alloc.nodeId !== nodeId) throw new JobError('FORBIDDEN', `allocation "${u.id}" does not run on node "${nodeId}"`);
        const next: Allocation = {
          ...alloc,
          clientStatus: u.clientStatus,
          clientDescription: u.clientDescription ?? alloc.clientDescription,
          taskStates: u.taskStates ?? alloc.taskStates,
          ...(u.network ? { network: u.network } : {}),
          ...(u.checks || alloc.checks ? { checks: u.checks ?? alloc.checks } : {}),
          modifyTime: u.clientStatus === alloc.clientStatus ? alloc.modifyTime : now,
        };
        if (!sameSpec(next, alloc)) txn.put('allocations', next);
        syncAllocServices(txn, next, u.services);
        jobs.add(rowKey(alloc.namespace, alloc.jobId));
      }
      for (const key of jobs) {
        const job = txn.get('jobs', key);
        if (!job) continue;
        const status = jobStatusOf(job, jobAllocations(txn, job.namespace, job.id));
        if (status !== job.status) txn.put('jobs', { ...job, status });
      }
    });
    return { index };
  }

  /**
   * Launches the periodic job `namespace/jobId` for `launchMs` (its scheduled
   * time; default now): writes the child `<id>/periodic-<unix>` and
   * evaluates it. Skipped (nothing written) when that child exists already,
   * or, unless `force`, when the job is stopped or disabled, or prohibits
   * overlap and a previous child still runs. Throws JobError NOT_FOUND, or
   * INVALID for a job that is not periodic. Safe to repeat.
   */
  async launchPeriodic(namespace: string, jobId: string, opts: { launchMs?: number; force?: boolean } = {}): Promise<LaunchResult> {
    const now = this.#clock.now();
    const launchMs = opts.launchMs ?? now;
    const { index, result } = await this.#store.write((txn): { job: Job; evaluation: Evaluation } | { skipped: string } => {
      const parent = txn.get('jobs', rowKey(namespace, jobId));
      if (!parent) throw new JobError('NOT_FOUND', `job "${jobId}" not found in namespace "${namespace}"`);
      if (!parent.periodic) throw new JobError('INVALID', `job "${jobId}" is not periodic`);
      const childId = periodicChildId(parent.id, launchMs);
      if (txn.get('jobs', rowKey(namespace, childId))) return { skipped: `job "${childId}" was launched already` };
      if (!opts.force) {
        if (parent.stop) return { skipped: 'the job is stopped' };
        if (!parent.periodic.enabled) return { skipped: 'the periodic block is disabled' };
        const running = liveChildren(txn, parent);
        if (parent.periodic.prohibitOverlap && running.length) return { skipped: `prohibit_overlap: "${running[0]?.id}" still runs` };
      }
      return putChildJob(txn, parent, { id: childId }, now, 'periodic-job');
    });
    if ('job' in result) this.#log.info({ jobId, namespace, child: result.job.id, force: Boolean(opts.force) }, 'periodic job launched');
    else this.#log.info({ jobId, namespace, reason: result.skipped }, 'periodic launch skipped');
    return { ...result, index };
  }

  /**
   * Dispatches the parameterized job `namespace/jobId`: checks the payload
   * and meta against its parameterized block, writes the child
   * `<id>/dispatch-<unix>-<8 hex>` (meta merged over the job's, payload
   * kept for the tasks' dispatch_payload) and evaluates it. Throws JobError
   * NOT_FOUND, INVALID (not parameterized, payload or meta refused) or
   * CONFLICT (the job is stopped). Each call launches a new child.
   */
  async dispatch(namespace: string, jobId: string, req: DispatchRequest): Promise<RegisterResult> {
    const now = this.#clock.now();
    const { index, result } = await this.#store.write((txn) => {
      const parent = txn.get('jobs', rowKey(namespace, jobId));
      if (!parent) throw new JobError('NOT_FOUND', `job "${jobId}" not found in namespace "${namespace}"`);
      checkDispatch(parent, req);
      const id = dispatchChildId(parent.id, now, req.idPrefixTemplate);
      return putChildJob(txn, parent, { id, dispatched: true, ...(req.meta ? { meta: req.meta } : {}), ...(req.payload ? { payload: req.payload } : {}) }, now, 'job-dispatch');
    });
    this.#log.info({ jobId, namespace, child: result.job.id }, 'job dispatched');
    return { ...result, index };
  }

  /**
   * Stops one allocation at an operator's request; the job's evaluation places
   * a replacement. Throws JobError NOT_FOUND.
   */
  async stopAllocation(allocId: string): Promise<{ evaluation?: Evaluation; index: number }> {
    const now = this.#clock.now();
    const { index, result } = await this.#store.write((txn) => {
      const alloc = txn.get('allocations', rowKey(allocId));
      if (!alloc) throw new JobError('NOT_FOUND', `allocation "${allocId}" not found`);
      // A live allocation moves (Nomad's alloc stop: DesiredTransition.Migrate): the scheduler
      // stops it and places its replacement; one already finished is only marked stopped.
      if (alloc.desiredStatus === 'run' && !isClientTerminal(alloc.clientStatus)) {
        txn.put('allocations', { ...alloc, desiredTransition: { ...alloc.desiredTransition, migrate: true }, modifyTime: now });
      } else txn.put('allocations', { ...alloc, desiredStatus: 'stop', desiredDescription: 'stopped by operator', modifyTime: now });
      return evaluateJob(txn, alloc.namespace, alloc.jobId, { trigger: 'alloc-stop', now, always: true }).evaluation;
    });
    return result ? { evaluation: result, index } : { index };
  }
}
