// Hands the group volumes a task mounts to its driver. A driver that takes
// mount configurations gets them as task mounts (bound at their destinations
// with the requested propagation); for one without (raw_exec) the runner
// binds each volume at `<task dir>/local/<destination>` itself (or at the
// destination itself when it names a place inside the allocation's directory,
// as `${NOMAD_ALLOC_DIR}/data` does), and undoes it in postrun. Destinations
// may use run-time `${...}` (the task's environment expands them).

import { mkdir, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { describeError, type Logger } from '../../lib/index.js';
import type { Task } from '../../structs/index.js';
import { isMountPoint, mount, unmountAllUnder, type TaskDir } from '../allocdir/index.js';
import type { PrestartRequest, RunnerDriver, TaskHook } from '../taskrunner/index.js';
import { AllocRunnerError, type AllocHook, type AllocHookContext, type ResolvedVolume } from './alloc-hook.js';
import type { AllocRunnerRecord } from './alloc-records.js';

/** The task side: prestart adds the task's volume mounts. */
export class VolumeMountsTaskHook implements TaskHook {
  readonly name = 'volume-mounts';
  readonly #task: Task;
  readonly #driver: RunnerDriver;
  readonly #taskDir: TaskDir;
  readonly #volumes: Map<string, ResolvedVolume>;
  readonly #record: AllocRunnerRecord;
  readonly #save: () => void;

  constructor(opts: { task: Task; driver: RunnerDriver; taskDir: TaskDir; volumes: Map<string, ResolvedVolume>; record: AllocRunnerRecord; save: () => void }) {
    this.#task = opts.task;
    this.#driver = opts.driver;
    this.#taskDir = opts.taskDir;
    this.#volumes = opts.volumes;
    this.#record = opts.record;
    this.#save = opts.save;
  }

  /** Throws AllocRunnerError ALLOC_BAD_SPEC when a mounted volume was not made available. */
  async prestart(req: PrestartRequest): Promise<void> {
    for (const spec of this.#task.volumeMounts) {
      const m = { ...spec, destination: req.taskEnv.interpolate(spec.destination) };
      if (!path.isAbsolute(m.destination)) {
        throw new AllocRunnerError('ALLOC_BAD_SPEC', `task "${this.#task.name}": volume_mount destination "${m.destination}" is not an absolute path`);
      }
      const vol = this.#volumes.get(m.volume);
      if (!vol) throw new AllocRunnerError('ALLOC_BAD_SPEC', `task "${this.#task.name}": volume "${m.volume}" is not available on this node`);
      const readOnly = m.readOnly || vol.readOnly;
      if (this.#driver.capabilities.mountConfigs === 'any') {
        req.mounts.push({ source: vol.source, destination: m.destination, readOnly, propagation: m.propagationMode, volume: m.volume });
        continue;
      }
      const target = this.#hostTarget(m.destination);
      // A directory this call made holds no mount: the mount table (a read that waits on the
      // kernel's mount lock, on the agent's loop) is read only for one that was already there.
      const made = (await mkdir(target, { recursive: true })) !== undefined;
      if (!this.#record.binds.includes(target)) {
        this.#record.binds.push(target);
        this.#save();
      }
      if (!made && isMountPoint(target)) continue;
      // One mount(8) run does it all (util-linux >= 2.27): the bind, its read-only remount, and
      // private propagation, so that the task's copy shares no later mount events with the
      // plugin's target. Each run is a process start on the task's critical path.
      await mount(['--bind', '--make-private', ...(readOnly ? ['-o', 'ro'] : []), vol.source, target]);
    }
  }

  /** Where the runner binds a volume for a driver without mounts: inside the allocation directory as written, else under local/. */
  #hostTarget(destination: string): string {
    const allocRoot = path.dirname(this.#taskDir.sharedDir);
    const normal = path.normalize(destination);
    if (normal.startsWith(`${allocRoot}/`)) return normal;
    return path.join(this.#taskDir.localDir, path.normalize(`/${destination}`));
  }
}

/** The allocation side: postrun undoes the runner's own binds before volumes are unpublished. */
export class VolumeBindsHook implements AllocHook {
  readonly name = 'volume-binds';
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Throws ALLOC_VOLUME_UNMOUNT_FAILED when a bind cannot be undone (the record keeps it). */
  async postrun(ctx: AllocHookContext): Promise<void> {
    for (const target of [...ctx.record.binds].reverse()) {
      try {
        await unmountAllUnder(target);
      } catch (err) {
        throw new AllocRunnerError('ALLOC_VOLUME_UNMOUNT_FAILED', `cannot unmount the volume bound at ${target}: ${describeError(err)}`, { cause: err });
      }
      if (isMountPoint(target)) throw new AllocRunnerError('ALLOC_VOLUME_UNMOUNT_FAILED', `the volume bound at ${target} is still mounted`);
      await rmdir(target).catch((err: unknown) => this.#logger.debug({ target, err: describeError(err) }, 'bind target not removed'));
      ctx.record.binds = ctx.record.binds.filter((b) => b !== target);
      ctx.save();
    }
  }
}
