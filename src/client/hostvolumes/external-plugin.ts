// An external host volume plugin: an executable in the client's
// `host_volume_plugin_dir`, run as Nomad runs it (client/hostvolumemanager/
// host_volume_plugin.go): the verb as $1 and in DHV_OPERATION, the volume in
// DHV_* variables (and nothing else in the environment), a JSON answer on
// stdout (`{"version": ...}`, `{"path": ..., "bytes": ...}`), failures as a
// non-zero exit with an optional `{"error": ...}`. stderr is only logged.

import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';
import { anySignal, silentLogger, type Logger } from '../../lib/index.js';
import { HostVolumeError } from './errors.js';
import type { HostVolumeCreated, HostVolumePlugin, HostVolumeRequest } from './host-volume-plugin.js';

/** How long each verb may run (Nomad's: 5 s to fingerprint, the 60 s RPC timeout otherwise). */
const FINGERPRINT_MS = 5_000;
const OPERATION_MS = 60_000;

/**
 * The plugin `id` in `pluginDir`. Rejects with HostVolumeError
 * CLIENT_HOST_VOLUME_PLUGIN_NOT_FOUND (`no such plugin: "<id>"`, also for an
 * ID that is not a plain file name) or ..._NOT_EXECUTABLE, Nomad's words.
 */
export async function openExternalPlugin(opts: { pluginDir: string; id: string; volumesDir: string; logger?: Logger }): Promise<ExternalPlugin> {
  const { pluginDir, id } = opts;
  const file = path.join(pluginDir, id);
  if (!id || id !== path.basename(id) || id === '.' || id === '..' || !pluginDir) {
    throw new HostVolumeError('CLIENT_HOST_VOLUME_PLUGIN_NOT_FOUND', `no such plugin: "${id}"`);
  }
  try {
    if (!(await stat(file)).isFile()) throw new Error('not a file');
  } catch {
    throw new HostVolumeError('CLIENT_HOST_VOLUME_PLUGIN_NOT_FOUND', `no such plugin: "${id}"`);
  }
  try {
    await access(file, constants.X_OK);
  } catch {
    throw new HostVolumeError('CLIENT_HOST_VOLUME_PLUGIN_NOT_EXECUTABLE', `plugin not executable: "${id}"`);
  }
  return new ExternalPlugin({ ...opts, executable: file });
}

interface RunResult {
  stdout: string;
  stderr: string;
  /** Go's wording of the failure ("exit status 1", "signal: killed"), absent on success. */
  failure?: string;
}

export class ExternalPlugin implements HostVolumePlugin {
  readonly id: string;
  readonly #executable: string;
  readonly #pluginDir: string;
  readonly #volumesDir: string;
  readonly #log: Logger;

  constructor(opts: { id: string; executable: string; pluginDir: string; volumesDir: string; logger?: Logger }) {
    this.id = opts.id;
    this.#executable = opts.executable;
    this.#pluginDir = opts.pluginDir;
    this.#volumesDir = opts.volumesDir;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'host-volume-plugin', pluginId: opts.id });
  }

  async fingerprint(opts: { signal?: AbortSignal } = {}): Promise<string> {
    const r = await this.#run('fingerprint', { DHV_OPERATION: 'fingerprint' }, FINGERPRINT_MS, opts.signal);
    if (r.failure) throw new HostVolumeError('CLIENT_HOST_VOLUME_PLUGIN_FAILED', `error fingerprinting plugin "${this.id}": ${r.failure}`);
    const answer = parseJson(r.stdout) as { version?: unknown } | undefined;
    if (!answer || typeof answer.version !== 'string' || !/^v?\d+(\.\d+)*([-+][0-9A-Za-z.+-]*)?$/.test(answer.version)) {
      throw new HostVolumeError('CLIENT_HOST_VOLUME_PLUGIN_FAILED', `error parsing fingerprint output as json: plugin "${this.id}" answered ${JSON.stringify(r.stdout.trim().slice(0, 200))}, not {"version": "<version>"}`);
    }
    return answer.version.replace(/^v/, '');
  }

  async create(req: HostVolumeRequest, opts: { signal?: AbortSignal } = {}): Promise<HostVolumeCreated> {
    const env = {
      ...this.#env('create', req),
      DHV_CAPACITY_MIN_BYTES: String(req.capacityMinBytes),
      DHV_CAPACITY_MAX_BYTES: String(req.capacityMaxBytes),
    };
    const r = await this.#run('create', env, OPERATION_MS, opts.signal);
    const answer = parseJson(r.stdout) as { path?: unknown; bytes?: unknown; error?: unknown } | undefined;
    if (r.failure) {
      const why = typeof answer?.error === 'string' && answer.error ? `: ${answer.error}` : '';
      throw new HostVolumeError('CLIENT_HOST_VOLUME_PLUGIN_FAILED', `error creating volume "${req.id}" with plugin "${this.id}": ${r.failure}${why}`);
    }
    if (!answer || typeof answer.path !== 'string' || !answer.path) {
      throw new HostVolumeError('CLIENT_HOST_VOLUME_PLUGIN_FAILED', `plugin "${this.id}" created volume "${req.id}" but answered ${JSON.stringify(r.stdout.trim().slice(0, 200))}, not {"path": "<path>", "bytes": <n>}`);
    }
    if (!path.isAbsolute(answer.path)) throw new HostVolumeError('CLIENT_HOST_VOLUME_PLUGIN_FAILED', `plugin "${this.id}" answered path "${answer.path}", which is not absolute`);
    return { path: answer.path, bytes: typeof answer.bytes === 'number' && Number.isSafeInteger(answer.bytes) && answer.bytes > 0 ? answer.bytes : 0 };
  }

  async delete(req: HostVolumeRequest & { createdPath: string }, opts: { signal?: AbortSignal } = {}): Promise<void> {
    const r = await this.#run('delete', { ...this.#env('delete', req), DHV_CREATED_PATH: req.createdPath }, OPERATION_MS, opts.signal);
    if (!r.failure) return;
    const answer = parseJson(r.stdout) as { error?: unknown } | undefined;
    const why = typeof answer?.error === 'string' && answer.error ? `: ${answer.error}` : '';
    throw new HostVolumeError('CLIENT_HOST_VOLUME_PLUGIN_FAILED', `error deleting volume "${req.id}" with plugin "${this.id}": ${r.failure}${why}`);
  }

  #env(op: 'create' | 'delete', req: HostVolumeRequest): Record<string, string> {
    return {
      DHV_OPERATION: op,
      DHV_VOLUMES_DIR: this.#volumesDir,
      DHV_PLUGIN_DIR: this.#pluginDir,
      DHV_NODE_POOL: req.nodePool,
      DHV_NAMESPACE: req.namespace,
      DHV_VOLUME_NAME: req.name,
      DHV_VOLUME_ID: req.id,
      DHV_NODE_ID: req.nodeId,
      DHV_PARAMETERS: JSON.stringify(req.parameters ?? {}),
    };
  }

  #run(op: string, env: Record<string, string>, timeoutMs: number, signal: AbortSignal | undefined): Promise<RunResult> {
    const deadline = anySignal([AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : [])]);
    return new Promise((resolve) => {
      execFile(this.#executable, [op], { env, signal: deadline, maxBuffer: 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
        const result: RunResult = { stdout, stderr };
        if (err) {
          const e = err as NodeJS.ErrnoException & { code?: unknown; signal?: NodeJS.Signals | null };
          result.failure = typeof e.code === 'number' ? `exit status ${e.code}` : e.signal ? `signal: ${e.signal === 'SIGTERM' && deadline.aborted ? 'killed (timed out)' : e.signal}` : e.message;
          this.#log.warn({ operation: op, failure: result.failure, stdout: stdout.slice(0, 2000), stderr: stderr.slice(0, 2000) }, 'host volume plugin failed');
        } else this.#log.debug({ operation: op, stderr: stderr.slice(0, 2000) }, 'host volume plugin ran');
        resolve(result);
      });
    });
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
