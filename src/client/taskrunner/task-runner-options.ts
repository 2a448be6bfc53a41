// What a task runner is given and what it writes down for a restart: the
// shapes its callers and its restore share, apart from the runner itself.

import type { Clock, Logger } from '../../lib/index.js';
import type { Allocation, JobType, RestartPolicy, Task, TaskState } from '../../structs/index.js';
import type { TaskDir } from '../allocdir/index.js';
import type { TaskEnvBuilder } from '../taskenv/index.js';
import type { ClientStateStore } from '../state/index.js';
import type { RunnerDriver, RunnerTaskHandle } from './driver-port.js';
import type { RestartTrackerState } from './restart-tracker.js';
import type { TaskHook } from './task-hook.js';

/** The client state bucket of task runners, keyed `<allocId>/<task>`. */
export const TASK_RUNNERS_BUCKET = 'task-runners';

/** What a task runner writes down to be restored after an agent restart. */
export interface TaskRunnerRecord {
  state: TaskState;
  /** The driver's handle of the running task, while one runs. */
  handle?: RunnerTaskHandle;
  taskId?: string;
  /** How many times the task was started. */
  attempt: number;
  restart: RestartTrackerState;
}

export interface TaskRunnerOptions {
  alloc: Allocation;
  task: Task;
  jobType: JobType;
  restartPolicy: RestartPolicy;
  driver: RunnerDriver;
  taskDir: TaskDir;
  /** The allocation directory root (`<allocDirRoot>/<allocId>`). */
  allocDir: string;
  store: ClientStateStore;
  hooks: TaskHook[];
  /** Told after every change of the task state (already persisted), with the live state: copy it to keep it. Must not throw. */
  onChange: (taskName: string, state: Readonly<TaskState>) => void;
  /** Told each time a start hands the task to its driver (its handle recorded, the driver about to run it; the start may still fail). Must not throw. */
  onHandedOff?: () => void;
  /** The agent's kill timeout; the task's kill_timeout overrides it. */
  killTimeoutMs: number;
  /** Builds the task's environment; default: from the allocation and the task alone (no node attributes). */
  taskEnv?: TaskEnvBuilder;
  /** Wait between a kill and the stop signal (the task's or its group's shutdown_delay). */
  shutdownDelayMs?: number;
  /** A lifecycle task that runs to completion (not a sidecar): a clean exit completes it even in a service job. */
  ephemeral?: boolean;
  /**
   * Fencing: the task is stopped on the node (by its executor, agent or not)
   * once no server was reached for this long, and not restarted. Set for
   * tasks of groups with single-writer volumes. Default none.
   */
  fenceAfterMs?: number;
  /** The job's namespace (told to external driver plugins). */
  namespace?: string;
  /**
   * The group's network namespace, when the group has one: its path, the
   * labels the driver that made it gave it (RunnerTaskConfig.networkLabels)
   * and the allocation's address in it.
   */
  network?: () => { path: string; labels?: Record<string, string>; address?: string } | undefined;
  /** The group's network mode (default `host`). */
  networkMode?: string;
  /** The allocation's ports as the driver is to publish them (see taskPorts of the allocation runner); default the allocation's. */
  ports?: () => Array<{ label: string; value: number; to: number; hostIp: string }>;
  logger?: Logger;
  clock?: Clock;
}
