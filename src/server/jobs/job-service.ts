// Jobs as users manage them: register (or update), stop, purge; allocation
// status as nodes report it; allocation stop. A registration is one store
// write of the job and a pending evaluation, answered once durable (as
// Nomad's job register); the evaluation worker then runs the scheduler for
// every pending evaluation (`evaluatePending`, several per write). Stop,
// allocation stop, dispatch and periodic launches still evaluate inside
// their own write, so they answer with the evaluation's outcome (pending
// when it was too large for one write: the worker writes the rest).

import { systemClock, type Clock, type Logger } from '../../lib/index.js';
import { isClientTerminal, jobModifyIndex, checkedJobSpec, parseJobSpec, type EvalTrigger, type Evaluation, type Job, type JobPlan, type JobSpec } from '../../structs/index.js';
import { rowKey, ScratchTxn, StateStoreError, type StateStore, type WriteTxn } from '../state/index.js';
import { describePlan, putPendingEvaluation, registerIn } from './register-job.js';
import { evaluateJob, jobAllocations } from './evaluate.js';
import { isCollectable } from './garbage-collector.js';
import { checkDispatch, dispatchChildId, liveChildren, periodicChildId, putChildJob, type DispatchRequest } from './child-jobs.js';
import { JobError } from './job-errors.js';
import { AllocStatusWriter, type AllocationUpdate } from './alloc-status-writer.js';
import { GroupCommit } from './group-commit.js';
import { requireNamespace } from '../namespaces/index.js';

export { JobError };
export type { AllocationUpdate };

export interface JobServiceOptions {
  store: StateStore;
  clock?: Clock;
  logger: Logger;
  /** Asked before a registration batch that is not full is written: a promise holds it for more (the server's RequestsInFlight.burstLinger). */
  registrationLinger?: () => Promise<void> | undefined;
}

export interface RegisterResult {
  job: Job;
  evaluation: Evaluation;
  index: number;
}

/** What one pass over the pending evaluations did (`JobService.evaluatePending`). */
export interface PendingPass {
  /** The evaluations this pass ran, as they ended: complete, blocked or failed. */
  evaluations: Evaluation[];
  /** Jobs owed a delayed re-evaluation (a reschedule's delay): `namespace\0jobId` -> clock time. */
  followUps: Map<string, number>;
  /** Pending evaluations left for the next pass. */
  remaining: number;
  index: number;
}

/** How many pending evaluations `evaluatePending` runs in one store write unless told. */
export const DEFAULT_EVAL_BATCH = 32;

/** A periodic launch: the child job and its evaluation, or why nothing was launched. */
export type LaunchResult = { job: Job; evaluation: Evaluation; index: number } | { skipped: string; index: number };

/** Nomad's refusal of a job in a namespace that does not exist. */
function unknownNamespace(spec: JobSpec): string {
  return `job ${JSON.stringify(spec.id)} is in nonexistent namespace ${JSON.stringify(spec.namespace)}`;
}

export class JobService {
  readonly #store: StateStore;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #statusWriter: AllocStatusWriter;

  /** Registrations that arrive in one turn of the event loop share a store write. */
  readonly #registrations: GroupCommit<{ spec: JobSpec; now: number; checkIndex?: number }, { job: Job; evaluation: Evaluation }>;

  constructor(opts: JobServiceOptions) {
    this.#store = opts.store;
    this.#clock = opts.clock ?? systemClock;
    this.#statusWriter = new AllocStatusWriter({ store: this.#store, clock: this.#clock });
    this.#log = opts.logger.child({ component: 'jobs' });
    this.#registrations = new GroupCommit({
      store: this.#store,
      keyOf: ({ spec }) => rowKey(spec.namespace, spec.id),
      apply: (txn, { spec, now, checkIndex }) => {
        requireNamespace(txn, spec.namespace, unknownNamespace(spec));
        if (checkIndex !== undefined) {
          const current = jobModifyIndex(txn.get('jobs', rowKey(spec.namespace, spec.id)));
          if (current !== checkIndex) throw new JobError('CONFLICT', enforceIndexMessage(checkIndex, current));
        }
        return registerIn(txn, spec, now, 'later');
      },
      ...(opts.registrationLinger ? { linger: opts.registrationLinger } : {}),
    });
  }

  /**
   * Registers a new job or updates one (same namespace and ID) with a
   * pending evaluation, and resolves once both are durable: placement is the
   * evaluation worker's, after (follow the evaluation to see it end; it is
   * never lost: a restarted leader runs what it finds pending). A stopped
   * job registered again runs again. Throws JobValidationError
   * (code INVALID) listing every problem, with field paths, when the spec is
   * malformed or names volumes/plugins/access modes the server cannot serve,
   * NamespaceError INVALID when its namespace does not exist.
   * Safe to repeat (an unchanged spec keeps its version). With
   * `checkIndex`, throws JobError CONFLICT unless the job's modify index
   * (`jobModifyIndex`; 0 for a new job) is still that (`job run -check-index`).
   * Registrations made in the same turn of the event loop are written
   * together (GroupCommit): up to DEFAULT_MAX_BATCH in one store write,
   * answered with that write's index. A spec parseJobSpec returned is
   * taken as checked (checkedJobSpec), anything else is parsed here.
   */
  async register(input: unknown, opts: { checkIndex?: number } = {}): Promise<RegisterResult> {
    const spec = checkedJobSpec(input);
    const { index, result } = await this.#registrations.submit({ spec, now: this.#clock.now(), ...opts });
    this.#log.info({ jobId: spec.id, namespace: spec.namespace, evalId: result.evaluation.id, status: result.evaluation.status }, 'job registered');
    return { ...result, index };
  }

  /**
   * What registering `input` would do now, without doing it (Nomad's job
   * plan): the same registration and evaluation as `register`, run in a
   * transaction that is never committed. Throws JobValidationError as
   * `register` does. Never writes; never blocks.
   */
  plan(input: unknown): JobPlan {
    const spec = parseJobSpec(input);
    const txn = new ScratchTxn(this.#store.snapshot());
    requireNamespace(txn, spec.namespace, unknownNamespace(spec));
    const prev = txn.get('jobs', rowKey(spec.namespace, spec.id));
    const { evaluation } = registerIn(txn, spec, this.#clock.now(), 'now');
    return describePlan(txn, prev, spec, evaluation);
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
    }, { freesSpace: true });
    this.#log.info({ jobId, namespace, purge: Boolean(opts.purge) }, 'job stopped');
    return { evaluation: result, index };
  }

  /**
   * Asks for the job to be evaluated again now (Nomad's job evaluate): one
   * pending evaluation, triggered as a registration, written and answered
   * once durable; the evaluation worker runs it. Throws JobError NOT_FOUND
   * (`job not found`, Nomad's words), or INVALID for a periodic or
   * parameterized job (it launches children and places nothing itself).
   * Each call writes a new evaluation.
   */
  async forceEvaluate(namespace: string, jobId: string, opts: { forceReschedule?: boolean } = {}): Promise<RegisterResult> {
    const now = this.#clock.now();
    const { index, result } = await this.#store.write((txn) => {
      const job = txn.get('jobs', rowKey(namespace, jobId));
      if (!job) throw new JobError('NOT_FOUND', 'job not found');
      if (job.periodic) throw new JobError('INVALID', "can't evaluate periodic job");
      if (job.parameterized) throw new JobError('INVALID', "can't evaluate parameterized job");
      // `job eval -force-reschedule`: the failed allocations not yet replaced are rescheduled now,
      // whatever their policy's attempts and delay say (Nomad's DesiredTransition.ForceReschedule).
      if (opts.forceReschedule) {
        for (const a of txn.list('allocations')) {
          if (a.namespace !== namespace || a.jobId !== jobId || a.clientStatus !== 'failed' || a.desiredStatus !== 'run') continue;
          txn.put('allocations', { ...a, desiredTransition: { ...a.desiredTransition, forceReschedule: true }, modifyTime: now });
        }
      }
      return { job, evaluation: putPendingEvaluation(txn, job, 'job-register', now) };
    });
    this.#log.info({ jobId, namespace, evalId: result.evaluation.id, forceReschedule: opts.forceReschedule ?? false }, 'job evaluation forced');
    return { ...result, index };
  }

  /**
   * Runs the scheduler for the pending evaluations, oldest first: at most
   * `max` (DEFAULT_EVAL_BATCH) in one store write, each seeing what the ones
   * before it placed. Each ends complete or blocked, as `evaluate` ends it.
   * Should the batch's write throw for one of them (a bug, not a store
   * failure), each runs in its own write and the one that throws is marked
   * failed with the error, so one bad job never holds the others back.
   * Rejects with StateStoreError when the store cannot write (nothing was
   * changed then). Safe to repeat: a pass with nothing pending writes nothing.
   */
  async evaluatePending(opts: { max?: number } = {}): Promise<PendingPass> {
    const max = Math.max(1, opts.max ?? DEFAULT_EVAL_BATCH);
    try {
      const { index, result } = await this.#store.write((txn) => this.#runPending(txn, pendingEvaluations(txn).slice(0, max)));
      return { ...result, index };
    } catch (err) {
      if (err instanceof StateStoreError) throw err;
      this.#log.error({ err: String(err) }, 'a batch of evaluations failed; running them one at a time');
    }
    const out: PendingPass = { evaluations: [], followUps: new Map(), remaining: 0, index: 0 };
    for (const e of pendingEvaluations(this.#store.snapshot()).slice(0, max)) {
      const one = await this.#store
        .write((txn) => this.#runPending(txn, [e]))
        .catch(async (err: unknown) => {
          if (err instanceof StateStoreError) throw err;
          this.#log.error({ evalId: e.id, jobId: e.jobId, namespace: e.namespace, err: String(err) }, 'evaluation failed');
          const now = this.#clock.now();
          const failed = { ...e, status: 'failed' as const, statusDescription: `the scheduler failed: ${err instanceof Error ? err.message : String(err)}`, modifyTime: now };
          return this.#store.write((txn) => ({ evaluations: [txn.put('evaluations', failed)], followUps: new Map<string, number>(), remaining: 0 }));
        });
      out.evaluations.push(...one.result.evaluations);
      for (const [k, at] of one.result.followUps) out.followUps.set(k, at);
      out.index = one.index;
    }
    out.remaining = pendingEvaluations(this.#store.snapshot()).length;
    return out;
  }

  /**
   * Evaluates `batch` (pending evaluations) inside `txn`, in order, until the
   * write is full: an evaluation larger than what one write may carry
   * (WriteTxn.bytesLeft) writes what fits and stays pending, counting what it
   * placed, and the next pass continues it (also on another leader, as it is
   * durable: nothing is placed twice, each part reconciles with the ones
   * before).
   */
  #runPending(txn: WriteTxn, batch: readonly Evaluation[]): Omit<PendingPass, 'index'> {
    const now = this.#clock.now();
    const evaluations: Evaluation[] = [];
    const followUps = new Map<string, number>();
    for (const e of batch) {
      // Still pending in this view: a concurrent pass (another leader's last breath) may have run it.
      if (txn.get('evaluations', rowKey(e.id))?.status !== 'pending') continue;
      const out = evaluateJob(txn, e.namespace, e.jobId, { trigger: e.triggeredBy, now, always: true, evalId: e.id });
      if (out.evaluation) evaluations.push(out.evaluation);
      if (out.followUpAt !== undefined) followUps.set(`${e.namespace}\0${e.jobId}`, out.followUpAt);
      // This write is full (the evaluation stays pending with what it placed so far): the rest go in the next.
      if (out.more) break;
    }
    return { evaluations, followUps, remaining: pendingEvaluations(txn).length };
  }

  /**
   * Evaluates the job again (a node changed, an allocation failed, a blocked
   * evaluation may now succeed). With `always` false nothing is written when
   * there is nothing to do. Returns the evaluation (if written) and when a
   * delayed reschedule is due. An evaluation too large for one write writes
   * its first part and is left pending: the evaluation worker completes it.
   */
  /** Inside `txn`: a pending evaluation of `job` for the evaluation worker, durable with the change that asks for it. */
  pendEvaluation(txn: WriteTxn, job: Job, trigger: EvalTrigger, now: number): Evaluation {
    return putPendingEvaluation(txn, job, trigger, now);
  }

  /**
   * Inside `txn`: registers `spec` (a checked spec, such as a stored
   * version's) with a pending evaluation. Throws JobValidationError, having
   * written nothing, when the state cannot serve it.
   */
  registerIn(txn: WriteTxn, spec: JobSpec, now: number): { job: Job; evaluation: Evaluation } {
    return registerIn(txn, spec, now, 'later');
  }

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
   * unknown ones with NOT_FOUND; nothing is applied then. A report whose
   * newest task event is older than the stored state's is skipped (a newer
   * report overtook it). A failed allocation is rescheduled by the
   * evaluation worker per its group's policy. Reports arriving together are
   * written together (AllocStatusWriter): one store write for many nodes.
   */
  async updateAllocations(nodeId: string, updates: readonly AllocationUpdate[]): Promise<{ index: number }> {
    return this.#statusWriter.report(nodeId, updates);
  }

  /** Store writes the status reports took, and reports they carried (for benchmarks and tests). */
  get statusWrites(): { writes: number; reports: number } {
    return { ...this.#statusWriter.counts };
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

/**
 * Why a registration with `EnforceIndex` was refused, in Nomad's words (its
 * CLI recognizes the prefix `Enforcing job modify index` and says to plan
 * again): `current` is the job's modify index now, 0 when there is no job.
 */
function enforceIndexMessage(wanted: number, current: number): string {
  const prefix = `Enforcing job modify index ${wanted}`;
  if (wanted === 0) return `${prefix}: job already exists`;
  if (current === 0) return `${prefix}: job does not exist`;
  return `${prefix}: job exists with conflicting job modify index: ${current}`;
}

/** The pending evaluations in `reader`, oldest first. */
function pendingEvaluations(reader: Pick<WriteTxn, 'list'>): Evaluation[] {
  return reader.list('evaluations', { filter: (e) => e.status === 'pending' }).sort((a, b) => a.createIndex - b.createIndex || a.createTime - b.createTime);
}

