// What the allocation runner gives each task runner besides its driver: the
// task's environment (client/taskenv) from the allocation, the job, the group
// and the node; and the stand-in for a driver the node does not have.

import type { Job, TaskGroup, Task, TaskState, Allocation } from '../../structs/index.js';
import type { TaskDir } from '../allocdir/index.js';
import { TaskEnvBuilder, taskEnvDirs, type TaskEnvNetwork, type TaskEnvNode } from '../taskenv/index.js';
import type { RunnerDriver } from '../taskrunner/index.js';
import { AllocRunnerError } from './alloc-hook.js';

/**
 * The environment builder of one task of an allocation. `network` reads the
 * allocation's own network (bridge/CNI address) at each build: the network
 * hook makes it after the builders exist. Pure.
 */
export function taskEnvBuilder(
  o: { alloc: Allocation; job: Job; node?: TaskEnvNode },
  group: TaskGroup,
  task: Task,
  taskDir: TaskDir,
  driver: RunnerDriver,
  network?: () => TaskEnvNetwork | undefined,
): TaskEnvBuilder {
  const node: TaskEnvNode = o.node ?? { id: o.alloc.nodeId, name: '', datacenter: '', attributes: {}, meta: {} };
  return new TaskEnvBuilder({
    alloc: { ...o.alloc, namespace: o.job.namespace },
    job: o.job,
    group,
    task,
    node,
    ...(network ? { network } : {}),
    ...taskEnvDirs(taskDir, driver.capabilities.fsIsolation),
  });
}

/** Stands in for a driver the node does not have; the drivers hook fails the allocation first. */
export function missingDriver(name: string): RunnerDriver {
  const fail = (): never => {
    throw new AllocRunnerError('ALLOC_DRIVER_MISSING', `task driver "${name}" is not available on this node`);
  };
  return {
    name,
    capabilities: { fsIsolation: 'none', networkModes: [], mountConfigs: 'none' },
    startTask: async () => fail(),
    recoverTask: async () => fail(),
    waitTask: async () => fail(),
    stopTask: async () => undefined,
    destroyTask: async () => undefined,
  };
}

/** `web` or, when the task said why it was not restarted, `web (command "/nope" does not exist ...)`. */
export function withReason(name: string, state: TaskState | undefined): string {
  const last = state?.events.findLast((e) => e.type === 'Not Restarting');
  const reason = last?.message.replace(/^Not restarting: /, '');
  return reason ? `${name} (${reason})` : name;
}
