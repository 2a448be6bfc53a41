// Task cgroups: a group per task under a Berth parent group, on cgroup v1 or
// v2 (detected at start), with its limits, kill-all, OOM count and usage.
export type { Cgroups, CgroupLimits, CgroupControllers, CgroupStats, TaskCgroup } from './cgroups.js';
export { taskCgroupName, cpuShares, cpuWeight } from './cgroups.js';
export { CgroupError, type CgroupErrorCode } from './cgroup-error.js';
export { CgroupV1, type CgroupV1Options } from './cgroup-v1.js';
export { CgroupV2, type CgroupV2Options } from './cgroup-v2.js';
export { detectCgroups, type DetectCgroupsOptions } from './detect-cgroups.js';
