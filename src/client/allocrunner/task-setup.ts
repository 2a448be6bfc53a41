// What the allocation runner gives each task runner besides its driver: the
// task's environment (client/taskenv) from the allocation, the job, the group
// and the node; and the stand-in for a driver the node does not have.

import type { Job, TaskGroup, Task, TaskState, Allocation, AllocatedPort } from '../../structs/index.js';
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
    alloc: { ...o.alloc, namespace: o.job.namespace, ports: taskPorts(o.alloc, group, driver) },
    job: o.job,
    group,
    task,
    node,
    ...(network ? { network } : {}),
    ...taskEnvDirs(taskDir, driver.capabilities.fsIsolation),
  });
}

/**
 * The allocation's ports as a task of `driver` sees them. The scheduler
 * gives a host-mode port `to` = its host port: right for a task on the
 * host's network. A container driver (`fsIsolation: image`) publishes
 * each port on its own bridge, host port -> the group's `to` (Nomad keeps
 * `to` in every mode), so its task listens on `to` (NOMAD_PORT_<label>)
 * and the driver maps the host port to it. Pure.
 */
export function taskPorts(alloc: Pick<Allocation, 'ports'>, group: TaskGroup, driver: RunnerDriver): AllocatedPort[] {
  const ports = alloc.ports ?? [];
  if (group.network.mode !== 'host' || driver.capabilities.fsIsolation !== 'image') return [...ports];
  const wanted = new Map(group.network.ports.map((p) => [p.label, p.to]));
  return ports.map((p) => {
    const to = wanted.get(p.label);
    return to !== undefined && to > 0 ? { ...p, to } : p;
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
