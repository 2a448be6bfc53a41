// The artifact hook (Nomad's taskrunner artifact hook): before the task's
// first start, fetches each `artifact` block into the task directory, in
// order, so that templates (which run after it) can read what it brought.

import { describeError } from '../../lib/index.js';
import type { TaskArtifact } from '../../structs/index.js';
import { mayReadHostPath, outsideRootsMessage, reallyInside, type TaskDir } from '../allocdir/index.js';
import { TaskRunnerError, TASK_EVENTS, type PrestartRequest, type TaskHook, type TaskHookContext } from '../taskrunner/index.js';
import { ArtifactError, fetchArtifact, localArtifactPath } from './fetch-artifact.js';

export interface ArtifactHookOptions {
  artifacts: readonly TaskArtifact[];
  taskDir: TaskDir;
  /** The allocation directory root: no destination may leave it. */
  allocDir: string;
  /** Host directories sources may read besides the allocation's (undefined: any). */
  fileRoots?: readonly string[] | undefined;
}

/** Fetches a task's artifacts once per task runner (a restart keeps what was fetched, as Nomad does). */
export class ArtifactHook implements TaskHook {
  readonly name = 'artifacts';
  readonly #o: ArtifactHookOptions;
  #fetched = false;

  constructor(opts: ArtifactHookOptions) {
    this.#o = opts;
  }

  /**
   * Throws TaskRunnerError TASK_BAD_CONFIG (not recoverable) for a source
   * Berth never fetches or a destination outside the allocation, and
   * ArtifactError TASK_ARTIFACT_FAILED for one that failed this time.
   */
  async prestart(req: PrestartRequest, ctx: TaskHookContext): Promise<void> {
    if (this.#fetched || this.#o.artifacts.length === 0) return;
    ctx.runner.event(TASK_EVENTS.artifactsFetched, `Fetching ${this.#o.artifacts.length} artifact(s)`);
    for (const a of this.#o.artifacts) {
      const source = req.taskEnv.interpolate(a.source);
      const { path: dest, escapes } = req.taskEnv.clientPath(a.destination);
      // Lexically, then with symlinks resolved (a task's link out of the allocation is never followed).
      if (escapes || !(await reallyInside(dest, this.#o.allocDir))) {
        throw new TaskRunnerError('TASK_BAD_CONFIG', `artifact source ${a.source}: destination ${a.destination} escapes the allocation directory`, { recoverable: false });
      }
      let src: string;
      try {
        src = localArtifactPath(source, this.#o.taskDir.dir);
      } catch (err) {
        throw new TaskRunnerError('TASK_BAD_CONFIG', describeError(err), { cause: err, recoverable: !(err instanceof ArtifactError) });
      }
      if (!(await mayReadHostPath(src, this.#o.allocDir, this.#o.fileRoots))) {
        throw new TaskRunnerError('TASK_BAD_CONFIG', `artifact source ${a.source}: ${outsideRootsMessage(this.#o.fileRoots ?? [])}`, { recoverable: false });
      }
      const unpack = !['false', '0'].includes(a.options['archive'] ?? 'true');
      await fetchArtifact(src, dest, { mode: a.mode, unpack, label: a.source });
    }
    this.#fetched = true;
  }
}
