// A job's canonical form (Nomad's Job.Canonicalize), the last steps of its
// schema: what a block left out is filled from the job or from the group.
// Each transform is pure and idempotent, so a stored job parses to itself.

import { groupReschedulePolicy, groupRestartPolicy, type RescheduleInput, type ReschedulePolicy, type RestartInput, type RestartPolicy } from './restart-policy.js';
import { mergeUpdate, type UpdateInput, type UpdateStrategy } from './update-strategy.js';

/** A scaling block's min, when left out, is the group's count at registration (Nomad's Canonicalize). Idempotent. */
export function canonicalScaling<J extends { groups: Array<{ count: number; scaling?: { min?: number | undefined } | undefined }> }>(job: J): J {
  if (!job.groups.some((g) => g.scaling && g.scaling.min === undefined)) return job;
  return { ...job, groups: job.groups.map((g) => (g.scaling && g.scaling.min === undefined ? { ...g, scaling: { ...g.scaling, min: g.count } } : g)) };
}

/**
 * The job's update block merged into each group's (Nomad's Job.Canonicalize):
 * a group's own fields win, the job's fill the rest, Nomad's defaults what
 * neither gives. Idempotent, so a stored job parses to itself.
 */
export function canonicalUpdates<J extends { update?: UpdateInput | undefined; groups: Array<{ update?: UpdateInput | undefined }> }>(
  job: J,
): Omit<J, 'update' | 'groups'> & { update?: UpdateStrategy; groups: Array<Omit<J['groups'][number], 'update'> & { update?: UpdateStrategy }> } {
  type Out = ReturnType<typeof canonicalUpdates<J>>;
  const { update, groups, ...rest } = job;
  const out = {
    ...rest,
    groups: groups.map(({ update: own, ...g }) => (own || update ? { ...g, update: mergeUpdate(update, own) } : g)),
  } as Out;
  return update ? { ...out, update: mergeUpdate(update) } : out;
}

/**
 * Each group's restart and reschedule policies filled in (Nomad's
 * TaskGroup.Canonicalize): the group's fields, then the job's reschedule
 * block's, then the job type's defaults (restart-policy.ts). A system job's
 * groups have no reschedule policy. Idempotent, so a stored job parses to
 * itself.
 */
export function canonicalPolicies<J extends { type: 'service' | 'batch' | 'system'; reschedule?: RescheduleInput | undefined; groups: Array<{ restart?: RestartInput | undefined; reschedule?: RescheduleInput | undefined }> }>(
  job: J,
): Omit<J, 'groups'> & { groups: Array<Omit<J['groups'][number], 'restart' | 'reschedule'> & { restart: RestartPolicy; reschedule?: ReschedulePolicy }> } {
  type Out = ReturnType<typeof canonicalPolicies<J>>;
  return {
    ...job,
    groups: job.groups.map(({ restart, reschedule, ...g }) => {
      const policy = groupReschedulePolicy(job.type, job.reschedule, reschedule);
      return { ...g, restart: groupRestartPolicy(job.type, restart), ...(policy ? { reschedule: policy } : {}) };
    }),
  } as Out;
}
