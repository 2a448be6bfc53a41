// Nomad's task_dir hook: before each start, the task directory gets what its
// driver's file system isolation needs (the chroot and the shared alloc/ for
// a chroot driver; see allocdir). Repeating it (a restart, an agent restart)
// reuses what is already there.

import { describeError, type Logger } from '../../lib/index.js';
import type { AllocDir, FsIsolation } from '../allocdir/index.js';
import type { RunnerDriver, TaskHook } from '../taskrunner/index.js';

export class TaskDirHook implements TaskHook {
  readonly name = 'task-dir';
  readonly #o: { allocDir: AllocDir; task: string; driver: RunnerDriver; logger: Logger };

  constructor(opts: { allocDir: AllocDir; task: string; driver: RunnerDriver; logger: Logger }) {
    this.#o = opts;
  }

  /** Throws AllocDirError when the chroot cannot be built (the start fails; the restart policy decides). */
  async prestart(): Promise<void> {
    const fs: FsIsolation = this.#o.driver.capabilities.fsIsolation;
    const ms = await this.#o.allocDir.buildTask(this.#o.task, fs);
    if (fs === 'chroot') this.#o.logger.debug({ task: this.#o.task, ms: Math.round(ms * 10) / 10 }, 'task directory chroot ready');
  }

  /** The task is dead for good: its chroot binds go now, not when the allocation is collected. Never throws. */
  async stop(): Promise<void> {
    await this.#o.allocDir.releaseTask(this.#o.task).catch((err: unknown) => this.#o.logger.warn({ task: this.#o.task, err: describeError(err) }, 'cannot release the task’s chroot'));
  }
}
