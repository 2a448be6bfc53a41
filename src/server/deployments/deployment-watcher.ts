// The deployment watcher: a leader loop (Nomad's nomad/deploymentwatcher).
// For every active deployment it judges the health of the allocations
// placed under it, counts them, promotes canaries when auto_promote says
// so, marks the deployment successful (its job version stable) or failed
// (an unhealthy allocation, a missed progress_deadline), reverts the job to
// its latest stable version when auto_revert says so, and evaluates the job
// whenever a verdict may let the rollout place its next allocations.
// It wakes on store changes and at the next time a verdict is due, on the
// injectable clock.

import { AbortedError, describeError, Lifecycle, systemClock, type Clock, type LifecycleState, type Logger } from '../../lib/index.js';
import { isActiveDeployment, rolls, specOfJob, type Deployment, type Evaluation, type Job, type JobSpec } from '../../structs/index.js';
import { rowKey, untilChangeOr, type DataTable, type StateStore, type WriteTxn } from '../state/index.js';
import { judgeHealth } from './alloc-health.js';
import { jobVersions, sameSpec } from './deployment-plan.js';

/** What the watcher needs of the job service. */
/** A registration's outcome: the job, its evaluation, and the index of the write. */
export interface JobRegistration {
  job: Job;
  evaluation: Evaluation;
  index: number;
}

export interface DeploymentJobs {
  /** Registers the job again; resolves with the registration (JobService.register's answer). */
  register(spec: unknown): Promise<JobRegistration>;
  evaluate(namespace: string, jobId: string, opts: { trigger: 'deployment-watcher'; always?: boolean }): Promise<unknown>;
  /** Inside `txn`: a pending evaluation of `job` for the evaluation worker (JobService.pendEvaluation). */
  pendEvaluation(txn: WriteTxn, job: Job, trigger: 'deployment-watcher', now: number): Evaluation;
  /**
   * Inside `txn`: registers `spec` with a pending evaluation (JobService.registerIn).
   * Throws, having written nothing, when the state cannot serve the spec.
   */
  registerIn(txn: WriteTxn, spec: JobSpec, now: number): { job: Job; evaluation: Evaluation };
}

export interface DeploymentWatcherOptions {
  store: StateStore;
  jobs: DeploymentJobs;
  clock?: Clock;
  logger: Logger;
}

const TOPICS: readonly DataTable[] = ['allocations', 'deployments', 'jobs'];

/** What one pass over a deployment decided. */
interface Outcome {
  /** The job was evaluated (a pending evaluation written): a verdict or a promotion may let the rollout go on. */
  evaluate: boolean;
  /** The job was registered again at this stable version: the auto-revert. */
  revertTo?: { version: number; spec: JobSpec };
  /** The earliest time a verdict is due. */
  nextAt?: number;
}

/**
 * Inside a write: advances deployment `id` at `now`. `memory` keeps, per
 * allocation, since when its checks pass. Safe to repeat. What the verdicts
 * ask for (the job's next evaluation, the auto-revert's registration) is
 * written in the same transaction, as Nomad's watcher sends them in the same
 * Raft entry: a leader that dies after the verdict cannot leave the rollout
 * waiting for an evaluation nobody will make (a repeated pass skips an
 * allocation whose health is already decided).
 */
export function advanceDeployment(txn: WriteTxn, id: string, now: number, memory: Map<string, number>, jobs: Pick<DeploymentJobs, 'pendEvaluation' | 'registerIn'>): Outcome {
  const d = txn.get('deployments', rowKey(id));
  if (!d || !isActiveDeployment(d)) return { evaluate: false };
  const job = txn.get('jobs', rowKey(d.namespace, d.jobId));
  if (!job || job.createIndex !== d.jobCreateIndex || job.stop) {
    txn.put('deployments', { ...d, status: 'cancelled', statusDescription: job?.stop ? 'Cancelled because job is stopped' : 'Cancelled because job was purged', modifyTime: now });
    return { evaluate: false };
  }
  const allocs = txn.list('allocations', { filter: (a) => a.deploymentId === d.id });
  const taskGroups = structuredClone(d.taskGroups);
  const out: Outcome = { evaluate: false };
  const due = (at: number | undefined): void => {
    if (at !== undefined && at > now) out.nextAt = Math.min(out.nextAt ?? at, at);
  };
  let unhealthyReason: string | undefined;
  for (const a of allocs) {
    if (a.deploymentStatus?.healthy !== undefined) continue;
    const group = job.groups.find((g) => g.name === a.taskGroup);
    if (!group || !rolls(group.update)) continue;
    const v = judgeHealth(a, group, group.update, now, memory.get(a.id));
    if (v.checksPassingSince !== undefined) memory.set(a.id, v.checksPassingSince);
    else memory.delete(a.id);
    if (v.healthy === undefined) {
      due(v.recheckAt);
      continue;
    }
    memory.delete(a.id);
    txn.put('allocations', { ...a, deploymentStatus: { ...(a.deploymentStatus ?? { canary: false }), healthy: v.healthy, timestamp: now } });
    out.evaluate = true;
    if (!v.healthy) unhealthyReason ??= `allocation ${a.name ?? a.id} is unhealthy: ${v.reason}`;
    const state = taskGroups[a.taskGroup];
    // Progress: each newly healthy allocation pushes the progress deadline out.
    if (v.healthy && state && state.progressDeadlineMs > 0) state.requireProgressBy = now + state.progressDeadlineMs;
  }
  const current = txn.list('allocations', { filter: (a) => a.deploymentId === d.id });
  let done = d.status === 'running';
  let missedDeadline = false;
  for (const [name, state] of Object.entries(taskGroups)) {
    const mine = current.filter((a) => a.taskGroup === name);
    state.healthyAllocs = mine.filter((a) => a.deploymentStatus?.healthy === true).length;
    state.unhealthyAllocs = mine.filter((a) => a.deploymentStatus?.healthy === false).length;
    const canaries = mine.filter((a) => state.placedCanaries.includes(a.id));
    if (!state.promoted && state.autoPromote && state.desiredCanaries > 0 && d.status === 'running') {
      if (canaries.filter((a) => a.deploymentStatus?.healthy === true).length >= state.desiredCanaries) {
        state.promoted = true;
        out.evaluate = true;
      }
    }
    const live = mine.filter((a) => a.desiredStatus === 'run' && a.deploymentStatus?.healthy === true);
    const groupDone = state.promoted && live.length >= state.desiredTotal;
    if (!groupDone) done = false;
    if (!groupDone && d.status === 'running' && state.requireProgressBy > 0) {
      if (now >= state.requireProgressBy) missedDeadline = true;
      else due(state.requireProgressBy);
    }
  }
  let next: Deployment = { ...d, taskGroups };
  if (unhealthyReason || missedDeadline) {
    next = { ...next, status: 'failed', statusDescription: unhealthyReason ? 'Failed due to unhealthy allocations' : 'Failed due to progress deadline' };
    const plan = revertPlan(txn, d, job, next);
    if (plan.revertTo) {
      // The deployment row is written below, after the revert's registration: its own put must win.
      try {
        jobs.registerIn(txn, plan.revertTo.spec, now);
        out.revertTo = plan.revertTo;
        out.evaluate = false;
        next.statusDescription += ` - rolling back to job version ${plan.revertTo.version}`;
      } catch (err) {
        next.statusDescription += ` - could not roll back to job version ${plan.revertTo.version}: ${describeError(err)}`;
      }
    } else if (plan.sameSpecAs !== undefined) next.statusDescription += ` - not rolling back to stable job version ${plan.sameSpecAs}: the job has the same spec`;
    else if (Object.values(taskGroups).some((s) => s.autoRevert)) next.statusDescription += ' - no stable job version to auto revert to';
    out.nextAt = undefined;
  } else if (done) {
    next = { ...next, status: 'successful', statusDescription: 'Deployment completed successfully' };
    const versionKey = rowKey(d.namespace, d.jobId, String(d.jobVersion).padStart(10, '0'));
    const version = txn.get('jobVersions', versionKey);
    if (version) txn.put('jobVersions', { ...version, stable: true });
    out.nextAt = undefined;
  }
  if (out.evaluate) jobs.pendEvaluation(txn, job, 'deployment-watcher', now);
  if (JSON.stringify(next) !== JSON.stringify(d)) txn.put('deployments', { ...next, modifyTime: now });
  return out;
}

/**
 * For a failed deployment with auto_revert: the latest stable version before
 * it, unless that is the job's own spec (`sameSpecAs`: a revert that failed
 * again; reverting once more would loop).
 */
function revertPlan(txn: WriteTxn, d: Deployment, job: Job, failed: Deployment): Pick<Outcome, 'revertTo'> & { sameSpecAs?: number } {
  if (!Object.values(failed.taskGroups).some((s) => s.autoRevert)) return {};
  const stable = jobVersions(txn, d.namespace, d.jobId).find((v) => v.stable && v.version < d.jobVersion && v.job.createIndex === job.createIndex);
  if (!stable) return {};
  const spec = specOfJob(stable.job);
  return sameSpec(spec, specOfJob(job)) ? { sameSpecAs: stable.version } : { revertTo: { version: stable.version, spec } };
}

export class DeploymentWatcher {
  readonly #store: StateStore;
  readonly #jobs: DeploymentJobs;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #life: Lifecycle;
  readonly #memory = new Map<string, number>();
  #lastIndex = 0;

  constructor(opts: DeploymentWatcherOptions) {
    this.#store = opts.store;
    this.#jobs = opts.jobs;
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger.child({ component: 'deployment-watcher' });
    this.#life = new Lifecycle({ logger: this.#log });
  }

  /** The lib Lifecycle's state: new, starting, running, stopping, stopped. */
  get state(): LifecycleState {
    return this.#life.state;
  }

  /** Starts watching; returns after a first pass. Safe to call again (no-op). */
  start(): Promise<void> {
    if (this.#life.state !== 'new') return Promise.resolve();
    return this.#life.start(async (signal) => {
      this.#lastIndex = this.#store.latestIndex();
      const nextAt = await this.tick();
      void this.#life.track(this.#run(signal, nextAt));
    });
  }

  /** Stops the loop and waits for the pass in flight. Safe twice. */
  stop(): Promise<void> {
    return this.#life.stop(() => undefined);
  }

  /**
   * One pass over every active deployment at the clock's now; each one's
   * verdicts are written with the evaluations and reverts they ask for
   * (pending, for the evaluation worker). Returns when the next verdict is
   * due (undefined: only news from the store can change anything). Safe to
   * repeat; never throws for one deployment's failure (it is logged).
   */
  async tick(): Promise<number | undefined> {
    let nextAt: number | undefined;
    const active = this.#store.snapshot().list('deployments', { filter: isActiveDeployment });
    for (const d of active) {
      try {
        const now = this.#clock.now();
        const { result } = await this.#store.write((txn) => advanceDeployment(txn, d.id, now, this.#memory, this.#jobs));
        if (result.nextAt !== undefined) nextAt = Math.min(nextAt ?? result.nextAt, result.nextAt);
        if (result.revertTo) this.#log.info({ deploymentId: d.id, jobId: d.jobId, version: result.revertTo.version }, 'deployment failed; reverting the job');
      } catch (err) {
        this.#log.error({ deploymentId: d.id, err: describeError(err) }, 'deployment pass failed');
      }
    }
    return nextAt;
  }

  async #run(signal: AbortSignal, firstDue: number | undefined): Promise<void> {
    let nextAt = firstDue;
    while (!signal.aborted) {
      try {
        const index = await untilChangeOr(this.#store, TOPICS, this.#lastIndex, nextAt, this.#clock, signal);
        this.#lastIndex = Math.max(this.#lastIndex, index);
        nextAt = await this.tick();
      } catch (err) {
        if (err instanceof AbortedError || signal.aborted || this.#store.closed) return;
        this.#log.error({ err: describeError(err) }, 'deployment watcher failed; continuing');
        await this.#clock.sleep(1000, signal).catch(() => undefined);
      }
    }
  }
}
