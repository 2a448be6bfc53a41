// A group's `scaling` block as Nomad's API shows it: a horizontal scaling
// policy with a stable ID, its target (namespace, job, group) and the job's
// indexes. Berth keeps the policy inside its job; the ID is derived from the
// target, so it stays the same across the job's versions, as Nomad keeps a
// policy's ID while its target is unchanged.

import { createHash } from 'node:crypto';
import type { ScalingPolicy, ScalingPolicyListStub } from '../api/index.js';
import type { TaskGroup } from './job.js';
import type { Job } from './stored-job.js';

/** The only policy type a group's block makes. */
export const HORIZONTAL = 'horizontal';

/** A UUID-shaped ID from the policy's target. Pure. */
export function scalingPolicyId(namespace: string, jobId: string, group: string): string {
  const h = createHash('sha256').update(`scaling\0${namespace}\0${jobId}\0${group}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** The group's policy in Nomad's shape, or undefined when it has no scaling block. Pure. */
export function scalingPolicyOf(job: Pick<Job, 'namespace' | 'id' | 'createIndex' | 'modifyIndex'>, group: Pick<TaskGroup, 'name' | 'count' | 'scaling'>): ScalingPolicy | undefined {
  const s = group.scaling;
  if (!s) return undefined;
  return {
    ID: scalingPolicyId(job.namespace, job.id, group.name),
    Namespace: job.namespace,
    Target: { Namespace: job.namespace, Job: job.id, Group: group.name },
    Type: HORIZONTAL,
    Min: s.min ?? group.count,
    Max: s.max,
    Policy: s.policy ?? {},
    Enabled: s.enabled,
    CreateIndex: job.createIndex,
    ModifyIndex: job.modifyIndex,
  };
}

/** Every scaling policy of `jobs`, sorted by ID as Nomad lists them. Pure. */
export function scalingPolicies(jobs: Iterable<Job>): ScalingPolicy[] {
  const out: ScalingPolicy[] = [];
  for (const job of jobs) {
    for (const g of job.groups) {
      const p = scalingPolicyOf(job, g);
      if (p) out.push(p);
    }
  }
  return out.sort((a, b) => (a.ID < b.ID ? -1 : a.ID > b.ID ? 1 : 0));
}

/** A policy's row in GET /v1/scaling/policies. Pure. */
export function scalingPolicyStub(p: ScalingPolicy): ScalingPolicyListStub {
  return { ID: p.ID, Enabled: p.Enabled ?? true, Type: p.Type, Target: p.Target, CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex };
}

/** Why `count` is outside the group's scaling bounds (Nomad's words), or undefined. Pure. */
export function scalingBoundsProblem(group: Pick<TaskGroup, 'count' | 'scaling'>, count: number): string | undefined {
  const s = group.scaling;
  if (!s) return undefined;
  const min = s.min ?? group.count;
  if (count < min) return `group count was less than scaling policy minimum: ${count} < ${min}`;
  if (count > s.max) return `group count was greater than scaling policy maximum: ${count} > ${s.max}`;
  return undefined;
}
