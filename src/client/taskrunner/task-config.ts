// What the task runner hands its driver for one start: the task's spec with
// run-time `${...}` expanded by its TaskEnv (Nomad's taskenv does the same
// for driver config), its environment, directories, mounts, limits.

import type { Allocation, Task } from '../../structs/index.js';
import type { TaskDir } from '../allocdir/index.js';
import { TaskEnvBuilder, taskEnvDirs, type TaskEnv } from '../taskenv/index.js';
import type { RunnerDriver, RunnerTaskConfig, RunnerTaskResources, TaskMount } from './driver-port.js';
import { TaskRunnerError } from './task-runner-error.js';
import type { TaskRunnerOptions } from './task-runner-options.js';

export interface RunnerTaskConfigInput {
  alloc: Allocation;
  task: Task;
  driver: RunnerDriver;
  taskDir: TaskDir;
  allocDir: string;
  /** The number of this start (1 for the first). */
  attempt: number;
  taskEnv: TaskEnv;
  mounts: TaskMount[];
  killTimeoutMs: number;
  fenceAfterMs?: number;
  /** The job's namespace, for an external plugin's TaskConfig. */
  namespace?: string;
  network?: TaskRunnerOptions['network'];
  /** The group's network mode; default `host`. */
  networkMode?: string;
  /** The allocation's ports as the driver is to publish them; default the allocation's. */
  ports?: () => RunnerTaskConfig['ports'];
}

/**
 * The driver's config of one start, and the `${...}` references in the
 * task's config and env that named nothing (left as written). Pure. Throws
 * TaskRunnerError TASK_BAD_CONFIG (not recoverable) when a built-in driver's
 * command or args are not what it needs.
 */
export function runnerTaskConfig(i: RunnerTaskConfigInput): { cfg: RunnerTaskConfig; unresolved: string[] } {
  const { alloc, task, taskEnv } = i;
  const config = taskEnv.interpolateAll(task.config);
  const command = config['command'];
  const args = config['args'] ?? [];
  const own = i.driver.takesDriverConfig === true;
  if (!own && (typeof command !== 'string' || command === '')) {
    throw new TaskRunnerError('TASK_BAD_CONFIG', `task ${task.name}: config.command must be a non-empty string`, { recoverable: false });
  }
  if (!own && (!Array.isArray(args) || !args.every((a) => typeof a === 'string'))) {
    throw new TaskRunnerError('TASK_BAD_CONFIG', `task ${task.name}: config.args must be a list of strings`, { recoverable: false });
  }
  const td = i.taskDir;
  const cfg: RunnerTaskConfig = {
    id: `${alloc.id}.${task.name}.${i.attempt}`,
    allocId: alloc.id,
    taskName: task.name,
    command: typeof command === 'string' ? command : '',
    args: Array.isArray(args) ? (args as string[]) : [],
    env: { ...taskEnv.env },
    taskDir: td.localDir,
    allocDir: i.allocDir,
    secretsDir: td.secretsDir,
    mounts: i.mounts,
    logs: { disabled: task.logs.disabled, dir: td.logsDir, maxFiles: task.logs.maxFiles, maxFileSizeMb: task.logs.maxFileSizeMb },
    killTimeoutMs: i.killTimeoutMs,
    resources: runnerResources(task.resources),
    ...(task.user ? { user: task.user } : {}),
    ...(i.fenceAfterMs ? { fence: { afterMs: i.fenceAfterMs } } : {}),
    // External plugins get the whole config, expanded, and decode it against their schema.
    ...(own ? { driverConfig: config, jobId: alloc.jobId, jobName: alloc.jobId, groupName: alloc.taskGroup, nodeId: alloc.nodeId, namespace: i.namespace ?? 'default' } : {}),
  };
  // Every driver learns the allocation's network: a container driver publishes the ports and joins the namespace itself.
  cfg.networkMode = i.networkMode ?? 'host';
  cfg.ports = (i.ports?.() ?? alloc.ports ?? []).map((p) => ({ label: p.label, value: p.value, to: p.to, hostIp: p.hostIp }));
  const net = i.network?.();
  if (net?.path) {
    cfg.networkNamespacePath = net.path;
    if (net.labels && Object.keys(net.labels).length) cfg.networkLabels = { ...net.labels };
    if (net.address) cfg.networkAddress = net.address;
  }
  return { cfg, unresolved: taskEnv.unresolved([task.config, task.env]) };
}

/** The environment of a task runner given no builder: what the allocation and the task say, no node attributes. */
export function defaultTaskEnv(opts: { alloc: Allocation; task: Task; taskDir: TaskDir }, fsIsolation: RunnerDriver['capabilities']['fsIsolation']): TaskEnvBuilder {
  const { alloc, task } = opts;
  return new TaskEnvBuilder({
    alloc,
    job: { id: alloc.jobId },
    group: { name: alloc.taskGroup },
    task,
    node: { id: alloc.nodeId, name: '', datacenter: '', attributes: {}, meta: {} },
    ...taskEnvDirs(opts.taskDir, fsIsolation),
  });
}

/** The driver's view of a task's `resources`: what its cgroup enforces. */
export function runnerResources(r: Task['resources']): RunnerTaskResources {
  return {
    cpuMhz: r.cpuMhz,
    memoryMb: r.memoryMb,
    ...(r.memoryMaxMb !== undefined ? { memoryMaxMb: r.memoryMaxMb } : {}),
    ...(r.cores !== undefined ? { cores: r.cores } : {}),
    ...(r.pidsMax !== undefined ? { pidsMax: r.pidsMax } : {}),
  };
}
