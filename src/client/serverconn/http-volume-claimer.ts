// The node's side of volume claims, over the server's HTTP API: the CSI hook
// claims a volume for an allocation before mounting it and releases the
// claim after unmounting. Retrying is the caller's business (the CSI hook
// retries while claims are exhausted or the server is unreachable); every
// failure here says whether a retry may cure it.

import { BerthError, SecretMap } from '../../lib/index.js';
import type { ClaimedVolume, VolumeClaimer, VolumeClaimRequest } from '../allocrunner/index.js';
import type { ServerApi } from './server-api.js';

/**
 * The runners' VolumeClaimer over POST /v1/volume/csi/:id/claim and /release.
 * `claim` blocks for the server's ControllerPublish; it is safe to repeat
 * for the same allocation (the server answers the claim it already has).
 * Rejects with ServerConnError: SERVER_REFUSED with apiCode NOT_FOUND,
 * INVALID (final), CONFLICT or EXHAUSTED (retryable: another writer, no
 * room on the node yet), SERVER_UNREACHABLE (retryable); AbortedError when
 * `signal` fires. `release` treats a claim the server no longer has as
 * released.
 */
export class HttpVolumeClaimer implements VolumeClaimer {
  readonly #api: ServerApi;

  constructor(opts: { api: ServerApi }) {
    this.#api = opts.api;
  }

  async claim(req: VolumeClaimRequest, opts: { signal?: AbortSignal } = {}): Promise<{ volume: ClaimedVolume; publishContext: Record<string, string> }> {
    const claim = await this.#api.claim(req, opts.signal ? { signal: opts.signal } : {});
    const volume = claim.volume;
    const flags = volume.mountOptions.mountFlags;
    const fsType = volume.mountOptions.fsType;
    return {
      volume: {
        id: volume.id,
        externalId: volume.externalId || claim.externalVolumeId || volume.id,
        pluginId: volume.pluginId,
        namespace: volume.namespace,
        context: { ...volume.context },
        accessMode: claim.accessMode,
        attachmentMode: claim.attachmentMode,
        ...(fsType || flags.length ? { mountOptions: { ...(fsType ? { fsType } : {}), ...(flags.length ? { mountFlags: [...flags] } : {}) } } : {}),
        ...(Object.keys(volume.secrets).length ? { secrets: new SecretMap(volume.secrets) } : {}),
      },
      publishContext: { ...claim.publishContext },
    };
  }

  async release(req: { namespace: string; volumeId: string; allocId: string }, opts: { signal?: AbortSignal } = {}): Promise<void> {
    try {
      await this.#api.release(req, opts.signal ? { signal: opts.signal } : {});
    } catch (err) {
      // A claim (or volume) the server does not have is a claim nobody holds.
      if (err instanceof BerthError && (err as { apiCode?: string }).apiCode === 'NOT_FOUND') return;
      throw err;
    }
  }
}
