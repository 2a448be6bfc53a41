// What a task hook is and sees (Nomad's taskrunner interfaces): the phases
// a hook may implement, what prestart hooks may add to a start, the context
// of a run of the task, and what a hook may do to its task (Nomad's
// interfaces.TaskLifecycle and EventEmitter), which the task runner
// implements: hooks know that much of it, not the runner itself.

import type { TaskEnv } from '../taskenv/index.js';
import type { RunnerExitResult, TaskMount } from './driver-port.js';

/** What prestart hooks may add to the task before it starts. */
export interface PrestartRequest {
  env: Record<string, string>;
  mounts: TaskMount[];
  /**
   * The task's environment so far (with what earlier hooks put in `env`),
   * rebuilt by the runner before each hook: interpolate run-time `${...}`
   * with it, never by hand.
   */
  taskEnv: TaskEnv;
}

/** What a hook may do to its task (the task runner implements it). */
export interface TaskLifecycle {
  /** Stops the running task and starts it again, not counted by the restart policy; resolves once the stop was sent; no-op when it does not run. */
  restart(reason: string): Promise<void>;
  /** Sends `signal` (SIGHUP) to the running task; no-op when it does not run; rejects when the driver cannot signal or refuses. */
  signal(signal: string, reason: string): Promise<void>;
  /** Records a task event on the task's trail (persisted). Details must carry no secret. */
  event(type: string, message: string, details?: Record<string, string>): void;
}

/** What a hook sees of its task. */
export interface TaskHookContext {
  readonly runner: TaskLifecycle;
  /** Fires when this run of the task ends (it exited, was killed, or the agent let go of it). */
  readonly signal: AbortSignal;
  /**
   * The environment this run of the task started with (every prestart
   * hook's additions included; after an agent restart, the one rebuilt
   * from the spec). In prestart, the environment so far is `req.taskEnv`.
   */
  readonly taskEnv: TaskEnv;
}

/**
 * A task hook: a small named object. Every phase is optional. Hooks run in
 * order; a prestart that throws fails this start (counted by the restart
 * policy). poststart must not wait for long: work that follows the task
 * (probing, watching) runs in the background until `ctx.signal` fires.
 * exited and stop must not throw (errors are logged).
 */
export interface TaskHook {
  readonly name: string;
  prestart?(req: PrestartRequest, ctx: TaskHookContext): Promise<void>;
  /** `recovered` is true when the task was reattached after an agent restart rather than started. */
  poststart?(ctx: TaskHookContext & { recovered: boolean }): Promise<void>;
  exited?(exit: RunnerExitResult, ctx: TaskHookContext): Promise<void>;
  /** The task is dead for good (killed, failed, or complete). */
  stop?(ctx: TaskHookContext): Promise<void>;
}
