// What operators do to deployments and job versions: promote canaries, fail,
// pause and resume a deployment (Nomad's deployment endpoints), revert a
// job to a kept version, scale a group. Each change is one store write, then
// the job is evaluated (a revert or scale registers the job anew).

import { systemClock, BerthError, type Clock, type Logger } from '../../lib/index.js';
import { isActiveDeployment, scalingBoundsProblem, specOfJob, type Deployment, type JobVersion } from '../../structs/index.js';
import { rowKey, type StateStore, type WriteTxn } from '../state/index.js';
import { jobDeployments, jobVersions } from './deployment-plan.js';
import type { DeploymentJobs, JobRegistration } from './deployment-watcher.js';

export type DeploymentErrorCode = 'NOT_FOUND' | 'CONFLICT' | 'INVALID';

/** A refused deployment or job-version operation; `code` maps to the HTTP status. */
export class DeploymentError extends BerthError {
  constructor(code: DeploymentErrorCode, message: string) {
    super(code, message);
  }
}

/** What a change to a deployment did: the deployment as written, the index, the evaluation it made and the version an auto-revert registered. */
export interface DeploymentChange {
  deployment: Deployment;
  index: number;
  evalId?: string;
  evalIndex?: number;
  revertedTo?: number;
}

/** What the job service's evaluate answers (DeploymentJobs types it loosely). */
type EvaluateOutcome = { index?: number; evaluation?: { id: string; createIndex: number } };

export interface DeploymentServiceOptions {
  store: StateStore;
  jobs: DeploymentJobs;
  clock?: Clock;
  logger: Logger;
}

export class DeploymentService {
  readonly #store: StateStore;
  readonly #jobs: DeploymentJobs;
  readonly #clock: Clock;
  readonly #log: Logger;

  constructor(opts: DeploymentServiceOptions) {
    this.#store = opts.store;
    this.#jobs = opts.jobs;
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger.child({ component: 'deployments' });
  }

  /**
   * Runs `change` on the active deployment `id` and evaluates its job; with
   * `revertTo` set by `change`, registers that kept version again (an
   * auto-revert). Throws NOT_FOUND, CONFLICT (not active).
   */
  async #change(id: string, change: (d: Deployment, txn: WriteTxn, revert: (v: JobVersion) => void) => Deployment): Promise<DeploymentChange> {
    const now = this.#clock.now();
    let revertTo: JobVersion | undefined;
    const { result } = await this.#store.write((txn) => {
      revertTo = undefined;
      const d = txn.get('deployments', rowKey(id));
      if (!d) throw new DeploymentError('NOT_FOUND', `deployment "${id}" not found`);
      if (!isActiveDeployment(d)) throw new DeploymentError('CONFLICT', `deployment "${id}" is ${d.status}; only a running or paused deployment can change`);
      return txn.put('deployments', { ...change(d, txn, (v) => (revertTo = v)), modifyTime: now });
    });
    const out = (await this.#jobs.evaluate(result.namespace, result.jobId, { trigger: 'deployment-watcher', always: true })) as EvaluateOutcome;
    const made: DeploymentChange = { deployment: result, index: out.index ?? this.#store.latestIndex() };
    if (out.evaluation) Object.assign(made, { evalId: out.evaluation.id, evalIndex: out.evaluation.createIndex });
    if (!revertTo) return made;
    // As Nomad's answer names the evaluation that rolls the job back: the revert's registration's.
    const reverted = await this.#jobs.register(specOfJob(revertTo.job));
    return { ...made, evalId: reverted.evaluation.id, evalIndex: reverted.evaluation.createIndex, index: Math.max(made.index, reverted.index), revertedTo: revertTo.version };
  }

  /** The latest stable version before `d`'s to go back to when one of its groups has auto_revert, if any. */
  #revertTarget(d: Deployment, txn: WriteTxn): JobVersion | undefined {
    if (!Object.values(d.taskGroups).some((s) => s.autoRevert)) return undefined;
    return jobVersions(txn, d.namespace, d.jobId).find((v) => v.stable && v.version < d.jobVersion);
  }

  /**
   * Promotes the canaries of `groups` (all groups when empty): the rollout
   * goes on past them. Throws CONFLICT when a group has no canaries to
   * promote or some are not healthy yet. Safe to repeat? No: promoting twice is refused.
   */
  promote(id: string, groups: readonly string[] = []): Promise<DeploymentChange> {
    return this.#change(id, (d, txn) => {
      const taskGroups = structuredClone(d.taskGroups);
      const names = groups.length ? groups : Object.keys(taskGroups).filter((g) => (taskGroups[g]?.desiredCanaries ?? 0) > 0);
      if (names.length === 0) throw new DeploymentError('CONFLICT', `deployment "${id}" has no canaries to promote`);
      for (const name of names) {
        const state = taskGroups[name];
        if (!state) throw new DeploymentError('INVALID', `deployment "${id}" has no group "${name}"`);
        if (state.promoted) continue;
        const healthy = state.placedCanaries.filter((a) => txn.get('allocations', rowKey(a))?.deploymentStatus?.healthy === true).length;
        if (healthy < state.desiredCanaries) {
          throw new DeploymentError('CONFLICT', `group "${name}": ${healthy} of ${state.desiredCanaries} canaries are healthy; promote once they all are`);
        }
        state.promoted = true;
      }
      this.#log.info({ deploymentId: id, groups: names }, 'deployment promoted');
      return { ...d, taskGroups, statusDescription: 'Deployment is running' };
    });
  }

  /** Pauses (`pause`) or resumes the deployment: a paused one replaces nothing more. Safe to repeat. */
  pause(id: string, pause: boolean): Promise<DeploymentChange> {
    return this.#change(id, (d) => ({
      ...d,
      status: pause ? 'paused' : 'running',
      statusDescription: pause ? 'Deployment is paused' : 'Deployment is running',
    }));
  }

  /**
   * Fails the deployment at an operator's request; with auto_revert the job
   * goes back to its latest stable version. Throws NOT_FOUND, CONFLICT.
   */
  fail(id: string): Promise<DeploymentChange> {
    return this.#change(id, (d, txn, revert) => {
      const stable = this.#revertTarget(d, txn);
      if (stable) revert(stable);
      const suffix = stable ? ` - rolling back to job version ${stable.version}` : '';
      return { ...d, status: 'failed', statusDescription: `Deployment marked as failed${suffix}` };
    });
  }

  /**
   * Sets the health of allocations of the deployment by hand (Nomad's
   * allocation-health): a healthy one counts as progress, an unhealthy one
   * fails the deployment (and, with auto_revert, reverts the job). Throws
   * INVALID for no allocation or one not of this deployment, NOT_FOUND for
   * an unknown allocation, and as `promote` for the deployment. Safe to repeat.
   */
  setAllocHealth(id: string, healthy: readonly string[], unhealthy: readonly string[]): Promise<DeploymentChange> {
    if (healthy.length + unhealthy.length === 0) throw new DeploymentError('INVALID', 'name at least one healthy or unhealthy allocation');
    const now = this.#clock.now();
    return this.#change(id, (d, txn, revert) => {
      const taskGroups = structuredClone(d.taskGroups);
      const marks: Array<[string, boolean]> = [...healthy.map((a): [string, boolean] => [a, true]), ...unhealthy.map((a): [string, boolean] => [a, false])];
      for (const [allocId, isHealthy] of marks) {
        const a = txn.get('allocations', rowKey(allocId));
        if (!a) throw new DeploymentError('NOT_FOUND', `allocation "${allocId}" not found`);
        if (a.deploymentId !== id) throw new DeploymentError('INVALID', `allocation "${allocId}" is not part of deployment "${id}"`);
        txn.put('allocations', { ...a, deploymentStatus: { ...(a.deploymentStatus ?? { canary: false }), healthy: isHealthy, timestamp: now }, modifyTime: now });
        const state = taskGroups[a.taskGroup];
        if (isHealthy && state && state.progressDeadlineMs > 0) state.requireProgressBy = now + state.progressDeadlineMs;
      }
      this.#log.info({ deploymentId: id, healthy: healthy.length, unhealthy: unhealthy.length }, 'deployment allocation health set');
      if (unhealthy.length === 0) return { ...d, taskGroups };
      const stable = this.#revertTarget(d, txn);
      if (stable) revert(stable);
      const suffix = stable ? ` - rolling back to job version ${stable.version}` : '';
      return { ...d, taskGroups, status: 'failed', statusDescription: `Failed due to unhealthy allocations${suffix}` };
    });
  }

  /**
   * Registers the job's kept `version` again (as a new version). Throws
   * NOT_FOUND for an unknown job or version.
   */
  async revert(namespace: string, jobId: string, version: number): Promise<JobRegistration> {
    const snap = this.#store.snapshot();
    if (!snap.get('jobs', rowKey(namespace, jobId))) throw new DeploymentError('NOT_FOUND', `job "${jobId}" not found in namespace "${namespace}"`);
    const kept = jobVersions(snap, namespace, jobId).find((v) => v.version === version);
    if (!kept) throw new DeploymentError('NOT_FOUND', `job "${jobId}" has no version ${version} (see \`berth job history ${jobId}\`)`);
    this.#log.info({ jobId, namespace, version }, 'job reverted');
    return this.#jobs.register(specOfJob(kept.job));
  }

  /**
   * Sets `group`'s count and registers the job. Throws NOT_FOUND (job or
   * group), INVALID (count, or a deployment of the job still active: Nomad's
   * Job.Scale refuses then with "job scaling blocked due to active
   * deployment"; a count edited for `job run` is a new version that cancels it).
   */
  async scale(namespace: string, jobId: string, group: string, count: number): Promise<JobRegistration> {
    if (!Number.isInteger(count) || count < 0) throw new DeploymentError('INVALID', `count must be a whole number of at least 0, not ${count}`);
    const job = this.#store.snapshot().get('jobs', rowKey(namespace, jobId));
    if (!job) throw new DeploymentError('NOT_FOUND', `job "${jobId}" not found in namespace "${namespace}"`);
    const target = job.groups.find((g) => g.name === group);
    if (!target) {
      throw new DeploymentError('NOT_FOUND', `job "${jobId}" has no group "${group}" (it has ${job.groups.map((g) => `"${g.name}"`).join(', ')})`);
    }
    // The group's scaling block bounds its count (Nomad's Job.Scale).
    const outOfBounds = scalingBoundsProblem(target, count);
    if (outOfBounds) throw new DeploymentError('INVALID', outOfBounds);
    const latest = jobDeployments(this.#store.snapshot(), namespace, jobId)[0];
    if (latest && isActiveDeployment(latest) && latest.jobCreateIndex === job.createIndex) {
      throw new DeploymentError('INVALID', 'job scaling blocked due to active deployment');
    }
    const spec = specOfJob(job);
    return this.#jobs.register({ ...spec, groups: spec.groups.map((g) => (g.name === group ? { ...g, count } : g)) });
  }
}
