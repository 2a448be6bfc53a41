// A job's new version taken in place by a running allocation (the server
// moved it without a stop): each task's changed resources go to its cgroup
// live where the driver and kernel allow, else at its next start, with a
// "Resources Updated" task event; the group's restart policy is taken too.
// Apart from the allocation's lifecycle (alloc-runner.ts), which calls it
// from update().

import type { Logger } from '../../lib/index.js';
import type { Job } from '../../structs/index.js';
import { TASK_EVENTS, type TaskRunner } from '../taskrunner/index.js';

/**
 * Applies the resources of `job`'s version of the group to every task whose
 * resources changed (live in its cgroup where the driver and kernel allow,
 * at its next start otherwise), with a "Resources Updated" task event.
 * Never throws.
 */
export async function updateInPlace(job: Job, groupName: string, tasks: ReadonlyMap<string, TaskRunner>, logger: Logger): Promise<void> {
  const group = job.groups.find((g) => g.name === groupName);
  // The group's restart policy is taken in place too (Nomad's task runner updates its restart tracker).
  if (group) for (const runner of tasks.values()) runner.setRestartPolicy(group.restart);
  for (const task of group?.tasks ?? []) {
    const runner = tasks.get(task.name);
    if (!runner || JSON.stringify(runner.task.resources) === JSON.stringify(task.resources)) continue;
    const live = await runner.updateResources(task.resources);
    const r = task.resources;
    const what = [`memory ${r.memoryMb} MB`, r.memoryMaxMb ? `memory max ${r.memoryMaxMb} MB` : '', `cpu ${r.cpuMhz} MHz`, r.cores ? `cores ${r.cores}` : '', r.pidsMax ? `pids ${r.pidsMax}` : '']
      .filter(Boolean)
      .join(', ');
    runner.event(
      TASK_EVENTS.resourcesUpdated,
      live ? `Resources updated in place: ${what}` : `Resources updated: ${what} (applied at the next start)`,
      { memoryMb: String(r.memoryMb), cpuMhz: String(r.cpuMhz), live: String(live) },
    );
    logger.info({ task: task.name, live, memoryMb: r.memoryMb, cpuMhz: r.cpuMhz }, 'task resources updated');
  }
}
