import type { BackoffPolicy } from '../lib/index.js';
import type { GrpcCodeName } from './errors.js';

/** Every CSI RPC Berth calls, by its method name. */
export type CsiRpc =
  | 'GetPluginInfo'
  | 'GetPluginCapabilities'
  | 'Probe'
  | 'CreateVolume'
  | 'DeleteVolume'
  | 'ControllerPublishVolume'
  | 'ControllerUnpublishVolume'
  | 'ValidateVolumeCapabilities'
  | 'ListVolumes'
  | 'GetCapacity'
  | 'ControllerGetCapabilities'
  | 'CreateSnapshot'
  | 'DeleteSnapshot'
  | 'ListSnapshots'
  | 'ControllerExpandVolume'
  | 'ControllerGetVolume'
  | 'ControllerModifyVolume'
  | 'GetSnapshot'
  | 'GroupControllerGetCapabilities'
  | 'CreateVolumeGroupSnapshot'
  | 'DeleteVolumeGroupSnapshot'
  | 'GetVolumeGroupSnapshot'
  | 'NodeStageVolume'
  | 'NodeUnstageVolume'
  | 'NodePublishVolume'
  | 'NodeUnpublishVolume'
  | 'NodeGetVolumeStats'
  | 'NodeExpandVolume'
  | 'NodeGetCapabilities'
  | 'NodeGetInfo';

/** How one RPC is called: its deadline per attempt and when it is retried. */
export interface RpcPolicy {
  /** Deadline of one attempt, sent to the plugin as the gRPC deadline. */
  deadlineMs: number;
  backoff: BackoffPolicy;
  /** Codes retried with the same arguments. UNIMPLEMENTED is never among them. */
  retryOn: ReadonlySet<GrpcCodeName>;
}

const TRANSIENT: ReadonlySet<GrpcCodeName> = new Set(['UNAVAILABLE', 'DEADLINE_EXCEEDED', 'CANCELLED']);
// ABORTED means "another operation is pending for this volume": back off and retry.
const TRANSIENT_OR_BUSY: ReadonlySet<GrpcCodeName> = new Set([...TRANSIENT, 'ABORTED']);

const quick: BackoffPolicy = { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 1_000, multiplier: 2, jitter: 0.2 };
const volumeOp: BackoffPolicy = { maxAttempts: 5, initialDelayMs: 500, maxDelayMs: 15_000, multiplier: 2, jitter: 0.2 };
const once: BackoffPolicy = { maxAttempts: 1, initialDelayMs: 0, maxDelayMs: 0, multiplier: 1, jitter: 0 };

const identity: RpcPolicy = { deadlineMs: 10_000, backoff: quick, retryOn: TRANSIENT };
// A probe is itself retried by the health checker on its own interval.
const probe: RpcPolicy = { deadlineMs: 5_000, backoff: once, retryOn: new Set() };
const nodeVolume: RpcPolicy = { deadlineMs: 60_000, backoff: volumeOp, retryOn: TRANSIENT_OR_BUSY };
const controllerVolume: RpcPolicy = { deadlineMs: 120_000, backoff: volumeOp, retryOn: TRANSIENT_OR_BUSY };
const provisioning: RpcPolicy = { deadlineMs: 300_000, backoff: volumeOp, retryOn: TRANSIENT_OR_BUSY };
const read: RpcPolicy = { deadlineMs: 30_000, backoff: quick, retryOn: TRANSIENT_OR_BUSY };
// For paged lists ABORTED means a bad token: the caller restarts from the top.
const list: RpcPolicy = { deadlineMs: 30_000, backoff: quick, retryOn: TRANSIENT };

/** The default policy of every RPC. Callers may override the deadline per call. */
export const RPC_POLICIES: Readonly<Record<CsiRpc, RpcPolicy>> = {
  GetPluginInfo: identity,
  GetPluginCapabilities: identity,
  Probe: probe,
  ControllerGetCapabilities: identity,
  GroupControllerGetCapabilities: identity,
  NodeGetCapabilities: identity,
  NodeGetInfo: identity,
  CreateVolume: provisioning,
  DeleteVolume: provisioning,
  CreateSnapshot: provisioning,
  DeleteSnapshot: provisioning,
  ControllerExpandVolume: provisioning,
  ControllerModifyVolume: provisioning,
  CreateVolumeGroupSnapshot: provisioning,
  DeleteVolumeGroupSnapshot: provisioning,
  ControllerPublishVolume: controllerVolume,
  ControllerUnpublishVolume: controllerVolume,
  ValidateVolumeCapabilities: read,
  GetCapacity: read,
  ControllerGetVolume: read,
  GetSnapshot: read,
  GetVolumeGroupSnapshot: read,
  ListVolumes: list,
  ListSnapshots: list,
  NodeStageVolume: nodeVolume,
  NodeUnstageVolume: nodeVolume,
  NodePublishVolume: nodeVolume,
  NodeUnpublishVolume: nodeVolume,
  NodeExpandVolume: nodeVolume,
  NodeGetVolumeStats: read,
};
