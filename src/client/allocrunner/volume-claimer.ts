// What the allocation runner needs of the server: volume claims, and a place
// to send the allocation's status. R3's node agent implements both over HTTP.

import type { SecretMap } from '../../lib/index.js';
import type { AllocClientStatus, AllocNetworkStatus, TaskState } from '../../structs/index.js';

/** The volume a claim gave the node, with what it needs to stage and publish it. */
export interface ClaimedVolume {
  /** Berth's volume ID. */
  id: string;
  /** The plugin's volume_id. */
  externalId: string;
  pluginId: string;
  namespace: string;
  /** volume_context, passed to NodeStage and NodePublish. */
  context: Record<string, string>;
  accessMode: string;
  attachmentMode: string;
  /** Mount flags may carry credentials: never logged, never written down. */
  mountOptions?: { fsType?: string; mountFlags?: string[] };
  /** The volume's secrets for NodeStage/NodePublish: handed to the plugin, never logged, never written down. */
  secrets?: SecretMap;
}

export interface VolumeClaimRequest {
  namespace: string;
  volumeId: string;
  allocId: string;
  mode: 'read' | 'write';
  /** The group volume's requested access and attachment modes (the server checks them against the volume). */
  accessMode?: string;
  attachmentMode?: string;
}

/**
 * Claims and releases CSI volumes for allocations on this node (the server's
 * POST /v1/volume/csi/:id/claim and /release). Both may wait on the network
 * and honour `signal`.
 *
 * claim: safe to repeat for the same allocation (the server answers with the
 * existing claim). Throws an error whose `retryable` is true (or whose code
 * is one of CLAIM_RETRYABLE_CODES) while claims are exhausted or the server is
 * unreachable; any other error is final and fails the allocation.
 *
 * release: safe to repeat; releasing a claim that is gone is no error.
 */
export interface VolumeClaimer {
  claim(
    req: VolumeClaimRequest,
    opts: { signal?: AbortSignal },
  ): Promise<{ volume: ClaimedVolume; publishContext: Record<string, string> }>;
  release(req: { namespace: string; volumeId: string; allocId: string }, opts: { signal?: AbortSignal }): Promise<void>;
}

/**
 * Error codes a claimer may throw that mean "try again later": the CSI hook
 * retries these with backoff (an error with `retryable: true` is retried too).
 */
export const CLAIM_RETRYABLE_CODES: readonly string[] = [
  'CLAIM_EXHAUSTED',
  'VOLUME_CLAIM_EXHAUSTED',
  'RESOURCE_EXHAUSTED',
  'UNAVAILABLE',
  'SERVER_UNREACHABLE',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
];

/** One status change of an allocation, as the runner pushes it. */
export interface AllocStatusUpdate {
  allocId: string;
  clientStatus: AllocClientStatus;
  clientDescription: string;
  taskStates: Record<string, TaskState>;
  network?: AllocNetworkStatus;
}

/**
 * Told of every change of an allocation's status (task state, event, client
 * status). Called synchronously from the runner; must not throw or block
 * (a throw is caught and logged). Updates for one allocation arrive in order.
 */
export type AllocStatusSink = (update: AllocStatusUpdate) => void;
