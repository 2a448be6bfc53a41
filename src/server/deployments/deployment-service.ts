// What operators do to deployments and job versions: promote canaries, fail,
// pause and resume a deployment (Nomad's deployment endpoints), revert a
// job to a kept version, scale a group. Each change is one store write, then
// the job is evaluated (a revert or scale registers the job anew).

import { systemClock, BerthError, type Clock, type Logger } from '../../lib/index.js';
import { isActiveDeployment, specOfJob, type Deployment, type Job } from '../../structs/index.js';
import { rowKey, type StateStore, type WriteTxn } from '../state/index.js';
import { jobVersions } from './deployment-plan.js';
import type { DeploymentJobs, JobRegistration } from './deployment-watcher.js';

export type DeploymentErrorCode = 'NOT_FOUND' | 'CONFLICT' | 'INVALID';

/** A refused deployment or job-version operation; `code` maps to the HTTP status. */
export class DeploymentError extends BerthError {
  constructor(code: DeploymentErrorCode, message: string) {
    super(code, message);
  }
}

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

  /** Runs `change` on the active deployment `id` and evaluates its job. Throws NOT_FOUND, CONFLICT (not active). */
  async #change(id: string, change: (d: Deployment, txn: WriteTxn) => Deployment): Promise<{ deployment: Deployment; index: number }> {
    const now = this.#clock.now();
    const { result } = await this.#store.write((txn) => {
      const d = txn.get('deployments', rowKey(id));
      if (!d) throw new DeploymentError('NOT_FOUND', `deployment "${id}" not found`);
      if (!isActiveDeployment(d)) throw new DeploymentError('CONFLICT', `deployment "${id}" is ${d.status}; only a running or paused deployment can change`);
      return txn.put('deployments', { ...change(d, txn), modifyTime: now });
    });
    const out = (await this.#jobs.evaluate(result.namespace, result.jobId, { trigger: 'deployment-watcher', always: true })) as { index?: number };
    return { deployment: result, index: out.index ?? this.#store.latestIndex() };
  }

  /**
   * Promotes the canaries of `groups` (all groups when empty): the rollout
   * goes on past them. Throws CONFLICT when a group has no canaries to
   * promote or some are not healthy yet. Safe to repeat? No: promoting twice is refused.
   */
  promote(id: string, groups: readonly string[] = []): Promise<{ deployment: Deployment; index: number }> {
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
  pause(id: string, pause: boolean): Promise<{ deployment: Deployment; index: number }> {
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
  async fail(id: string): Promise<{ deployment: Deployment; index: number; revertedTo?: number }> {
    let revert: { version: number; job: Job } | undefined;
    const out = await this.#change(id, (d, txn) => {
      const autoRevert = Object.values(d.taskGroups).some((s) => s.autoRevert);
      const stable = autoRevert ? jobVersions(txn, d.namespace, d.jobId).find((v) => v.stable && v.version < d.jobVersion) : undefined;
      revert = stable ? { version: stable.version, job: stable.job } : undefined;
      const suffix = stable ? ` - rolling back to job version ${stable.version}` : '';
      return { ...d, status: 'failed', statusDescription: `Deployment marked as failed${suffix}` };
    });
    if (!revert) return out;
    await this.#jobs.register(specOfJob(revert.job));
    return { ...out, revertedTo: revert.version };
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

  /** Sets `group`'s count and registers the job. Throws NOT_FOUND (job or group), INVALID (count). */
  async scale(namespace: string, jobId: string, group: string, count: number): Promise<JobRegistration> {
    if (!Number.isInteger(count) || count < 0) throw new DeploymentError('INVALID', `count must be a whole number of at least 0, not ${count}`);
    const job = this.#store.snapshot().get('jobs', rowKey(namespace, jobId));
    if (!job) throw new DeploymentError('NOT_FOUND', `job "${jobId}" not found in namespace "${namespace}"`);
    if (!job.groups.some((g) => g.name === group)) {
      throw new DeploymentError('NOT_FOUND', `job "${jobId}" has no group "${group}" (it has ${job.groups.map((g) => `"${g.name}"`).join(', ')})`);
    }
    const spec = specOfJob(job);
    return this.#jobs.register({ ...spec, groups: spec.groups.map((g) => (g.name === group ? { ...g, count } : g)) });
  }
}
