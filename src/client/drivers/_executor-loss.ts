// What the executor drivers do about an executor that is gone or not yet
// seen: whether a task's executor still runs it, completing a handle
// recorded at spawn (the agent died while the executor started the task),
// and the exit of a task whose executor was lost. Private to src/client/drivers.

import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock, Logger, SignalFanout } from '../../lib/index.js';
import { DriverError } from './driver-error.js';
import { readExitRecord, readStartedRecord } from './_executor-hosts.js';
import { isAlive } from './_proc.js';
import { killGroup, killPid } from './_host.js';
import type { ExitResult, TaskHandle } from './task-driver.js';

const ORPHAN_POLL_MS = 250;
/** How long recoverTask waits for an executor that was still starting its task when the agent died. */
const START_WAIT_MS = 15_000;

/**
 * Whether the task's executor still runs it: its own process alive, or
 * (shared) the shared process alive and the task's socket not yet removed
 * (it goes once the exit is recorded) or the task not yet reported started.
 */
export function executorAlive(handle: TaskHandle): boolean {
  if (!isAlive(handle.executorPid, handle.executorStartTicks)) return false;
  if (!handle.sharedExecutor) return true;
  return existsSync(handle.socketPath) || !existsSync(join(handle.stateDir, 'started.json'));
}

/**
 * A handle recorded at spawn (no task pid yet: the agent died while the
 * executor was starting the task): fills in the pids from the executor's
 * started.json, waiting while the executor still runs without one. When
 * the executor is gone and never wrote it, whatever it may have left in
 * the task's cgroup is killed and DRIVER_TASK_NOT_RECOVERABLE thrown.
 */
export async function completeSpawnedHandle(
  saved: TaskHandle,
  clock: Clock,
  untilStopping: SignalFanout,
  killCgroup: (rec: { handle: TaskHandle }) => Promise<void>,
): Promise<TaskHandle> {
  const deadline = clock.now() + START_WAIT_MS;
  for (;;) {
    const started = readStartedRecord(saved);
    if (started) return { ...saved, ...started };
    if (readExitRecord(saved)) return saved;
    if (!executorAlive(saved) || clock.now() >= deadline) break;
    await untilStopping.run((signal) => clock.sleep(20, signal));
  }
  // A shared executor runs other tasks too: it never got (or lost) this one, and stays.
  if (!saved.sharedExecutor && isAlive(saved.executorPid, saved.executorStartTicks)) killPid(saved.executorPid, 'SIGKILL');
  await killCgroup({ handle: saved });
  await rm(saved.stateDir, { recursive: true, force: true });
  throw new DriverError('DRIVER_TASK_NOT_RECOVERABLE', `task ${saved.taskName}: its executor ended before it reported the task started`);
}

/**
 * The executor is gone without a record (SIGKILLed): nothing captures the task's output or will
 * record its exit. The task goes with it (group and cgroup) and is reported dead, so that the
 * restart policy starts it again under a new executor. Resolves with the exit to report.
 */
export async function lostExecutorExit(
  handle: TaskHandle,
  clock: Clock,
  logger: Logger,
  killCgroup: (rec: { handle: TaskHandle }) => Promise<void>,
  signal: AbortSignal,
): Promise<ExitResult & { finishedAt: number }> {
  const wasRunning = isAlive(handle.taskPid, handle.taskStartTicks);
  if (wasRunning) {
    logger.warn({ taskId: handle.taskId, task: handle.taskName, pid: handle.taskPid }, 'task executor lost; killing the task');
    killGroup(handle.taskPid, 'SIGKILL');
  }
  await killCgroup({ handle });
  for (let i = 0; i < 250 && isAlive(handle.taskPid, handle.taskStartTicks); i++) await clock.sleep(ORPHAN_POLL_MS / 10, signal);
  return {
    exitCode: -1,
    signal: wasRunning ? 'SIGKILL' : null,
    oomKilled: false,
    message: wasRunning
      ? "the task's executor was lost (killed); the task was killed with it"
      : 'the task ended while its executor was gone; its exit status is unknown',
    finishedAt: clock.now(),
  };
}
