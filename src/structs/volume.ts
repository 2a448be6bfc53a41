// CSI volumes and their claims as the server keeps them. Secrets and mount
// flags are write-only: stored with the volume and used for plugin calls, but
// every read, event and log goes through `publicVolume`, which removes them.

import type { AccessMode, AttachmentMode, Topology } from '../csi/index.js';

/** One way a volume may be used: an access mode with an attachment mode. */
export interface VolumeCapabilitySpec {
  accessMode: AccessMode;
  attachmentMode: AttachmentMode;
}

/** Mount options of a file-system volume. `mountFlags` may hold credentials. */
export interface VolumeMountOptions {
  fsType: string;
  mountFlags: string[];
}

/** CreateVolume's accessibility requirement, in Berth's words. */
export interface VolumeTopologyRequest {
  required: Topology[];
  preferred: Topology[];
}

/** A CSI volume known to the server (registered, or created through the controller). */
export interface Volume {
  /** Berth's ID, unique within the namespace; what jobs name as `source`. */
  id: string;
  namespace: string;
  /** Display name; CreateVolume's `name`. */
  name: string;
  /** The plugin's own volume ID (CreateVolume's volume_id). */
  externalId: string;
  pluginId: string;
  /** The plugin's provider name when the volume was registered (GetPluginInfo name). */
  provider: string;
  /** 0 means "no opinion". */
  capacityMinBytes: number;
  capacityMaxBytes: number;
  /** What the plugin last reported; 0 when unknown. */
  capacityBytes: number;
  capabilities: VolumeCapabilitySpec[];
  mountOptions: VolumeMountOptions;
  /** Write-only: never in reads, events, logs or errors. */
  secrets: Record<string, string>;
  parameters: Record<string, string>;
  /** The plugin's volume_context, passed to every node call. */
  context: Record<string, string>;
  topologyRequest?: VolumeTopologyRequest;
  /** Where the volume can be reached (CreateVolume's accessible_topology); empty means anywhere. */
  accessibleTopology: Topology[];
  /** Snapshot or volume this one was created from, if any. */
  contentSource?: { snapshotId: string } | { volumeId: string };
  createIndex: number;
  modifyIndex: number;
}

/** What a volume looks like in every read and event: no secrets, mount flags redacted. */
export type PublicVolume = Omit<Volume, 'secrets'> & { secretNames: string[] };

/** The printed form of a redacted value (the same as lib's REDACTED). */
const REDACTED = '[REDACTED]';
const SECRET_KEY_PATTERN = /(secret|token|password|passwd|credential|private[-_]?key|api[-_]?key|auth)/i;

/**
 * The map with every value whose key looks like a credential (secret, token,
 * password, key...) shown as [REDACTED]. Pure; for context and parameter
 * maps, which plugins sometimes fill with credentials.
 */
export function redactMap(map: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, SECRET_KEY_PATTERN.test(k) ? REDACTED : v]));
}

/**
 * The public view of a volume: secrets removed (only their names kept), every
 * mount flag shown as [REDACTED], context and parameter values whose key
 * looks like a credential redacted. Pure; used by every read and event.
 */
export function publicVolume(v: Volume): PublicVolume {
  const { secrets, ...rest } = v;
  return {
    ...rest,
    mountOptions: { fsType: v.mountOptions.fsType, mountFlags: v.mountOptions.mountFlags.map(() => REDACTED) },
    parameters: redactMap(v.parameters),
    context: redactMap(v.context),
    secretNames: Object.keys(secrets ?? {}).sort(),
  };
}

/** Read claims never write; write claims may. */
export type ClaimMode = 'read' | 'write';

/**
 * The release state machine of a claim: `taken` while the allocation may use
 * the volume; then `unpublishing` (the node is being asked to unpublish and
 * unstage), `node-detached`, `controller-detached` (ControllerUnpublish done
 * or not needed) and finally `free`, when the claim row is deleted.
 */
export type ClaimState = 'taken' | 'unpublishing' | 'node-detached' | 'controller-detached' | 'free';

/**
 * Whether ControllerPublish happened for this claim: `none` (not needed or
 * never sent), `pending` (recorded before the call; a crash leaves it so, and
 * the release sends ControllerUnpublish to be safe), `published`,
 * `uncertain` (the call failed with a non-final code).
 */
export type ControllerPublishState = 'none' | 'pending' | 'published' | 'uncertain';

/** One allocation's claim on one volume. Key: namespace, volume ID, allocation ID. */
export interface VolumeClaim {
  namespace: string;
  volumeId: string;
  allocId: string;
  /**
   * Copied from the volume when the claim is taken, so that a release never
   * depends on the volume row (it may be force-deregistered).
   */
  pluginId: string;
  /** The plugin's own volume ID (the volume's `externalId`), for the same reason. */
  externalVolumeId: string;
  /** Berth's node ID of the node that mounts it. */
  nodeId: string;
  /** The plugin's NodeGetInfo.node_id on that node (what ControllerPublish was sent). */
  externalNodeId: string;
  mode: ClaimMode;
  accessMode: AccessMode;
  attachmentMode: AttachmentMode;
  state: ClaimState;
  controllerPublish: ControllerPublishState;
  /** ControllerPublish's publish_context: opaque, passed to NodeStage/NodePublish. */
  publishContext: Record<string, string>;
  /** Why the release started ("allocation complete", "node down", "detach requested"). */
  releaseReason: string;
  /** Failed release attempts so far, and the last failure, for operators. */
  releaseAttempts: number;
  lastError: string;
  /** Milliseconds since the epoch (server clock). */
  claimTime: number;
  /**
   * Set while the claim is fenced: its node went silent and may still run the
   * writer, so the claim is not released (nor handed to a replacement) before
   * this time (ms since the epoch, server clock), unless the node confirms its
   * allocation ended or an operator detaches the volume. `fenceReason` says why.
   */
  fencedUntil?: number;
  fenceReason?: string;
  /**
   * Set by an operator's forced detach: the node unmounts itself what the
   * plugin refuses to, so the release ends (docs/csi-rules.md).
   */
  releaseForced?: boolean;
  /**
   * What the node did in the plugin's place during the release, in words
   * ("the agent unmounted /path (forced): plugin said ..."); kept on the row
   * so the claim's history (its events) shows the override.
   */
  releaseOverride?: string;
  createIndex: number;
  modifyIndex: number;
}

/** The public view of a claim: publish context values with credential-looking keys redacted. */
export function publicClaim(c: VolumeClaim): VolumeClaim {
  return { ...c, publishContext: redactMap(c.publishContext) };
}

/**
 * The volume as the node that mounts a claim needs it for NodeStage and
 * NodePublish: unredacted context, mount flags and secrets. It travels only
 * in the answer to the node's own claim call; the node passes it to the
 * plugin and never logs or stores the secrets or mount flags.
 */
export interface NodeClaimVolume {
  id: string;
  namespace: string;
  externalId: string;
  pluginId: string;
  context: Record<string, string>;
  mountOptions: VolumeMountOptions;
  secrets: Record<string, string>;
}

/** The answer to a node's claim: the claim with its raw publish context, and the volume to mount. */
export type NodeClaimAnswer = VolumeClaim & { volume: NodeClaimVolume };

/** Builds a node's claim answer from the stored claim and volume rows. */
export function nodeClaimAnswer(c: VolumeClaim, v: Volume): NodeClaimAnswer {
  return {
    ...c,
    volume: {
      id: v.id,
      namespace: v.namespace,
      externalId: v.externalId,
      pluginId: v.pluginId,
      context: { ...v.context },
      mountOptions: { ...v.mountOptions, mountFlags: [...v.mountOptions.mountFlags] },
      secrets: { ...v.secrets },
    },
  };
}

/** True when a claim's access mode lets a claim of `mode` be taken at all. */
export function modeAllows(accessMode: AccessMode, mode: ClaimMode): boolean {
  return mode === 'read' || (accessMode !== 'single-node-reader-only' && accessMode !== 'multi-node-reader-only');
}
