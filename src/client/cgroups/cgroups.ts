// The contract both cgroup backends (v1, v2) keep: one group per task under
// a Berth parent group, with its limits, its processes, its OOM count and its
// usage. Plain data in and out; a TaskCgroup is JSON the driver persists in a
// task handle and hands to the executor.

/** What a task asks of its group, in job-file units. */
export interface CgroupLimits {
  /** `memory`: the reservation; the hard limit too unless memoryMaxMb is set. */
  memoryMb: number;
  /** `memory_max`: the hard ceiling when oversubscribing (>= memoryMb). */
  memoryMaxMb?: number;
  /** `cpu`: relative weight (v1 cpu.shares = MHz; v2 cpu.weight derived from it). */
  cpuMhz: number;
  /** `cores`: a hard CPU quota of this many cores' time per period. */
  cores?: number;
  /** `pids`: the most processes and threads the task may have. */
  pidsMax?: number;
}

/** A task's group as JSON: enough for the executor (and a later agent) to join, kill and read it. */
export interface TaskCgroup {
  version: 'v1' | 'v2';
  /** `<allocId>.<task>`. */
  name: string;
  /** Every directory of the group (one per v1 controller, one on v2); a pid written to `<dir>/cgroup.procs` of each joins it. */
  dirs: string[];
  /** Directory with the freeze control (v1 freezer.state, v2 cgroup.freeze/cgroup.kill), if any. */
  freezerDir?: string;
  /** Directory with the memory controller's files, if the memory controller is there. */
  memoryDir?: string;
}

/** Which limits a backend can enforce here. */
export interface CgroupControllers {
  memory: boolean;
  cpu: boolean;
  pids: boolean;
  freezer: boolean;
}

/** Usage read from a task's group. Absent numbers mean the controller is not there. */
export interface CgroupStats {
  memory: { rssBytes: number; cacheBytes: number; usageBytes: number; maxUsageBytes: number };
  cpu: { userMs: number; systemMs: number; totalMs: number; throttledPeriods: number; throttledMs: number };
  /** Host pids of every process in the group. */
  pids: number[];
  oomKills: number;
}

/**
 * A cgroup hierarchy Berth can put tasks in. Calls are synchronous file
 * writes in cgroupfs (microseconds) except create (off the event loop: a
 * new memory group costs the kernel a while), killAll and remove, which wait
 * for the kernel to empty the group.
 */
export interface Cgroups {
  readonly version: 'v1' | 'v2';
  readonly controllers: CgroupControllers;
  /** Creates the task's group with `limits` (safe to repeat: an existing group gets the limits). Throws CgroupError CGROUP_CREATE_FAILED / CGROUP_LIMIT_FAILED. */
  create(name: string, limits: CgroupLimits): Promise<TaskCgroup>;
  /** Makes a group with limits and removes it, synchronously: throws (CgroupError or a file system error) when Berth may not manage groups here. */
  probe(): void;
  /** Changes a live group's limits; a memory limit below current usage makes the kernel reclaim or OOM-kill. Throws CGROUP_LIMIT_FAILED. */
  update(group: TaskCgroup, limits: CgroupLimits): void;
  /** Moves a process into the group (its children follow). Throws CGROUP_CREATE_FAILED. */
  join(group: TaskCgroup, pid: number): void;
  /** Host pids in the group; [] when it is gone. */
  pids(group: TaskCgroup): number[];
  /**
   * Kills every process in the group and resolves once it is empty: freezes
   * it first (so nothing forks meanwhile), SIGKILLs all, thaws. Safe on an
   * empty or removed group. Rejects with CGROUP_KILL_FAILED, or AbortedError.
   */
  killAll(group: TaskCgroup, opts?: { signal?: AbortSignal }): Promise<void>;
  /** How many times the kernel's OOM killer killed a process of the group (0 when unknown). */
  oomKills(group: TaskCgroup): number;
  stats(group: TaskCgroup): CgroupStats;
  /** Kills what is left, then removes the group. Safe to repeat. Rejects with CGROUP_REMOVE_FAILED. */
  remove(group: TaskCgroup, opts?: { signal?: AbortSignal }): Promise<void>;
  /** Groups under the Berth parent, e.g. after an agent restart, to find tasks no longer run. */
  list(): TaskCgroup[];
  /** Removes the Berth parent group if no task group is left in it (the next create makes it again). Never throws. */
  prune(): void;
}

/** The group name of a task: `<allocId>.<task>`. */
export function taskCgroupName(allocId: string, taskName: string): string {
  return `${allocId}.${taskName}`;
}

/** v1 cpu.shares for `cpu` MHz (the kernel takes 2..262144). */
export function cpuShares(cpuMhz: number): number {
  return Math.min(262144, Math.max(2, Math.round(cpuMhz)));
}

/** v2 cpu.weight for `cpu` MHz: the kernel's shares-to-weight mapping (1..10000). */
export function cpuWeight(cpuMhz: number): number {
  const shares = cpuShares(cpuMhz);
  return Math.min(10000, Math.max(1, Math.round(1 + ((shares - 2) * 9999) / 262142)));
}

export const CPU_PERIOD_US = 100_000;
