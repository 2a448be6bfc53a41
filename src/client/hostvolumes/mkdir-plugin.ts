// Nomad's built-in `mkdir` host volume plugin: a directory named after the
// volume's ID under the node's host volumes dir, with the `mode` (octal,
// default 0700), `uid` and `gid` parameters Nomad's takes. Always present.

import { chmod, chown, mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { describeError } from '../../lib/index.js';
import { MKDIR_PLUGIN_ID, MKDIR_PLUGIN_VERSION } from '../../structs/index.js';
import { HostVolumeError } from './errors.js';
import type { HostVolumeCreated, HostVolumePlugin, HostVolumeRequest } from './host-volume-plugin.js';

/** Parameters the plugin takes (Nomad's HostVolumePluginMkdirParams); -1: leave as created. */
export interface MkdirParams {
  mode: number;
  uid: number;
  gid: number;
}

/** Nomad's decodeMkdirParams: throws HostVolumeError CLIENT_HOST_VOLUME_INVALID naming the parameter. Pure. */
export function mkdirParams(params: Readonly<Record<string, string>>): MkdirParams {
  const out: MkdirParams = { mode: 0o700, uid: -1, gid: -1 };
  for (const [key, value] of Object.entries(params)) {
    const bad = (why: string): HostVolumeError => new HostVolumeError('CLIENT_HOST_VOLUME_INVALID', `invalid value for "${key}": ${why}`);
    if (key === 'mode') {
      if (!/^[0-7]{1,11}$/.test(value)) throw bad(`"${value}" is not an octal mode such as "0755"`);
      out.mode = parseInt(value, 8);
    } else if (key === 'uid' || key === 'gid') {
      if (!/^-?\d+$/.test(value)) throw bad(`"${value}" is not a number`);
      out[key] = Number(value);
    } else throw new HostVolumeError('CLIENT_HOST_VOLUME_INVALID', `unknown mkdir parameter: "${key}"`);
  }
  return out;
}

export class MkdirPlugin implements HostVolumePlugin {
  readonly id = MKDIR_PLUGIN_ID;
  readonly #volumesDir: string;

  constructor(volumesDir: string) {
    this.#volumesDir = volumesDir;
  }

  async fingerprint(): Promise<string> {
    return MKDIR_PLUGIN_VERSION;
  }

  async create(req: HostVolumeRequest): Promise<HostVolumeCreated> {
    const dir = path.join(this.#volumesDir, req.id);
    const answer = { path: dir, bytes: 0 };
    try {
      await stat(dir);
      return answer; // already made: as Nomad's, its parameters are not applied again
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new HostVolumeError('CLIENT_HOST_VOLUME_PLUGIN_FAILED', `error with path ${dir}: ${describeError(err)}`, { cause: err });
    }
    const params = mkdirParams(req.parameters);
    try {
      await mkdir(dir, { recursive: true, mode: params.mode });
      // mkdir's mode is masked by the umask: set it exactly.
      await chmod(dir, params.mode);
    } catch (err) {
      throw new HostVolumeError('CLIENT_HOST_VOLUME_PLUGIN_FAILED', `error creating directory: ${describeError(err)}`, { cause: err });
    }
    if (params.uid !== -1 || params.gid !== -1) {
      try {
        await chown(dir, params.uid, params.gid);
      } catch (err) {
        // Failing to set the owner is fatal, and the directory is removed again (as Nomad's).
        await rm(dir, { recursive: true, force: true });
        throw new HostVolumeError('CLIENT_HOST_VOLUME_PLUGIN_FAILED', `error changing owner/group: ${describeError(err)}`, { cause: err });
      }
    }
    return answer;
  }

  async delete(req: HostVolumeRequest): Promise<void> {
    try {
      await rm(path.join(this.#volumesDir, req.id), { recursive: true, force: true });
    } catch (err) {
      throw new HostVolumeError('CLIENT_HOST_VOLUME_PLUGIN_FAILED', `error deleting directory: ${describeError(err)}`, { cause: err });
    }
  }
}
