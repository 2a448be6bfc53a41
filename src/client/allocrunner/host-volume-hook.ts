// Group volumes of `type: host`: a host path the node's configuration names.

import { AllocRunnerError, type AllocHook, type AllocHookContext } from './alloc-hook.js';

export class HostVolumeHook implements AllocHook {
  readonly name = 'host-volumes';
  readonly #hostVolumes: Readonly<Record<string, string>>;

  constructor(hostVolumes: Readonly<Record<string, string>>) {
    this.#hostVolumes = hostVolumes;
  }

  /** Throws ALLOC_HOST_VOLUME_MISSING for a name the node does not configure. */
  async prerun(ctx: AllocHookContext): Promise<void> {
    this.#resolve(ctx);
  }

  restore(ctx: AllocHookContext): void {
    try {
      this.#resolve(ctx);
    } catch {
      // A restored allocation keeps running; prerun reports the problem if it runs again.
    }
  }

  #resolve(ctx: AllocHookContext): void {
    for (const [name, vol] of Object.entries(ctx.group.volumes)) {
      if (vol.type !== 'host') continue;
      const source = Object.hasOwn(this.#hostVolumes, vol.source) ? this.#hostVolumes[vol.source] : undefined;
      if (!source) {
        throw new AllocRunnerError('ALLOC_HOST_VOLUME_MISSING', `host volume "${vol.source}" (group volume "${name}") is not configured on this node`);
      }
      ctx.volumes.set(name, { source, readOnly: vol.readOnly });
    }
  }
}
