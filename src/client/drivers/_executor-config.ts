// What a task's start writes down twice: the config its executor reads
// (executor.mjs: the command as run, its environment and directories, mounts,
// logs, cgroup and lease) and the handle the agent keeps (the client state
// holds it; recoverTask finds the executor and the task by it after a
// restart). Both come from the task's TaskConfig and the places its start
// made for it; the start itself is executor-driver.ts. Private to
// src/client/drivers.

import type { TaskCgroup } from '../cgroups/index.js';
import type { TaskConfig, TaskHandle } from './task-driver.js';

/** What a start made for the task: its state dir and control socket, its cgroup and lease file when it has them. */
export interface ExecutorPlace {
  stateDir: string;
  socketPath: string;
  cgroup: TaskCgroup | undefined;
  leaseFile: string | undefined;
}

/** The executor's config; `run` is the command as run (as the task's user, when it names one). Pure. */
export function executorConfig(mode: 'raw_exec' | 'exec', cfg: TaskConfig, run: { command: string; args: string[] }, place: ExecutorPlace) {
  const { stateDir, socketPath, cgroup, leaseFile } = place;
  return {
    mode,
    taskId: cfg.id,
    taskName: cfg.taskName,
    command: run.command,
    args: run.args,
    env: cfg.env,
    taskDir: cfg.taskDir,
    allocDir: cfg.allocDir,
    secretsDir: cfg.secretsDir,
    mounts: cfg.mounts,
    networkNamespacePath: cfg.networkNamespacePath,
    logs: {
      disabled: cfg.logs.disabled,
      dir: cfg.logs.dir,
      maxFiles: cfg.logs.maxFiles,
      maxFileBytes: Math.round(cfg.logs.maxFileSizeMb * 1024 * 1024),
      ...(cfg.logs.fifos ? { fifos: cfg.logs.fifos } : {}),
    },
    stateDir,
    socketPath,
    ...(cgroup ? { cgroup } : {}),
    ...(leaseFile && cfg.fence ? { lease: { file: leaseFile, ms: cfg.fence.afterMs, killTimeoutMs: cfg.killTimeoutMs } } : {}),
  };
}

/** The task's handle before its executor runs: the executor's and the task's pids and start ticks are filled in as they come up. Pure. */
export function newTaskHandle(mode: 'raw_exec' | 'exec', cfg: TaskConfig, place: ExecutorPlace, startedAt: number): TaskHandle {
  const { stateDir, socketPath, cgroup, leaseFile } = place;
  return {
    version: 1,
    driver: mode,
    taskId: cfg.id,
    allocId: cfg.allocId,
    taskName: cfg.taskName,
    executorPid: 0,
    executorStartTicks: 0,
    taskPid: 0,
    taskStartTicks: 0,
    stateDir,
    socketPath,
    taskDir: cfg.taskDir,
    ...(cfg.networkNamespacePath ? { networkNamespacePath: cfg.networkNamespacePath } : {}),
    logs: { disabled: cfg.logs.disabled, dir: cfg.logs.dir },
    ...(cgroup ? { cgroup } : {}),
    ...(leaseFile ? { leaseFile } : {}),
    startedAt,
  };
}
