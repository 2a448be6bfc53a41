// An allocation's directory (Nomad's client/allocdir):
//   <root>/<allocId>/alloc/{logs,data,tmp}    shared by the group's tasks
//   <root>/<allocId>/<task>/{local,secrets,tmp}
// secrets/ is a private tmpfs (mode 0700), so secrets never reach a disk.

import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { BerthError, describeError, silentLogger, type Logger } from '../../lib/index.js';
import { isMountPoint, mount, mountPointsUnder, unmountAllUnder } from './mounts.js';

export type AllocDirErrorCode = 'ALLOC_DIR_FAILED';

/** The allocation directory could not be built or removed. */
export class AllocDirError extends BerthError<AllocDirErrorCode> {}

/** One task's directories. */
export interface TaskDir {
  /** `<alloc>/<task>`: the task's root. */
  dir: string;
  localDir: string;
  secretsDir: string;
  tmpDir: string;
  /** The shared `<alloc>/alloc` directory. */
  sharedDir: string;
  logsDir: string;
}

/** Size of each task's secrets tmpfs. */
const SECRETS_SIZE = '1m';

/**
 * The directory of one allocation. `build()` creates it (safe to repeat:
 * an existing secrets tmpfs is kept); `destroy()` unmounts everything under
 * it and removes it (safe to repeat).
 */
export class AllocDir {
  readonly allocId: string;
  /** `<root>/<allocId>`. */
  readonly dir: string;
  readonly sharedDir: string;
  readonly #logger: Logger;

  constructor(opts: { root: string; allocId: string; logger?: Logger }) {
    if (!path.isAbsolute(opts.root)) throw new AllocDirError('ALLOC_DIR_FAILED', `alloc dir root must be absolute, got ${JSON.stringify(opts.root)}`);
    if (!/^[A-Za-z0-9._-]+$/.test(opts.allocId) || opts.allocId.startsWith('.')) {
      throw new AllocDirError('ALLOC_DIR_FAILED', `allocation ID ${JSON.stringify(opts.allocId)} cannot name a directory`);
    }
    this.allocId = opts.allocId;
    this.dir = path.join(opts.root, opts.allocId);
    this.sharedDir = path.join(this.dir, 'alloc');
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'alloc-dir', allocId: opts.allocId });
  }

  /** The directories of task `name` (nothing is created). */
  task(name: string): TaskDir {
    const dir = path.join(this.dir, name);
    return {
      dir,
      localDir: path.join(dir, 'local'),
      secretsDir: path.join(dir, 'secrets'),
      tmpDir: path.join(dir, 'tmp'),
      sharedDir: this.sharedDir,
      logsDir: path.join(this.sharedDir, 'logs'),
    };
  }

  /**
   * Creates the shared directories and each task's, and mounts a tmpfs on
   * each secrets/ (falls back to a 0700 directory when tmpfs cannot be
   * mounted, with a warning). Safe to repeat. Throws AllocDirError.
   */
  async build(taskNames: readonly string[]): Promise<void> {
    try {
      for (const sub of ['logs', 'data', 'tmp']) await mkdir(path.join(this.sharedDir, sub), { recursive: true, mode: 0o777 });
      for (const name of taskNames) {
        const t = this.task(name);
        await mkdir(t.localDir, { recursive: true, mode: 0o777 });
        await mkdir(t.tmpDir, { recursive: true, mode: 0o777 });
        await mkdir(t.secretsDir, { recursive: true, mode: 0o700 });
        if (!isMountPoint(t.secretsDir)) {
          try {
            await mount(['-t', 'tmpfs', '-o', `size=${SECRETS_SIZE},mode=0700,nosuid,nodev`, 'tmpfs', t.secretsDir]);
          } catch (err) {
            this.#logger.warn({ task: name, err: describeError(err) }, 'cannot mount tmpfs on secrets; using a plain directory');
          }
        }
      }
    } catch (err) {
      throw new AllocDirError('ALLOC_DIR_FAILED', `cannot build the directory of allocation ${this.allocId}: ${describeError(err)}`, { cause: err });
    }
  }

  /**
   * Unmounts everything under the allocation directory (secrets tmpfs, volume
   * binds) and removes it. Safe to repeat. Throws AllocDirError when a mount
   * cannot be undone (nothing is removed then, so no mounted data is deleted).
   */
  async destroy(): Promise<void> {
    await unmountAllUnder(this.dir);
    if (mountPointsUnder(this.dir).length) {
      throw new AllocDirError('ALLOC_DIR_FAILED', `cannot remove the directory of allocation ${this.allocId}: something is still mounted under it`);
    }
    await rm(this.dir, { recursive: true, force: true });
  }
}
