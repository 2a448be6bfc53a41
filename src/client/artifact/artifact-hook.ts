// The artifact hook (Nomad's taskrunner artifact hook): before the task's
// first start, fetches each `artifact` block into the task directory, in
// order (a local path, an http(s) download or a git clone), so that
// templates (which run after it) can read what it brought.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeError } from '../../lib/index.js';
import type { TaskArtifact } from '../../structs/index.js';
import { mayReadHostPath, outsideRootsMessage, reallyInside, type TaskDir } from '../allocdir/index.js';
import { TaskRunnerError, TASK_EVENTS, type PrestartRequest, type TaskHook, type TaskHookContext } from '../taskrunner/index.js';
import { ArtifactError } from './artifact-error.js';
import { DEFAULT_ARTIFACT_LIMITS, type ArtifactLimits } from './artifact-limits.js';
import { readArtifactSource, type ArtifactSource } from './artifact-source.js';
import { resolveChecksum } from './checksum-file.js';
import { fetchArtifact } from './fetch-artifact.js';
import { fetchRemote } from './fetch-remote.js';

export interface ArtifactHookOptions {
  artifacts: readonly TaskArtifact[];
  taskDir: TaskDir;
  /** The allocation directory root: no destination may leave it. */
  allocDir: string;
  /** Host directories sources may read besides the allocation's (undefined: any). */
  fileRoots?: readonly string[] | undefined;
  /** The client's `artifact` block (default Nomad's limits). */
  limits?: ArtifactLimits | undefined;
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
   * or option Berth never fetches or a destination outside the allocation,
   * and ArtifactError TASK_ARTIFACT_FAILED (recoverable: the restart policy
   * retries, as Nomad's does) for one that failed this time.
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
      let plan: ArtifactSource;
      try {
        plan = readArtifactSource(source, req.taskEnv.interpolateAll(a.options), this.#o.taskDir.dir);
      } catch (err) {
        throw new TaskRunnerError('TASK_BAD_CONFIG', describeError(err), { cause: err, recoverable: !(err instanceof ArtifactError) });
      }
      // A local source, or a git repository on this node's disk, reads the host: file_roots decide.
      const hostPath = plan.kind === 'local' ? plan.path : plan.kind === 'git' ? localRepository(plan.url) : undefined;
      if (hostPath !== undefined && !(await mayReadHostPath(hostPath, this.#o.allocDir, this.#o.fileRoots))) {
        throw new TaskRunnerError('TASK_BAD_CONFIG', `artifact source ${a.source}: ${outsideRootsMessage(this.#o.fileRoots ?? [])}`, { recoverable: false });
      }
      const limits = this.#o.limits ?? DEFAULT_ARTIFACT_LIMITS;
      const headers = req.taskEnv.interpolateAll(a.headers);
      const mayReadHost = (file: string): Promise<boolean> => mayReadHostPath(file, this.#o.allocDir, this.#o.fileRoots);
      try {
        if (plan.kind === 'local') {
          const checksumOpts = { label: a.source, headers, readTimeoutMs: limits.httpReadTimeoutMs, maxBytes: limits.httpMaxBytes, mayReadHost, signal: ctx.signal };
          const checksum = await resolveChecksum(plan.checksum, plan.path, checksumOpts);
          const unpack = { sizeLimit: limits.decompressionSizeLimit, fileCountLimit: limits.decompressionFileCountLimit };
          await fetchArtifact(plan.path, dest, { mode: a.mode, archive: plan.archive, checksum, label: a.source, limits: unpack });
        } else {
          const scratchDir = path.join(this.#o.allocDir, '.artifacts');
          await fetchRemote(plan, dest, { mode: a.mode, label: a.source, headers, scratchDir, signal: ctx.signal, limits, mayReadHost });
        }
      } catch (err) {
        if (err instanceof ArtifactError && err.code === 'TASK_ARTIFACT_UNSUPPORTED') throw new TaskRunnerError('TASK_BAD_CONFIG', err.message, { cause: err, recoverable: false });
        throw err;
      }
    }
    this.#fetched = true;
  }
}

/** The path of a git repository given as a file:// URL or an absolute path; undefined for a remote one. */
function localRepository(url: string): string | undefined {
  if (/^file:\/\//i.test(url)) return fileURLToPath(url);
  return url.startsWith('/') ? url : undefined;
}
