// The order an allocation's tasks run in, by their `lifecycle` (Nomad's
// task hook coordinator): prestart tasks first, and the main tasks only once
// every prestart task that is not a sidecar has completed successfully;
// prestart sidecars run beside the main tasks; poststart tasks once the main
// tasks run; when every main task has stopped, the sidecars are stopped and
// the poststop tasks run. A group's `leader` task, once dead for good, stops
// its siblings; a stop of the allocation kills the leader first.

import { describeError, type Logger } from '../../lib/index.js';
import type { Task } from '../../structs/index.js';
import { TASK_EVENTS, type TaskRunner } from '../taskrunner/index.js';

export type LifecycleRole = 'prestart' | 'prestart-sidecar' | 'main' | 'poststart' | 'poststart-sidecar' | 'poststop';

/** A task's place in the order. Pure. */
export function lifecycleRole(task: Pick<Task, 'lifecycle'>): LifecycleRole {
  const lc = task.lifecycle;
  if (!lc) return 'main';
  if (lc.hook === 'poststop') return 'poststop';
  return lc.sidecar ? `${lc.hook}-sidecar` : lc.hook;
}

/** True for a lifecycle task that runs to completion (a clean exit completes it in any job type). */
export function isEphemeral(task: Pick<Task, 'lifecycle'>): boolean {
  return !!task.lifecycle && !task.lifecycle.sidecar;
}

export interface LifecycleTask {
  runner: TaskRunner;
  role: LifecycleRole;
  /** The group's leader (`leader = true`): at most one. */
  leader?: boolean;
}

export interface TaskLifecycleOptions {
  tasks: LifecycleTask[];
  logger: Logger;
  /** False once the agent is shutting down: nothing is started or stopped then. */
  mayAct: () => boolean;
}

/** Resolves true once every promise resolved, false once `signal` fired first. */
function allOrAbort(promises: Array<Promise<void>>, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => resolve(false);
    signal.addEventListener('abort', onAbort, { once: true });
    void Promise.all(promises).then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    });
  });
}

/**
 * Runs an allocation's tasks in lifecycle order. run() may be called again
 * (after an agent restart): tasks already started or finished are left as
 * they are, and each stage waits for what it waits for. poststop() is
 * memoized.
 */
export class TaskLifecycle {
  readonly #o: TaskLifecycleOptions;
  #poststop: Promise<void> | undefined;
  #watchingMain = false;
  #killing = false;

  constructor(opts: TaskLifecycleOptions) {
    this.#o = opts;
  }

  /** True when the task runs after the main tasks stopped (a stop of the allocation must not kill it before it ran). */
  isPoststop(name: string): boolean {
    return this.#o.tasks.some((t) => t.runner.name === name && t.role === 'poststop');
  }

  get hasPoststop(): boolean {
    return this.#o.tasks.some((t) => t.role === 'poststop');
  }

  /**
   * Starts the prestart tasks, waits for the non-sidecar ones to complete,
   * starts the main tasks, then the poststart ones; then, in the background,
   * runs poststop() once the main tasks have all stopped. Resolves
   * 'started' once the main and poststart tasks started, 'failed' when a
   * prestart task failed (every task is then killed, poststop ones
   * included), 'aborted' when `signal` fired while waiting. Never throws.
   */
  async run(signal: AbortSignal): Promise<'started' | 'failed' | 'aborted'> {
    const blocking = this.#with('prestart');
    await this.#start([...blocking, ...this.#with('prestart-sidecar')]);
    const pending = blocking.filter((t) => t.runner.view().state !== 'dead');
    if (pending.length) {
      const names = pending.map((t) => `"${t.runner.name}"`).join(', ');
      for (const t of this.#notStarted(['main', 'poststart', 'poststart-sidecar'])) {
        t.runner.event(TASK_EVENTS.lifecycleWaiting, `Waiting for prestart task${pending.length > 1 ? 's' : ''} ${names} to complete`);
      }
    }
    if (!(await allOrAbort(blocking.map((t) => t.runner.done), signal))) return 'aborted';
    const failed = blocking.find((t) => t.runner.view().failed);
    if (failed) {
      const reason = `prestart task "${failed.runner.name}" failed`;
      await Promise.all(this.#o.tasks.filter((t) => t !== failed).map((t) => t.runner.kill(reason)));
      return 'failed';
    }
    if (signal.aborted || !this.#o.mayAct()) return 'aborted';
    await this.#start(this.#with('main'));
    await this.#start([...this.#with('poststart'), ...this.#with('poststart-sidecar')]);
    for (const t of this.#notStarted(['poststop'])) t.runner.event(TASK_EVENTS.lifecycleWaiting, 'Waiting for the main tasks to stop');
    this.#watchMain();
    return 'started';
  }

  /**
   * Stops the sidecars, then runs the poststop tasks to their end. Call once
   * the main tasks have stopped. Memoized; never throws.
   */
  poststop(): Promise<void> {
    this.#poststop ??= (async () => {
      if (!this.#o.mayAct()) return;
      const sidecars = this.#o.tasks.filter((t) => t.role === 'prestart-sidecar' || t.role === 'poststart-sidecar');
      await Promise.all(sidecars.map((t) => t.runner.kill('the main tasks have stopped')));
      if (!this.#o.mayAct()) return;
      const post = this.#with('poststop');
      await this.#start(post);
      await Promise.all(post.map((t) => t.runner.done));
    })().catch((err: unknown) => this.#o.logger.error({ err: describeError(err) }, 'poststop tasks failed'));
    return this.#poststop;
  }

  /**
   * Kills the tasks for a stop of the allocation, the leader first (as
   * Nomad's killTasks), then the others; poststop tasks only with
   * `poststop`. Resolves once they are dead.
   */
  async kill(reason: string, opts: { poststop: boolean }): Promise<void> {
    this.#killing = true;
    const targets = this.#o.tasks.filter((t) => opts.poststop || t.role !== 'poststop');
    const leader = targets.find((t) => t.leader);
    if (leader) await leader.runner.kill(reason);
    await Promise.all(targets.filter((t) => t !== leader).map((t) => t.runner.kill(reason)));
  }

  #watchMain(): void {
    if (this.#watchingMain) return;
    this.#watchingMain = true;
    const leader = this.#o.tasks.find((t) => t.leader);
    void leader?.runner.done.then(async () => {
      if (this.#killing || !this.#o.mayAct()) return;
      const others = this.#o.tasks.filter((t) => t !== leader && t.role !== 'poststop' && t.runner.view().state !== 'dead');
      for (const t of others) t.runner.event(TASK_EVENTS.leaderDead, 'Leader Task in Group dead');
      await Promise.all(others.map((t) => t.runner.kill(`leader task "${leader.runner.name}" is dead`)));
    });
    void Promise.all(this.#with('main').map((t) => t.runner.done)).then(() => {
      if (this.#o.mayAct()) void this.poststop();
    });
  }

  #with(role: LifecycleRole): LifecycleTask[] {
    return this.#o.tasks.filter((t) => t.role === role);
  }

  #notStarted(roles: LifecycleRole[]): LifecycleTask[] {
    return this.#o.tasks.filter((t) => roles.includes(t.role) && !t.runner.started);
  }

  async #start(list: LifecycleTask[]): Promise<void> {
    await Promise.all(list.filter((t) => !t.runner.started).map((t) => t.runner.start()));
  }
}
