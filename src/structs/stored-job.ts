// A job as the server stores it (the spec plus what the server manages:
// status, versions, indexes), the fields a submitted spec may carry back and
// that are dropped, and the public view every read and event gets.

import type { GroupVolume, JobSpec } from './job.js';

export type JobStatus = 'pending' | 'running' | 'dead';

/** A job as the server stores it: the spec plus what the server manages. */
export interface Job extends JobSpec {
  /** True once the job was stopped; its allocations are told to stop. */
  stop: boolean;
  status: JobStatus;
  /** Increases by one on every spec change (not on stop/start alone). */
  version: number;
  /**
   * The job version at which each group's spec last changed other than in its
   * count or its tasks' resource values; allocations older than this are replaced.
   */
  groupVersions: Record<string, number>;
  /**
   * The job version at which each group's tasks' resource values (memory,
   * memory_max, cpu, cores, pids) last changed; a live allocation older than
   * this but not than `groupVersions` is updated in place when the new
   * resources fit on its node. Absent on jobs stored before it existed (then
   * `groupVersions` stands for it).
   */
  groupResourceVersions?: Record<string, number>;
  /** Milliseconds since the epoch. */
  submitTime: number;
  /**
   * The store index of the latest registration (a resubmission of an
   * unchanged spec included). A terminal allocation created before it may be
   * placed again: a resubmission is how an operator says "run this now".
   * Absent on jobs stored before it existed.
   */
  submitIndex?: number;
  createIndex: number;
  modifyIndex: number;
  /** A child of a periodic or parameterized job: that job's ID. */
  parentId?: string;
  /** A child launched by `job dispatch`. */
  dispatched?: boolean;
  /** The dispatch payload, base64 (a child of a parameterized job only). */
  payload?: string;
}

/** Fields of a stored job that a submitted spec may carry (a read sent back) and that are ignored. */
export const SERVER_JOB_FIELDS = [
  'stop',
  'status',
  'version',
  'groupVersions',
  'groupResourceVersions',
  'submitTime',
  'submitIndex',
  'createIndex',
  'modifyIndex',
  'parentId',
  'dispatched',
  'payload',
] as const;

/**
 * A job's modify index as Nomad's JobModifyIndex means it (what `job run
 * -check-index` compares): the index of its latest registration; 0 for no
 * job. Pure.
 */
export function jobModifyIndex(job: Job | undefined): number {
  return job ? (job.submitIndex ?? job.modifyIndex) : 0;
}

/** The spec of a stored job: the server's fields dropped. Pure. */
export function specOfJob(job: Job): JobSpec {
  const { stop: _s, status: _st, version: _v, groupVersions: _g, groupResourceVersions: _r, submitTime: _t, submitIndex: _si, createIndex: _c, modifyIndex: _m, ...spec } = job;
  return spec;
}

const REDACTED_FLAG = '[REDACTED]';

/**
 * The public view of a job, for every read and event: each group volume's
 * mount flags (which may carry credentials) shown as [REDACTED]. Pure.
 */
export function publicJob<J extends JobSpec>(job: J): J {
  let changed = false;
  const groups = job.groups.map((g) => {
    const volumes: Record<string, GroupVolume> = {};
    for (const [name, vol] of Object.entries(g.volumes)) {
      if (vol.mountOptions?.mountFlags.length) {
        changed = true;
        volumes[name] = { ...vol, mountOptions: { ...vol.mountOptions, mountFlags: vol.mountOptions.mountFlags.map(() => REDACTED_FLAG) } };
      } else volumes[name] = vol;
    }
    return { ...g, volumes };
  });
  return changed ? { ...job, groups } : job;
}
