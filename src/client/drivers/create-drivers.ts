import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { Clock, Logger } from '../../lib/index.js';
import { detectCgroups, type Cgroups } from '../cgroups/index.js';
import { DockerDriver } from './docker/index.js';
import { ExecDriver } from './exec-driver.js';
import { sharedExecutorHosts } from './executor-driver.js';
import type { ExecutorHosts } from './_executor-hosts.js';
import { RawExecDriver } from './raw-exec-driver.js';
import type { TaskConfig, TaskDriver } from './task-driver.js';

/**
 * Berth's drivers by name ('raw_exec', 'exec', 'docker'), their state under
 * `stateDir/<driver>`. Keep stateDir short: control sockets live below it.
 * `cgroups` is the hierarchy tasks are put in; left out, it is detected here
 * (once, logged) with the parent group `berth/<hash of stateDir>`; null
 * means none (limits are not enforced).
 */
export function createDrivers(opts: {
  stateDir: string;
  logger?: Logger;
  clock?: Clock;
  cgroups?: Cgroups | null;
  /** Fault injection for tests (ExecutorDriverOptions.afterTaskStarted). */
  afterTaskStarted?: (cfg: TaskConfig) => void;
  /** Tasks per executor process (ExecutorDriverOptions.tasksPerExecutor); default 1, each task its own. */
  tasksPerExecutor?: number;
  /** Keep a spare shared executor, one for raw_exec and exec (ExecutorDriverOptions.spareExecutor). */
  spareExecutor?: boolean;
  /**
   * raw_exec's and exec's shared executors when made ahead (driverExecutorHosts with the same stateDir), so
   * that their spare could start before the drivers are built; `tasksPerExecutor` and `spareExecutor` are then
   * theirs. Left out, made here.
   */
  executorHosts?: ExecutorHosts;
  /** The agent's `plugin "docker" { config {} }`; a wrong one throws DriverError naming the field. */
  dockerConfig?: Record<string, unknown>;
  /** `file:line:col` of a path in that block (`config.volumes.enabled`), for its problems. */
  locateDockerConfig?: (configPath: string) => string | undefined;
}): Map<string, TaskDriver> {
  let cgroups = opts.cgroups;
  if (cgroups === undefined) {
    // One parent per agent (by its state dir), so that agents sharing a host never reap each other's tasks.
    cgroups = detectCgroups({ parent: `berth/${createHash('sha256').update(opts.stateDir).digest('hex').slice(0, 12)}` });
    const log = opts.logger?.child({ component: 'cgroups' });
    if (cgroups) log?.info({ version: cgroups.version, controllers: cgroups.controllers }, 'task cgroups enabled');
    else log?.warn('no usable cgroups: task resources are not enforced, stop kills by process group only, and jobs with memory_enforced are not placed here');
  }
  // One set of shared executors for raw_exec and exec: an executor runs a task as its config says
  // (mode, isolation, cgroup, user, its own cwd), whichever driver asked, so one spare serves the first
  // task of either, and an agent's start spawns one Node process for them, not one a driver.
  const executorHosts = opts.executorHosts ?? driverExecutorHosts(opts);
  const common = {
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.afterTaskStarted ? { afterTaskStarted: opts.afterTaskStarted } : {}),
    ...(executorHosts ? { executorHosts } : {}),
    cgroups,
  };
  return new Map<string, TaskDriver>([
    ['raw_exec', new RawExecDriver({ ...common, stateDir: join(opts.stateDir, 'raw_exec') })],
    ['exec', new ExecDriver({ ...common, stateDir: join(opts.stateDir, 'exec') })],
    [
      'docker',
      new DockerDriver({
        stateDir: join(opts.stateDir, 'docker'),
        ...(opts.dockerConfig ? { pluginConfig: opts.dockerConfig } : {}),
        ...(opts.locateDockerConfig ? { locate: opts.locateDockerConfig } : {}),
        ...(opts.logger ? { logger: opts.logger } : {}),
        ...(opts.clock ? { clock: opts.clock } : {}),
      }),
    ],
  ]);
}

/**
 * The shared executors createDrivers gives raw_exec and exec under `stateDir` (createDrivers' own), made
 * ahead of the drivers: an agent starts their spare (`warm()`) before its server, so that the spare's Node
 * start runs on another core meanwhile; pass them to createDrivers as `executorHosts`. Undefined with one
 * task an executor. Does not block; starts nothing by itself.
 */
export function driverExecutorHosts(opts: { stateDir: string; tasksPerExecutor?: number; spareExecutor?: boolean; logger?: Logger }): ExecutorHosts | undefined {
  return sharedExecutorHosts(join(opts.stateDir, 'executors'), opts);
}
