// One start of a task (Nomad's taskrunner prestart and poststart phases
// around the driver's StartTask): the prestart hooks in order, each seeing
// the environment the ones before it built; the task's driver config; the
// driver's start, with the handle recorded before the task can run; the
// poststart hooks once it runs. TaskRunner's run loop (task-runner.ts) calls
// it for each attempt; the run loop, restarts and the kill path stay there.

import { AbortedError, BerthError, describeError, type Clock, type Logger } from '../../lib/index.js';
import type { Task } from '../../structs/index.js';
import type { TaskEnv, TaskEnvBuilder } from '../taskenv/index.js';
import type { RunnerDriver, RunnerTaskConfig, RunnerTaskHandle } from './driver-port.js';
import { runnerTaskConfig } from './task-config.js';
import { TASK_EVENTS } from './task-events.js';
import type { PrestartRequest, TaskHookContext } from './task-hook.js';
import { TaskRunnerError } from './task-runner-error.js';
import type { TaskRunnerOptions, TaskRunnerRecord } from './task-runner-options.js';

/** What one start needs of its TaskRunner (read when used: the task follows in-place updates). */
export interface TaskStartPort {
  readonly opts: TaskRunnerOptions;
  readonly task: Task;
  readonly driver: RunnerDriver;
  readonly record: TaskRunnerRecord;
  readonly env: TaskEnvBuilder;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Aborted by kill(). */
  readonly killSignal: AbortSignal;
  readonly killing: boolean;
  readonly killTimeoutMs: number;
  /** Sets the environment of the current run (see TaskHookContext.taskEnv). */
  setRunEnv(env: TaskEnv): void;
  hookContext(): TaskHookContext;
  event(type: string, message: string, details?: Record<string, string>): void;
  eventSoon(type: string, message: string, details?: Record<string, string>): void;
  persist(): void;
  /** The record put with the others of this turn (one commit); resolves once it is durable. */
  persistLanded(): Promise<void>;
  /** The task was handed to its driver (its handle recorded): TaskRunnerOptions.onHandedOff. */
  handedOff(): void;
  stopProcess(): Promise<void>;
}

export async function startOnce(p: TaskStartPort, ctx: TaskHookContext): Promise<void> {
  const req: PrestartRequest = { env: {}, mounts: [], taskEnv: p.env.build({}, p.task) };
  p.record.state.state = 'pending';
  p.eventSoon(TASK_EVENTS.settingUp, 'Building the task directory and running prestart hooks');
  const signal = AbortSignal.any([p.killSignal, ctx.signal]);
  for (const hook of p.opts.hooks) {
    if (!hook.prestart) continue;
    req.taskEnv = p.env.build(req.env, p.task);
    try {
      await hook.prestart(req, { ...p.hookContext(), signal });
    } catch (err) {
      if (err instanceof BerthError && err.code !== 'ABORTED') throw err;
      throw new TaskRunnerError('TASK_BAD_CONFIG', `prestart hook ${hook.name} failed: ${describeError(err)}`, { cause: err });
    }
    if (p.killing) throw new AbortedError('the task was killed while it was being set up');
  }
  const runEnv = p.env.build(req.env, p.task);
  p.setRunEnv(runEnv);
  const cfg = taskConfig(p, req, runEnv);
  let handle: RunnerTaskHandle;
  let recordedAtSpawn = false;
  try {
    handle = await p.driver.startTask(cfg, {
      signal,
      // Recorded before the task can run: an agent killed during the start finds and adopts it (restore()).
      onSpawned: (spawned) => {
        p.record.handle = spawned;
        p.record.taskId = cfg.id;
        p.persist();
        recordedAtSpawn = true;
        p.handedOff();
      },
      // The same, where the driver can wait for it before the task is asked for: one commit for the handles of this turn.
      onSpawning: (spawned) => {
        p.record.handle = spawned;
        p.record.taskId = cfg.id;
        recordedAtSpawn = true;
        return p.persistLanded().finally(() => p.handedOff());
      },
      // What the driver does meanwhile (docker: the image pull and its progress), as Nomad's 'Driver' events.
      onEvent: (e) => p.eventSoon(e.type, e.message, e.details ?? {}),
    });
  } catch (err) {
    if (p.record.taskId === cfg.id) {
      p.record.handle = undefined;
      p.record.taskId = undefined;
      p.persist();
    }
    throw new TaskRunnerError('TASK_DRIVER_FAILED', `driver ${p.driver.name} failed to start the task: ${describeError(err)}`, {
      cause: err,
      recoverable: (err as { recoverable?: unknown }).recoverable !== false,
    });
  }
  p.record.handle = handle;
  p.record.taskId = cfg.id;
  p.handedOff();
  p.record.state.state = 'running';
  p.record.state.startedAt = p.clock.now();
  const started = `Task started by driver ${p.driver.name}`;
  // With a handle put before the spawn (onSpawned), what a crash loses from here restore() makes good;
  // a driver without onSpawned (an external plugin) gives its handle only now, and it must land.
  if (recordedAtSpawn) p.eventSoon(TASK_EVENTS.started, started, { attempt: String(p.record.attempt) });
  else p.event(TASK_EVENTS.started, started, { attempt: String(p.record.attempt) });
  // A kill that arrived while the driver was starting the task stops it now.
  if (p.killing) await p.stopProcess();
}

export async function poststart(p: TaskStartPort, ctx: TaskHookContext, recovered: boolean): Promise<void> {
  for (const hook of p.opts.hooks) {
    if (!hook.poststart) continue;
    await hook.poststart({ ...ctx, recovered }).catch((err: unknown) => {
      p.logger.error({ hook: hook.name, err: describeError(err) }, 'poststart hook failed');
      p.event(TASK_EVENTS.setupFailure, `poststart hook ${hook.name} failed: ${describeError(err)}`);
    });
  }
}

function taskConfig(p: TaskStartPort, req: PrestartRequest, taskEnv: TaskEnv): RunnerTaskConfig {
  const task = p.task;
  const { cfg, unresolved } = runnerTaskConfig({
    ...p.opts,
    task,
    driver: p.driver,
    attempt: p.record.attempt + 1,
    taskEnv,
    mounts: req.mounts,
    killTimeoutMs: p.killTimeoutMs,
  });
  p.record.attempt += 1;
  if (unresolved.length && p.record.attempt === 1) {
    p.event(TASK_EVENTS.interpolationUnresolved, `Left as written (no such run-time value): ${unresolved.join(', ')}`, { references: unresolved.join(' ') });
  }
  return cfg;
}
