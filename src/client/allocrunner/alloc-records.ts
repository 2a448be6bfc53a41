// What an allocation runner writes down to be restored after an agent restart.

import type { Allocation, Job } from '../../structs/index.js';
import type { ClientStateStore } from '../state/index.js';

/** The client state bucket of allocation runners, keyed by allocation ID. */
export const ALLOC_RUNNERS_BUCKET = 'alloc-runners';

/** Where the runner is in its life. */
export type AllocPhase = 'new' | 'prerun' | 'running' | 'postrun' | 'done';

/** One CSI volume of the allocation, as far as the CSI hook got with it. */
export interface CsiVolumeRecord {
  volumeId: string;
  namespace: string;
  /** 'claiming' is written before the claim is sent, so a crash never leaks it. */
  state: 'claiming' | 'claimed' | 'mounted';
  readOnly: boolean;
  pluginId?: string;
  externalId?: string;
  context?: Record<string, string>;
  publishContext?: Record<string, string>;
  accessMode?: string;
  attachmentMode?: string;
  fsType?: string;
  /** The host path the volume is published at. */
  source?: string;
}

export interface AllocRunnerRecord {
  alloc: Allocation;
  /** The job with every mount flag removed (they may carry credentials). */
  job: Job;
  phase: AllocPhase;
  /** Set when prerun failed: why the allocation failed. */
  failure?: string;
  /** Set when the group's max_run_duration stopped it (it completes then). */
  maxRunExceeded?: boolean;
  /** The group's network namespace; `driver` names the driver that made it (a driver that must initiate the network). */
  /** `labels`: what the driver that made the namespace said of it (see RunnerDriver.createNetwork). */
  /** `attached`: the agent attached a driver's namespace (false or absent while it has not yet). */
  network?: { path: string; driver?: string; mode?: string; address?: string; interface?: string; labels?: Record<string, string>; attached?: boolean };
  /** CSI volumes by group volume name. */
  csi: Record<string, CsiVolumeRecord>;
  /** Bind mounts the runner made into task directories (drivers without mount support). */
  binds: string[];
}

/** A job copy safe to write down: mount flags dropped. */
export function jobWithoutMountFlags(job: Job): Job {
  return {
    ...job,
    groups: job.groups.map((g) => ({
      ...g,
      volumes: Object.fromEntries(
        Object.entries(g.volumes).map(([name, vol]) => [name, vol.mountOptions ? { ...vol, mountOptions: { ...vol.mountOptions, mountFlags: [] } } : vol]),
      ),
    })),
  };
}

/**
 * The allocations whose runners are saved in `store`, with their (mount-flag
 * free) jobs, for the agent to rebuild runners after a restart. Synchronous.
 */
export function savedAllocRunners(store: ClientStateStore): Array<{ alloc: Allocation; job: Job; phase: AllocPhase }> {
  return store
    .bucket<AllocRunnerRecord>(ALLOC_RUNNERS_BUCKET)
    .list()
    .map(({ value }) => ({ alloc: value.alloc, job: value.job, phase: value.phase }));
}
