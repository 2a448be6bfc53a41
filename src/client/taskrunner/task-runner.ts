// The task runner: runs one task of an allocation through its driver, with
// hooks around each start (prestart / poststart / exited / stop), the group's
// restart policy, and a persisted task state with its event trail (Nomad's
// client/allocrunner/taskrunner). One start of the task (prestart hooks, the
// driver's start, poststart hooks) is in task-start.ts; how a run ends and
// what follows (max_run_duration, what an exit means, whether the task
// starts again) is in task-exit.ts.
// One thing, near 500 lines: one task's run loop over its persisted state (wait, exit,
// kill and stop paths share that state and its event trail).

import { describeError, silentLogger, systemClock, type Clock, type Logger } from '../../lib/index.js';
import { durationMs, type RestartPolicy, type Task, type TaskState } from '../../structs/index.js';
import type { TaskEnv, TaskEnvBuilder } from '../taskenv/index.js';
import type { Bucket, ClientStateStore } from '../state/index.js';
import type { RunnerDriver, RunnerExitResult } from './driver-port.js';
import { RestartTracker } from './restart-tracker.js';
import { defaultTaskEnv, runnerResources } from './task-config.js';
import { appendEvent, newTaskState, TASK_EVENTS } from './task-events.js';
import type { TaskHookContext, TaskLifecycle } from './task-hook.js';
import { TaskRunnerError } from './task-runner-error.js';
import { poststart, startOnce, type TaskStartPort } from './task-start.js';
import { afterExit, applyRestartDecision, watchRunDuration, type TaskExitPort } from './task-exit.js';

export { TaskRunnerError, type TaskRunnerErrorCode } from './task-runner-error.js';
export type { PrestartRequest, TaskHook, TaskHookContext, TaskLifecycle } from './task-hook.js';
import { TASK_RUNNERS_BUCKET, type TaskRunnerOptions, type TaskRunnerRecord } from './task-runner-options.js';
export { TASK_RUNNERS_BUCKET, type TaskRunnerOptions, type TaskRunnerRecord } from './task-runner-options.js';

/** What restore() found. */
export type RestoreResult = 'running' | 'lost' | 'dead' | 'new';

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * Runs one task. Lifecycle: `start()` (or `restore()` then, for a task lost
 * while the agent was down, `resume()`), then `kill()` or `detach()`. The
 * state is written to the client state store before every `onChange`.
 */
export class TaskRunner implements TaskLifecycle {
  readonly name: string;
  readonly driver: RunnerDriver;
  readonly #opts: TaskRunnerOptions;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #bucket: Bucket<TaskRunnerRecord>;
  readonly #key: string;
  #tracker: RestartTracker;
  #record: TaskRunnerRecord;
  readonly #killAbort = new AbortController();
  readonly #detachAbort = new AbortController();
  #runAbort = new AbortController();
  #killReason = '';
  #killRequested = false;
  readonly #env: TaskEnvBuilder;
  /** The environment of the current run (see TaskHookContext.taskEnv). */
  #runEnv: TaskEnv;
  #killFailed = false;
  #restartReason: string | undefined;
  #loop: Promise<void> | undefined;
  readonly #firstStart = deferred();
  readonly #resumed = deferred();
  readonly #done = deferred();
  #isDone = false;
  /** Restored and not resumed yet: an exit is not acted on (no restart) before resume() or kill(). */
  #held = false;
  /** The task's spec; its resources follow in-place updates. */
  #task: Task;

  constructor(opts: TaskRunnerOptions) {
    this.#opts = opts;
    this.name = opts.task.name;
    this.#task = opts.task;
    this.driver = opts.driver;
    this.#clock = opts.clock ?? systemClock;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'task-runner', allocId: opts.alloc.id, task: opts.task.name });
    this.#bucket = opts.store.bucket<TaskRunnerRecord>(TASK_RUNNERS_BUCKET);
    this.#key = `${opts.alloc.id}/${opts.task.name}`;
    const saved = this.#bucket.get(this.#key);
    this.#record = saved ?? { state: newTaskState(this.#clock.now()), attempt: 0, restart: { count: 0, windowStart: undefined } };
    this.#tracker = new RestartTracker(opts.restartPolicy, opts.jobType, this.#clock, this.#record.restart, { ephemeral: opts.ephemeral === true });
    this.#env = opts.taskEnv ?? defaultTaskEnv(opts, this.driver.capabilities.fsIsolation);
    this.#runEnv = this.#env.build({}, this.#task);
    // Written with the next write that must land (the task's handle, before its spawn), or at the end of this turn.
    if (!saved) this.#bucket.putSoon(this.#key, this.#record);
  }

  /** The task's spec, with the resources of the latest in-place update. */
  get task(): Task {
    return this.#task;
  }

  /**
   * A job update changed the task's resources: applies them to the running
   * task's cgroup without a restart. Every later start of the task (restart
   * policy) uses them too. Resolves false when the task is not running or
   * the driver/kernel cannot apply them live (they then apply at the next
   * start). Never throws.
   */
  async updateResources(resources: Task['resources']): Promise<boolean> {
    this.#task = { ...this.#task, resources };
    const taskId = this.#record.taskId;
    if (!taskId || this.#record.state.state !== 'running' || !this.driver.updateTaskResources) return false;
    const ok = await this.driver.updateTaskResources(taskId, runnerResources(resources)).catch(() => false);
    if (ok) this.#logger.info({ memoryMb: resources.memoryMb, cpuMhz: resources.cpuMhz }, 'task resources updated in place');
    return ok;
  }

  /** A job update changed the group's restart policy: later exits are weighed by it, with the restarts counted so far. Never throws. */
  setRestartPolicy(policy: RestartPolicy): void {
    this.#tracker = this.#tracker.withPolicy(policy);
  }

  /** A copy of the task state (to keep or hand out). */
  state(): TaskState {
    return structuredClone(this.#record.state);
  }

  /**
   * The live task state, not a copy: read it now (it changes under a holder
   * at the runner's next step); never write to it. For the many checks and
   * status builds a busy node makes, where a copy each time adds up.
   */
  view(): Readonly<TaskState> {
    return this.#record.state;
  }

  /** The driver's task ID of the current run, if one runs. */
  get taskId(): string | undefined {
    return this.#record.taskId;
  }

  /** Resolves when the task is dead for good (or the runner was detached). Never rejects. */
  get done(): Promise<void> {
    return this.#done.promise;
  }

  /** True once start(), restore() or kill() set the runner going (or it had ended before): start() would not start it anew. */
  get started(): boolean {
    return this.#loop !== undefined || this.#isDone;
  }

  /** True once kill() was called (also while it waits for the shutdown delay): the task is not restarted. */
  get killing(): boolean {
    return this.#killRequested || this.#killAbort.signal.aborted;
  }

  /**
   * Starts the task (prestart hooks, driver start, poststart hooks) and
   * returns once it runs, or once its first start failed and the restart
   * policy took over. Call once. Never throws: failures become task events.
   */
  async start(): Promise<void> {
    if (this.#loop) return this.#firstStart.promise;
    this.#loop = this.#run(false);
    await this.#firstStart.promise;
  }

  /**
   * After an agent restart: reattaches to the task from its saved handle,
   * without restarting it. 'running': reattached (waits and hooks resume);
   * 'lost': its process is gone, and nothing happens until resume() (nor
   * for a reattached task that exits before resume());
   * 'dead': it had ended before; 'new': it was never started (call start()).
   */
  async restore(): Promise<RestoreResult> {
    const rec = this.#record;
    if (rec.state.state === 'dead') {
      this.#finishDone();
      return 'dead';
    }
    if (!rec.handle || !rec.taskId) return 'new';
    try {
      const completed = await this.driver.recoverTask(rec.handle);
      if (completed) rec.handle = completed;
    } catch (err) {
      this.#logger.warn({ err: describeError(err) }, 'task could not be reattached');
      this.event(TASK_EVENTS.taskLost, `The task's process was gone after the agent restarted: ${describeError(err)}`);
      this.#loop = this.#run('lost');
      return 'lost';
    }
    this.#held = true;
    if (rec.state.state !== 'running') {
      // The agent died between spawning the task and recording it started: the task is adopted as started.
      rec.state.state = 'running';
      rec.state.startedAt = this.#clock.now();
      this.event(TASK_EVENTS.started, `Task started by driver ${this.driver.name}`, { attempt: String(rec.attempt) });
    }
    this.event(TASK_EVENTS.reattached, 'Reattached to the running task after an agent restart');
    this.#loop = this.#run(true);
    await this.#firstStart.promise;
    return 'running';
  }

  /** Lets a task found lost by restore() go on under its restart policy. Safe to repeat. */
  resume(): void {
    this.#held = false;
    this.#resumed.resolve();
  }

  /**
   * Kills the task for good: stop hooks, then the driver stops it (signal,
   * then SIGKILL after the kill timeout). Resolves when it is dead and its
   * stop hooks ran. Safe to repeat and before start(). With `failed`, the
   * task is marked failed (its allocation failed around it).
   */
  async kill(reason: string, opts: { failed?: boolean } = {}): Promise<void> {
    if (!this.#killRequested) {
      this.#killRequested = true;
      this.#killReason = reason;
      this.#killFailed = opts.failed === true;
      if (this.#record.state.state !== 'dead') this.event(TASK_EVENTS.killing, `Killing the task: ${reason}`);
      const delayMs = this.#opts.shutdownDelayMs ?? 0;
      if (delayMs > 0 && this.#record.state.state === 'running') {
        this.event(TASK_EVENTS.waitingShutdownDelay, `Waiting ${delayMs} ms (shutdown_delay) before stopping the task`, { delayMs: String(delayMs) });
        await this.#clock.sleep(delayMs, this.#detachAbort.signal).catch(() => undefined);
        // The agent is stopping meanwhile: the task keeps running, as on any agent stop.
        if (this.#detachAbort.signal.aborted) return;
      }
      this.#killAbort.abort();
      this.#resumed.resolve();
      if (!this.#loop) this.#loop = this.#run(false);
      await this.#stopProcess();
    }
    await this.#loop;
    await this.#done.promise;
  }

  /**
   * Restarts the running task (stop, then start again at once); not counted
   * against the restart policy. Returns once the stop was sent; no-op when
   * the task does not run.
   */
  async restart(reason: string): Promise<void> {
    if (this.#record.state.state !== 'running' || this.killing || this.#restartReason !== undefined) return;
    this.#restartReason = reason;
    this.event(TASK_EVENTS.restartSignaled, `Restart requested: ${reason}`);
    await this.#stopProcess();
  }

  /**
   * Sends `signal` to the running task (a template's change_signal); no-op
   * when it does not run. Throws when the driver cannot signal tasks or
   * refuses the signal.
   */
  async signal(signal: string, reason: string): Promise<void> {
    const taskId = this.#record.taskId;
    if (!taskId || this.#record.state.state !== 'running' || this.killing) return;
    if (!this.driver.signalTask) throw new TaskRunnerError('TASK_DRIVER_FAILED', `driver ${this.driver.name} cannot signal tasks`);
    this.event(TASK_EVENTS.signaling, `Task being sent ${signal}: ${reason}`, { signal });
    await this.driver.signalTask(taskId, signal);
  }

  /** Stops watching the task and leaves it running (the agent is stopping). Safe to repeat. */
  detach(): void {
    this.#detachAbort.abort();
    this.#runAbort.abort();
    this.#resumed.resolve();
    this.#firstStart.resolve();
    this.#finishDone();
  }

  /** Records a task event, persists it and tells onChange. Details must carry no secret. */
  event(type: string, message: string, details: Record<string, string> = {}): void {
    appendEvent(this.#record.state, this.#clock.now(), type, message, details);
    this.#changed();
  }

  /**
   * event(), with the record written soon (Bucket.putSoon) rather than now:
   * for the steps of a start, whose loss in a crash restore() makes good (a
   * task with a handle is adopted as started; one without starts afresh).
   */
  #eventSoon(type: string, message: string, details: Record<string, string> = {}): void {
    appendEvent(this.#record.state, this.#clock.now(), type, message, details);
    this.#bucket.putSoon(this.#key, this.#record);
    this.#told();
  }

  // ---- the run loop ---------------------------------------------------------

  async #run(from: boolean | 'lost'): Promise<void> {
    let recovered = from === true;
    let pendingExit: RunnerExitResult | undefined;
    if (from === 'lost') {
      await this.#resumed.promise;
      if (this.#detachAbort.signal.aborted) return;
      pendingExit = { exitCode: -1, signal: null, message: 'the task was lost while the agent was down' };
      this.#record.handle = undefined;
      this.#record.taskId = undefined;
    }
    try {
      for (;;) {
        let exit: RunnerExitResult;
        let overran: { value: boolean } | undefined;
        if (pendingExit) {
          exit = pendingExit;
          pendingExit = undefined;
        } else {
          if (this.killing) break;
          this.#runAbort = new AbortController();
          this.#runEnv = this.#env.build({}, this.#task);
          const ctx = this.#hookContext();
          if (!recovered) {
            try {
              await startOnce(this.#startPort(), ctx);
            } catch (err) {
              this.#runAbort.abort();
              this.#firstStart.resolve();
              if (this.killing) break;
              const type = err instanceof TaskRunnerError && err.code === 'TASK_DRIVER_FAILED' ? TASK_EVENTS.driverFailure : TASK_EVENTS.setupFailure;
              this.event(type, describeError(err));
              if (err instanceof TaskRunnerError && !err.recoverable) {
                // A config error is not transient: the restart policy would only hide it.
                this.#record.state.failed = true;
                this.event(TASK_EVENTS.notRestarting, `Not restarting: ${err.message} (not recoverable: a configuration error a retry cannot fix)`);
                break;
              }
              if (!(await applyRestartDecision(this.#exitPort(), this.#tracker.next({ exitCode: -1, startError: true })))) break;
              continue;
            }
          }
          this.#firstStart.resolve();
          await poststart(this.#startPort(), ctx, recovered);
          recovered = false;
          overran = watchRunDuration(this.#exitPort(), ctx.signal);
          const taskId = this.#record.taskId as string;
          try {
            exit = await this.driver.waitTask(taskId, { signal: this.#detachAbort.signal });
          } catch (err) {
            if (this.#detachAbort.signal.aborted) return;
            exit = { exitCode: -1, signal: null, message: `waiting for the task failed: ${describeError(err)}` };
          }
          if (this.#detachAbort.signal.aborted) return;
          this.#runAbort.abort();
          for (const hook of this.#opts.hooks) {
            if (!hook.exited) continue;
            await hook.exited(exit, ctx).catch((err: unknown) => this.#logger.error({ hook: hook.name, err: describeError(err) }, 'exited hook failed'));
          }
          await this.driver.destroyTask(taskId, { force: true }).catch((err: unknown) => this.#logger.warn({ err: describeError(err) }, 'destroyTask failed'));
          this.#record.handle = undefined;
          this.#record.taskId = undefined;
        }
        if (this.#held && !this.killing) {
          await this.#resumed.promise;
          if (this.#detachAbort.signal.aborted) return;
        }
        if (!(await afterExit(this.#exitPort(), exit, overran))) break;
      }
    } finally {
      this.#firstStart.resolve();
      if (!this.#detachAbort.signal.aborted) await this.#finish();
    }
  }

  /** What a start (task-start.ts) reads and calls of this runner. */
  #startPort(): TaskStartPort {
    const task = (): Task => this.#task;
    const killing = (): boolean => this.killing;
    const killTimeoutMs = (): number => this.#killTimeoutMs;
    return {
      opts: this.#opts,
      get task() {
        return task();
      },
      driver: this.driver,
      record: this.#record,
      env: this.#env,
      clock: this.#clock,
      logger: this.#logger,
      killSignal: this.#killAbort.signal,
      get killing() {
        return killing();
      },
      get killTimeoutMs() {
        return killTimeoutMs();
      },
      setRunEnv: (env) => {
        this.#runEnv = env;
      },
      hookContext: () => this.#hookContext(),
      event: (type, message, details) => this.event(type, message, details),
      eventSoon: (type, message, details) => this.#eventSoon(type, message, details),
      persist: () => this.#persist(),
      persistLanded: () => this.#bucket.putLanded(this.#key, this.#record),
      handedOff: () => this.#opts.onHandedOff?.(),
      stopProcess: () => this.#stopProcess(),
    };
  }

  /** What an exit's handling (task-exit.ts) reads and calls of this runner. */
  #exitPort(): TaskExitPort {
    const task = (): Task => this.#task;
    const tracker = (): RestartTracker => this.#tracker;
    const killing = (): boolean => this.killing;
    const killReason = (): string => this.#killReason;
    return {
      get task() {
        return task();
      },
      record: this.#record,
      clock: this.#clock,
      get tracker() {
        return tracker();
      },
      get killing() {
        return killing();
      },
      get killReason() {
        return killReason();
      },
      killSignal: this.#killAbort.signal,
      detachSignal: this.#detachAbort.signal,
      takeRestartReason: () => {
        const reason = this.#restartReason;
        this.#restartReason = undefined;
        return reason;
      },
      event: (type, message, details) => this.event(type, message, details),
      persist: () => this.#persist(),
      stopProcess: () => this.#stopProcess(),
    };
  }

  async #stopProcess(): Promise<void> {
    const taskId = this.#record.taskId;
    if (!taskId || this.#record.state.state !== 'running') return;
    const signal = this.#task.killSignal;
    await this.driver.stopTask(taskId, { timeoutMs: this.#killTimeoutMs, ...(signal ? { signal } : {}) }).catch((err: unknown) => {
      this.#logger.warn({ err: describeError(err) }, 'stopTask failed');
    });
  }

  /** What hooks see of this run; `taskEnv` is read when a hook reads it (the start sets it after prestart). */
  #hookContext(): TaskHookContext {
    const runEnv = (): TaskEnv => this.#runEnv;
    return {
      runner: this,
      signal: this.#runAbort.signal,
      get taskEnv() {
        return runEnv();
      },
    };
  }

  async #finish(): Promise<void> {
    const ctx = this.#hookContext();
    this.#runAbort.abort();
    for (const hook of this.#opts.hooks) {
      if (!hook.stop) continue;
      await hook.stop(ctx).catch((err: unknown) => this.#logger.error({ hook: hook.name, err: describeError(err) }, 'stop hook failed'));
    }
    const s = this.#record.state;
    // A task that had ended (before an agent restart, say) keeps the time it really finished.
    const ended = s.state === 'dead' && s.finishedAt > 0;
    s.state = 'dead';
    if (this.#killFailed) s.failed = true;
    if (!ended) s.finishedAt = this.#clock.now();
    this.#record.handle = undefined;
    this.#record.taskId = undefined;
    this.#changed();
    this.#finishDone();
  }

  /** The task's kill_timeout, else the agent's. */
  get #killTimeoutMs(): number {
    return this.#task.killTimeout ? durationMs(this.#task.killTimeout) : this.#opts.killTimeoutMs;
  }

  #finishDone(): void {
    if (this.#isDone) return;
    this.#isDone = true;
    this.#done.resolve();
  }

  #persist(): void {
    this.#bucket.put(this.#key, this.#record);
  }

  #changed(): void {
    this.#persist();
    this.#told();
  }

  /** Tells onChange of the task's state. */
  #told(): void {
    try {
      this.#opts.onChange(this.name, this.#record.state);
    } catch (err) {
      this.#logger.error({ err: describeError(err) }, 'onChange failed');
    }
  }
}

/** Removes a task runner's record (when its allocation is destroyed). Safe to repeat. */
export function forgetTaskRunner(store: ClientStateStore, allocId: string, taskName: string): void {
  store.bucket<TaskRunnerRecord>(TASK_RUNNERS_BUCKET).delete(`${allocId}/${taskName}`);
}
