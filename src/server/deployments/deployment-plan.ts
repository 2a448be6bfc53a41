// The store side of a rollout, called by the job evaluation inside its write:
// find the deployment of the job's current version, create it when the
// evaluation places allocations of a rolling group, cancel the deployments
// of older versions, and stamp the new allocations with it.

import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { isActiveDeployment, rolls, specOfJob, type Deployment, type DeploymentGroupState, type Job, type JobVersion } from '../../structs/index.js';
import { keyPrefix, rowKey, type RowInput, type StateReader, type WriteTxn } from '../state/index.js';

/** Equal as JSON, whatever the order of keys (a job file in HCL and the same job in JSON list a config's keys differently). */
export function sameSpec(a: unknown, b: unknown): boolean {
  const plain = (v: unknown): unknown => (v === undefined ? v : JSON.parse(JSON.stringify(v)));
  return isDeepStrictEqual(plain(a), plain(b));
}

/**
 * The job's current version is the spec of an earlier version that was
 * stable (an auto-revert, `job revert`, or the known-good file submitted
 * again): its rollout has nothing new to try, so it places no canaries and
 * waits for no promotion (Nomad sends such a revert through the canary
 * phase, hashicorp/nomad#10882; a failed version then left the reverted job
 * waiting for a promotion nobody expected).
 */
export function revertsToStable(reader: StateReader, job: Job): boolean {
  if (!job.groups.some((g) => rolls(g.update) && g.update.canary > 0)) return false;
  const spec = specOfJob(job);
  return jobVersions(reader, job.namespace, job.id).some((v) => v.stable && v.version < job.version && v.job.createIndex === job.createIndex && sameSpec(specOfJob(v.job), spec));
}

/** The job's deployments, newest first. */
export function jobDeployments(reader: StateReader, namespace: string, jobId: string): Deployment[] {
  return reader
    .list('deployments', { filter: (d) => d.namespace === namespace && d.jobId === jobId })
    .sort((a, b) => b.createIndex - a.createIndex || b.createTime - a.createTime);
}

/** The deployment of the job's current version (its latest one), if any. */
export function currentDeployment(reader: StateReader, job: Job): Deployment | undefined {
  return jobDeployments(reader, job.namespace, job.id).find((d) => d.jobVersion === job.version && d.jobCreateIndex === job.createIndex);
}

function groupState(group: Job['groups'][number], canaries: boolean, now: number): DeploymentGroupState | undefined {
  const u = group.update;
  if (!rolls(u)) return undefined;
  const desiredCanaries = canaries ? u.canary : 0;
  return {
    autoRevert: u.autoRevert,
    autoPromote: u.autoPromote,
    promoted: desiredCanaries === 0,
    placedCanaries: [],
    desiredCanaries,
    desiredTotal: group.count,
    placedAllocs: 0,
    healthyAllocs: 0,
    unhealthyAllocs: 0,
    progressDeadlineMs: u.progressDeadlineMs,
    requireProgressBy: u.progressDeadlineMs > 0 ? now + u.progressDeadlineMs : 0,
  };
}

/**
 * Inside the evaluation's write: ties the allocations it is about to put
 * (`placed`, and `updated`: live ones that take the job's version in place)
 * to the deployment of the job's version, creating that deployment when a
 * rolling group asks for placements (`requests`, placed or not yet: a
 * replacement may wait for its predecessor's volume claim) or updates
 * allocations in place, and none exists; older active deployments of the job
 * are cancelled then. As Nomad's reconciler, the deployment's desired total is
 * the group's count, and an allocation updated in place (a count change keeps
 * the others running) joins it with its health to be judged again, so a scale
 * up or down finishes once the group's allocations are healthy. Returns the
 * deployment (as put) or undefined when the job does not roll. Safe to
 * repeat: with nothing asked it changes nothing.
 */
export function recordRollout(
  txn: WriteTxn,
  job: Job,
  requests: ReadonlyArray<{ group: string; canary?: boolean }>,
  placed: Array<RowInput<'allocations'>>,
  updated: Array<RowInput<'allocations'>>,
  now: number,
): Deployment | undefined {
  if (job.type !== 'service' || job.stop) return undefined;
  const rolling = new Map(job.groups.filter((g) => rolls(g.update)).map((g) => [g.name, g]));
  const ours = placed.filter((a) => rolling.has(a.taskGroup));
  const asked = requests.filter((r) => rolling.has(r.group));
  let deployment = currentDeployment(txn, job);
  // In place, joining: those not in this deployment yet (Nomad's: a new deployment resets their health).
  const joining = updated.filter((a) => rolling.has(a.taskGroup) && (!deployment || a.deploymentId !== deployment.id));
  if (asked.length === 0 && ours.length === 0 && joining.length === 0) return deployment;
  if (!deployment) {
    const taskGroups: Record<string, DeploymentGroupState> = {};
    for (const g of rolling.values()) {
      const canaries = asked.some((r) => r.group === g.name && r.canary);
      taskGroups[g.name] = groupState(g, canaries, now) as DeploymentGroupState;
    }
    for (const old of jobDeployments(txn, job.namespace, job.id).filter(isActiveDeployment)) {
      txn.put('deployments', { ...old, status: 'cancelled', statusDescription: 'Cancelled due to newer version of job', modifyTime: now });
    }
    const row: RowInput<'deployments'> = {
      id: randomUUID(),
      namespace: job.namespace,
      jobId: job.id,
      jobVersion: job.version,
      jobCreateIndex: job.createIndex,
      status: 'running',
      statusDescription: 'Deployment is running',
      taskGroups,
      createTime: now,
      modifyTime: now,
    };
    deployment = txn.put('deployments', row);
  }
  if (!isActiveDeployment(deployment) || ours.length + joining.length === 0) return deployment;
  const taskGroups = structuredClone(deployment.taskGroups);
  for (const a of ours) {
    const state = taskGroups[a.taskGroup];
    if (!state) continue;
    a.deploymentId = deployment.id;
    a.deploymentStatus ??= { canary: false, timestamp: now };
    state.placedAllocs++;
    if (a.deploymentStatus.canary) state.placedCanaries.push(a.id);
  }
  for (const a of joining) {
    const state = taskGroups[a.taskGroup];
    if (!state) continue;
    a.deploymentId = deployment.id;
    // Its health is judged anew, with its healthy_deadline from now (alloc-health).
    a.deploymentStatus = { canary: false, timestamp: now };
    state.placedAllocs++;
  }
  return txn.put('deployments', { ...deployment, taskGroups, modifyTime: now });
}

/** The deployment with `id`, or undefined. */
export function getDeployment(reader: StateReader, id: string): Deployment | undefined {
  return reader.get('deployments', rowKey(id));
}

/**
 * Inside a job registration's write: keeps the job's new version for
 * `job history` and `job revert` (nothing when the version exists already).
 * A version that does not roll out as a deployment is stable at once; one
 * that does becomes stable when its deployment succeeds.
 */
export function recordJobVersion(txn: WriteTxn, job: Job): void {
  const key = rowKey(job.namespace, job.id, String(job.version).padStart(10, '0'));
  const prev = txn.get('jobVersions', key);
  if (prev && prev.job.createIndex === job.createIndex) return;
  const deploys = job.type === 'service' && job.groups.some((g) => rolls(g.update));
  txn.put('jobVersions', { namespace: job.namespace, jobId: job.id, version: job.version, stable: !deploys, job, submitTime: job.submitTime });
}

/** The job's kept versions, newest first. */
export function jobVersions(reader: StateReader, namespace: string, jobId: string): JobVersion[] {
  return reader.list('jobVersions', { prefix: keyPrefix(namespace, jobId) }).reverse();
}
