// An allocation's directory, as Nomad's client builds it (client/allocdir),
// with Nomad's permissions:
//   <root>/<allocId>/                          0755
//   <root>/<allocId>/alloc/                    0755, shared by the group's tasks
//   <root>/<allocId>/alloc/{logs,data,tmp}     0777
//   <root>/<allocId>/<task>/                   0777
//   <root>/<allocId>/<task>/local/             0777
//   <root>/<allocId>/<task>/tmp/               1777
//   <root>/<allocId>/<task>/secrets/           a tmpfs (1 MB, noexec,nosuid,nodev), so secrets never reach a disk
// and, for a task whose driver isolates with a chroot (FSIsolation = chroot),
//   <root>/<allocId>/<task>/alloc/             the shared alloc/ bound in
//   <root>/<allocId>/<task>/alloc/logs/        bound again read-only
//   <root>/<allocId>/<task>/{bin,etc,usr,...}  the chroot (chroot.ts)
// A driver that chroots into `<task>/` then finds /alloc, /local, /secrets,
// /tmp and the system where Nomad puts them.

import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { BerthError, describeError, silentLogger, type Logger } from '../../lib/index.js';
import { bindAll, type BindMount, type ChrootCache } from './chroot.js';
import { buildTree, mountPointsUnder, unmountUnder } from './mounts.js';

/** How a task's driver isolates its file system (Nomad's fsisolation.Mode). */
export type FsIsolation = 'none' | 'chroot' | 'image' | 'unveil';

export type AllocDirErrorCode = 'ALLOC_DIR_FAILED';

/** The allocation directory could not be built or removed. */
export class AllocDirError extends BerthError<AllocDirErrorCode> {}

/** mkdir -p, then the exact mode (mkdir's is cut by the umask, as Nomad's allocMkdirAll avoids). */
async function mkdirMode(dir: string, mode: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  await chmod(dir, mode);
}

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
  /** `<task>/alloc`: where the shared directory is bound for chroot drivers. */
  sharedTaskDir: string;
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
  readonly #parentLogger: Logger;
  #childLogger: Logger | undefined;
  readonly #chroot: ChrootCache | undefined;

  /** `chroot`: the node's chroot cache, used for tasks of chroot drivers (without it they get no chroot). */
  constructor(opts: { root: string; allocId: string; chroot?: ChrootCache; logger?: Logger }) {
    if (!path.isAbsolute(opts.root)) throw new AllocDirError('ALLOC_DIR_FAILED', `alloc dir root must be absolute, got ${JSON.stringify(opts.root)}`);
    if (!/^[A-Za-z0-9._-]+$/.test(opts.allocId) || opts.allocId.startsWith('.')) {
      throw new AllocDirError('ALLOC_DIR_FAILED', `allocation ID ${JSON.stringify(opts.allocId)} cannot name a directory`);
    }
    this.allocId = opts.allocId;
    this.dir = path.join(opts.root, opts.allocId);
    this.sharedDir = path.join(this.dir, 'alloc');
    this.#chroot = opts.chroot;
    this.#parentLogger = opts.logger ?? silentLogger();
  }

  /**
   * Its logger, made on first use: it only ever warns, and a child logger
   * costs its making (a burst of 200 allocations made 200 for nothing).
   */
  get #logger(): Logger {
    this.#childLogger ??= this.#parentLogger.child({ component: 'alloc-dir', allocId: this.allocId });
    return this.#childLogger;
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
      sharedTaskDir: path.join(dir, 'alloc'),
    };
  }

  /**
   * Creates the shared directories and each task's, and mounts a tmpfs on
   * each secrets/ (falls back to a plain directory when tmpfs cannot be
   * mounted, with a warning). Safe to repeat. Throws AllocDirError.
   */
  async build(taskNames: readonly string[]): Promise<void> {
    try {
      // The whole tree in one message to the mount helper: no file system call on the agent's loop.
      const dirs: Array<[string, number]> = [
        [this.dir, 0o755],
        [this.sharedDir, 0o755],
        ...['logs', 'data', 'tmp'].map((sub): [string, number] => [path.join(this.sharedDir, sub), 0o777]),
      ];
      for (const name of taskNames) {
        const t = this.task(name);
        dirs.push([t.dir, 0o777], [t.localDir, 0o777], [t.tmpDir, 0o1777], [t.secretsDir, 0o777]);
      }
      // With each secrets tmpfs, in the same request: skipped by the helper when secrets/ already holds it (a rebuild after a restart).
      const mounts = taskNames.map((name) => {
        const { secretsDir } = this.task(name);
        return { args: ['-t', 'tmpfs', '-o', `size=${SECRETS_SIZE},mode=0777,noexec,nosuid,nodev`, 'tmpfs', secretsDir], unlessOwnFs: secretsDir };
      });
      const outcomes = await buildTree(dirs, mounts);
      outcomes.forEach((o, i) => {
        if (!o.ok) this.#logger.warn({ task: taskNames[i], err: o.error }, 'cannot mount tmpfs on secrets; using a plain directory');
      });
    } catch (err) {
      throw new AllocDirError('ALLOC_DIR_FAILED', `cannot build the directory of allocation ${this.allocId}: ${describeError(err)}`, { cause: err });
    }
  }

  /**
   * What task `name` needs on top of build() for a driver isolating with
   * `fs` (Nomad's task_dir hook): for `chroot`, the shared alloc/ bound into
   * the task directory (logs/ read-only) and the chroot embedded from the
   * node's cache; nothing for `none` and `image`. Safe to repeat (what is
   * already mounted or linked is kept: after an agent restart the chroot is
   * reused). Resolves with the milliseconds it took. Throws AllocDirError.
   */
  async buildTask(name: string, fs: FsIsolation): Promise<number> {
    const started = performance.now();
    if (fs !== 'chroot') return 0;
    const t = this.task(name);
    try {
      const mounted = new Set(mountPointsUnder(t.dir));
      const binds: BindMount[] = [];
      await mkdirMode(t.sharedTaskDir, 0o777);
      if (!mounted.has(t.sharedTaskDir)) {
        binds.push({ source: this.sharedDir, target: t.sharedTaskDir, readOnly: false });
        binds.push({ source: t.logsDir, target: path.join(t.sharedTaskDir, 'logs'), readOnly: true });
      }
      if (this.#chroot) binds.push(...(await this.#chroot.embed(t.dir)));
      else this.#logger.warn({ task: name }, 'no chroot cache: the task directory gets no chroot');
      // One shell for all the mounts (the spawn costs more than they do); in two when a test kills the agent half-way.
      const split = this.#chroot?.halfBuilt ? Math.min(3, binds.length) : binds.length;
      await bindAll(binds.slice(0, split));
      this.#chroot?.halfBuilt?.(t.dir);
      await bindAll(binds.slice(split));
    } catch (err) {
      throw new AllocDirError('ALLOC_DIR_FAILED', `cannot build the chroot of task ${name} (allocation ${this.allocId}): ${describeError(err)}`, { cause: err });
    }
    return performance.now() - started;
  }

  /**
   * Undoes what buildTask mounted for task `name` (the chroot's binds and
   * the shared alloc/ bound in), once the task is dead for good: its files
   * stay (they are read until the allocation is collected); its secrets
   * tmpfs and volume mounts are not touched. Safe to repeat. Throws
   * AllocDirError when a bind cannot be undone.
   */
  async releaseTask(name: string): Promise<void> {
    const t = this.task(name);
    let left: string[];
    try {
      // The helper reads the mount table and unmounts: the agent neither parses it nor forks.
      ({ left } = await unmountUnder(t.dir, { keep: [t.secretsDir, t.localDir] }));
    } catch (err) {
      throw new AllocDirError('ALLOC_DIR_FAILED', `cannot release the chroot of task ${name} (allocation ${this.allocId}): ${describeError(err)}`, { cause: err });
    }
    if (left.length) throw new AllocDirError('ALLOC_DIR_FAILED', `cannot release the chroot of task ${name} (allocation ${this.allocId}): ${left.join(', ')} still mounted`);
  }

  /**
   * Unmounts everything under the allocation directory (secrets tmpfs, volume
   * binds) and removes it. Safe to repeat. Throws AllocDirError when a mount
   * cannot be undone (nothing is removed then, so no mounted data is deleted).
   */
  async destroy(): Promise<void> {
    // The helper removes the tree only once nothing is mounted under it.
    const { left } = await unmountUnder(this.dir, { remove: true });
    if (left.length) {
      throw new AllocDirError('ALLOC_DIR_FAILED', `cannot remove the directory of allocation ${this.allocId}: something is still mounted under it`);
    }
  }
}
