// A job's canonical form (Nomad's Job.Canonicalize), the last steps of its
// schema: what a block left out is filled from the job or from the group.
// Each transform is pure and idempotent, so a stored job parses to itself.

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
