// CSI volumes, snapshots and plugins as Nomad's API encodes them: transcribed
// from Nomad's `api/csi.go` and the CSI parts of `api/nodes.go` (CSIInfo,
// CSITopology). Routes: `/v1/volumes?type=csi`, `/v1/volume/csi/:id` (GET,
// PUT register, DELETE deregister, `/create`, `/delete`, `/detach`),
// `/v1/volumes/snapshot`, `/v1/volumes/external`, `/v1/plugins?type=csi`,
// `/v1/plugin/csi/:id`.
//
// Answers are strict objects: every field Nomad's encoder writes, present
// when empty (Go writes `null` for a nil map, slice or pointer, `""` and `0`
// for unset values, `"0001-01-01T00:00:00Z"` for a zero time). Requests are
// read as Go's decoder reads them: unknown fields ignored, missing ones zero.
//
// What Berth adds to these shapes (a volume's claims with their release
// states, its usage and condition, the names of its secrets; a plugin's
// nodes at their volume limit) are fields named `Berth...`, marked "Berth:"
// below; the shapes of Berth's own routes are in csi-berth.ts.

import { z } from 'zod';
import { AllocationListStub } from './allocations.js';
import { NodeVolumeUsage, VolumeClaimState, VolumeCondition } from './csi-berth.js';
import { CSIMountOptions } from './job-task-blocks.js';
import { lazySchema } from './lazy-schema.js';

const int = lazySchema(() => z.number().int());
const stringMap = lazySchema(() => z.record(z.string(), z.string()));

/**
 * The query meta Nomad's server writes into the body of a write's answer
 * (its `structs.QueryMeta`, embedded in CSIVolumeCreateResponse and the
 * others): Go promotes the embedded fields, so they sit beside `Volumes`.
 */
const queryMetaFields = () => ({
  Index: int.nonnegative(),
  /** Nanoseconds (a Go time.Duration); 0 on the leader. */
  LastContact: int,
  KnownLeader: z.boolean(),
  NextToken: z.string(),
});

/** Nomad's WriteRequest fields a Go client may put in a write's body. */
const writeRequestFields = () => ({
  Region: z.string().optional(),
  Namespace: z.string().optional(),
  SecretID: z.string().optional(),
  IdempotencyToken: z.string().optional(),
});

export const CSIVolumeAccessMode = lazySchema(() => z.enum([
  '',
  'single-node-reader-only',
  'single-node-writer',
  'multi-node-reader-only',
  'multi-node-single-writer',
  'multi-node-multi-writer',
  // Berth: CSI's SINGLE_NODE_MULTI_WRITER modes, for plugins that advertise it.
  'single-node-single-writer',
  'single-node-multi-writer',
]));
export type CSIVolumeAccessMode = z.infer<typeof CSIVolumeAccessMode>;

export const CSIVolumeAttachmentMode = lazySchema(() => z.enum(['', 'block-device', 'file-system']));
export type CSIVolumeAttachmentMode = z.infer<typeof CSIVolumeAttachmentMode>;

export const CSITopology = lazySchema(() => z.strictObject({ Segments: stringMap.nullable() }));
export type CSITopology = z.infer<typeof CSITopology>;

export const CSITopologyRequest = lazySchema(() => z.strictObject({
  Required: z.array(CSITopology).nullable(),
  Preferred: z.array(CSITopology).nullable(),
}));
export type CSITopologyRequest = z.infer<typeof CSITopologyRequest>;

// CSIMountOptions (FSType, MountFlags) is the jobs family's (job-task-blocks.ts): a
// group's volume request carries the same struct. In a volume's answer every mount
// flag is hidden: `["[REDACTED]"]`, as Nomad's Sanitize writes it.

export const CSIVolumeCapability = lazySchema(() => z.strictObject({
  AccessMode: CSIVolumeAccessMode,
  AttachmentMode: CSIVolumeAttachmentMode,
}));
export type CSIVolumeCapability = z.infer<typeof CSIVolumeCapability>;

/**
 * A volume (`GET /v1/volume/csi/:id`, and each of `Volumes` in the answers
 * to register and create).
 */
export const CSIVolume = lazySchema(() => z.strictObject({
  ID: z.string(),
  Name: z.string(),
  ExternalID: z.string(),
  Namespace: z.string(),
  /** What was asked of CreateVolume; null when nothing was. */
  RequestedTopologies: CSITopologyRequest.nullable(),
  /** Where the plugin says the volume can be reached; null or empty: anywhere. */
  Topologies: z.array(CSITopology).nullable(),
  /** The access mode of the volume's current claims; "" while unclaimed. */
  AccessMode: CSIVolumeAccessMode,
  AttachmentMode: CSIVolumeAttachmentMode,
  MountOptions: CSIMountOptions.nullable(),
  /** Write-only: always null in an answer (Nomad's Sanitize; Berth's too). */
  Secrets: stringMap.nullable(),
  /** Values whose key looks like a credential are shown as "[REDACTED]". */
  Parameters: stringMap.nullable(),
  Context: stringMap.nullable(),
  /** Bytes, as the plugin last reported; 0 when unknown. */
  Capacity: int,
  RequestedCapacityMin: int,
  RequestedCapacityMax: int,
  RequestedCapabilities: z.array(CSIVolumeCapability).nullable(),
  CloneID: z.string(),
  SnapshotID: z.string(),
  /** Allocation ID -> null (Nomad never fills the value), for each read claim taken. */
  ReadAllocs: z.record(z.string(), z.null()).nullable(),
  WriteAllocs: z.record(z.string(), z.null()).nullable(),
  /** The allocations of ReadAllocs and WriteAllocs. */
  Allocations: z.array(AllocationListStub).nullable(),
  Schedulable: z.boolean(),
  PluginID: z.string(),
  Provider: z.string(),
  ProviderVersion: z.string(),
  ControllerRequired: z.boolean(),
  ControllersHealthy: int,
  ControllersExpected: int,
  NodesHealthy: int,
  NodesExpected: int,
  /** A Go time; zero ("0001-01-01T00:00:00Z") unless a claim found the plugin out of room. */
  ResourceExhausted: z.string(),
  CreateIndex: int.nonnegative(),
  ModifyIndex: int.nonnegative(),
  /** Unix nanoseconds; 0 when Berth does not know. */
  CreateTime: int,
  ModifyTime: int,
  /** Berth: every claim not yet free, with its release state (Nomad keeps these out of its answers). */
  BerthClaims: z.array(VolumeClaimState),
  /** Berth: the names of the volume's secrets (the values are never sent). */
  BerthSecretNames: z.array(z.string()),
  /** Berth: the latest usage per node that has the volume published (NodeGetVolumeStats); empty until one reports. */
  BerthUsage: z.array(NodeVolumeUsage),
  /** Berth: the volume's condition (VOLUME_CONDITION), null when its plugin reports none. */
  BerthCondition: VolumeCondition.nullable(),
}));
export type CSIVolume = z.infer<typeof CSIVolume>;

/** One row of `GET /v1/volumes?type=csi`. */
export const CSIVolumeListStub = lazySchema(() => z.strictObject({
  ID: z.string(),
  Namespace: z.string(),
  Name: z.string(),
  ExternalID: z.string(),
  Topologies: z.array(CSITopology).nullable(),
  AccessMode: CSIVolumeAccessMode,
  AttachmentMode: CSIVolumeAttachmentMode,
  CurrentReaders: int.nonnegative(),
  CurrentWriters: int.nonnegative(),
  Schedulable: z.boolean(),
  PluginID: z.string(),
  Provider: z.string(),
  ControllerRequired: z.boolean(),
  ControllersHealthy: int,
  ControllersExpected: int,
  NodesHealthy: int,
  NodesExpected: int,
  ResourceExhausted: z.string(),
  CreateIndex: int.nonnegative(),
  ModifyIndex: int.nonnegative(),
  CreateTime: int,
  ModifyTime: int,
  /** Berth: bytes, as the plugin last reported (Nomad's list has no capacity); 0 when unknown. */
  BerthCapacity: int,
  /** Berth: the claims being released (unpublishing, detached on the node or the controller), not yet free; CurrentReaders/Writers count the taken ones. */
  BerthClaimsReleasing: int.nonnegative(),
  /** Berth: the latest usage per node, as CSIVolume's BerthUsage; empty until one reports. */
  BerthUsage: z.array(NodeVolumeUsage),
  /** Berth: the volume's condition, as CSIVolume's BerthCondition; null when its plugin reports none. */
  BerthCondition: VolumeCondition.nullable(),
  /** Berth: how many differences about the volume the drift loop's latest comparison found (GET /v1/volume/csi/:id/drift lists them). */
  BerthDriftFindings: int.nonnegative(),
}));
export type CSIVolumeListStub = z.infer<typeof CSIVolumeListStub>;

/**
 * A volume as a client submits it: any of CSIVolume's Nomad fields (Go's
 * decoder zero-fills the missing ones, and the read-only ones are ignored).
 * `Secrets` and `MountOptions.MountFlags` are taken here and never sent back.
 */
export const CSIVolumeSubmission = lazySchema(() => z.object({
  ID: z.string().optional(),
  Name: z.string().optional(),
  ExternalID: z.string().optional(),
  Namespace: z.string().optional(),
  PluginID: z.string().optional(),
  RequestedTopologies: CSITopologyRequest.partial().nullable().optional(),
  AccessMode: CSIVolumeAccessMode.optional(),
  AttachmentMode: CSIVolumeAttachmentMode.optional(),
  MountOptions: CSIMountOptions.partial().nullable().optional(),
  Secrets: stringMap.nullable().optional(),
  Parameters: stringMap.nullable().optional(),
  Context: stringMap.nullable().optional(),
  RequestedCapacityMin: int.optional(),
  RequestedCapacityMax: int.optional(),
  RequestedCapabilities: z.array(CSIVolumeCapability).nullable().optional(),
  CloneID: z.string().optional(),
  SnapshotID: z.string().optional(),
}));
export type CSIVolumeSubmission = z.infer<typeof CSIVolumeSubmission>;

/** `PUT /v1/volume/csi/:id`: register volumes that exist in the storage provider (Berth takes exactly one). */
export const CSIVolumeRegisterRequest = lazySchema(() => z.object({
  Volumes: z.array(CSIVolumeSubmission),
  PolicyOverride: z.boolean().optional(),
  ...writeRequestFields(),
}));
export type CSIVolumeRegisterRequest = z.infer<typeof CSIVolumeRegisterRequest>;

export const CSIVolumeRegisterResponse = lazySchema(() => z.strictObject({
  Volumes: z.array(CSIVolume).nullable(),
  /** Non-fatal messages ("" when none). */
  Warnings: z.string(),
  ...queryMetaFields(),
}));
export type CSIVolumeRegisterResponse = z.infer<typeof CSIVolumeRegisterResponse>;

/** `PUT /v1/volume/csi/:id/create`: create volumes through the plugin's controller, then register them (Berth takes exactly one). */
export const CSIVolumeCreateRequest = CSIVolumeRegisterRequest;
export type CSIVolumeCreateRequest = CSIVolumeRegisterRequest;

export const CSIVolumeCreateResponse = CSIVolumeRegisterResponse;
export type CSIVolumeCreateResponse = CSIVolumeRegisterResponse;

/** Nomad's deregister request (the HTTP route takes the ID in its path and `?force=`). */
export const CSIVolumeDeregisterRequest = lazySchema(() => z.object({ VolumeIDs: z.array(z.string()), ...writeRequestFields() }));
export type CSIVolumeDeregisterRequest = z.infer<typeof CSIVolumeDeregisterRequest>;

/** Nomad's delete request (the HTTP route takes the ID in its path, secrets in `X-Nomad-CSI-Secrets`). */
export const CSIVolumeDeleteRequest = lazySchema(() => z.object({ ExternalVolumeID: z.string(), Secrets: stringMap.nullable().optional(), ...writeRequestFields() }));
export type CSIVolumeDeleteRequest = z.infer<typeof CSIVolumeDeleteRequest>;

/**
 * A snapshot as the storage provider reports it. `Name`, `Secrets` and
 * `Parameters` are used to create one and are never filled in an answer.
 */
export const CSISnapshot = lazySchema(() => z.strictObject({
  /** The storage provider's snapshot ID. */
  ID: z.string(),
  /** The storage provider's ID of the snapshotted volume. */
  ExternalSourceVolumeID: z.string(),
  SizeBytes: int,
  /** Unix seconds, as the plugin reports it; 0 when it did not. */
  CreateTime: int,
  IsReady: z.boolean(),
  /** The Nomad (Berth) volume ID; "" when no registered volume is the source. */
  SourceVolumeID: z.string(),
  PluginID: z.string(),
  Name: z.string(),
  Secrets: stringMap.nullable(),
  Parameters: stringMap.nullable(),
}));
export type CSISnapshot = z.infer<typeof CSISnapshot>;

/** One snapshot to create: the Nomad volume (`SourceVolumeID`), a name, and parameters for the plugin. */
export const CSISnapshotSubmission = lazySchema(() => z.object({
  SourceVolumeID: z.string(),
  Name: z.string().optional(),
  PluginID: z.string().optional(),
  Secrets: stringMap.nullable().optional(),
  Parameters: stringMap.nullable().optional(),
}));
export type CSISnapshotSubmission = z.infer<typeof CSISnapshotSubmission>;

/** `PUT /v1/volumes/snapshot`. */
export const CSISnapshotCreateRequest = lazySchema(() => z.object({ Snapshots: z.array(CSISnapshotSubmission), ...writeRequestFields() }));
export type CSISnapshotCreateRequest = z.infer<typeof CSISnapshotCreateRequest>;

export const CSISnapshotCreateResponse = lazySchema(() => z.strictObject({
  Snapshots: z.array(CSISnapshot).nullable(),
  ...queryMetaFields(),
}));
export type CSISnapshotCreateResponse = z.infer<typeof CSISnapshotCreateResponse>;

/** `GET /v1/volumes/snapshot?plugin_id=`: a page of the plugin's snapshots; `NextToken` names the next page ("" after the last). */
export const CSISnapshotListResponse = lazySchema(() => z.strictObject({
  Snapshots: z.array(CSISnapshot).nullable(),
  ...queryMetaFields(),
}));
export type CSISnapshotListResponse = z.infer<typeof CSISnapshotListResponse>;

/** The storage provider's view of a volume (its controller's ListVolumes); every ID is the provider's. */
export const CSIVolumeExternalStub = lazySchema(() => z.strictObject({
  ExternalID: z.string(),
  CapacityBytes: int,
  /** Values whose key looks like a credential are shown as "[REDACTED]". */
  VolumeContext: stringMap.nullable(),
  CloneID: z.string(),
  SnapshotID: z.string(),
  /** Null when the plugin does not report published nodes (no LIST_VOLUMES_PUBLISHED_NODES). */
  PublishedExternalNodeIDs: z.array(z.string()).nullable(),
  IsAbnormal: z.boolean(),
  /** The plugin's words on the volume's condition. */
  Status: z.string(),
}));
export type CSIVolumeExternalStub = z.infer<typeof CSIVolumeExternalStub>;

/** `GET /v1/volumes/external?plugin_id=`. */
export const CSIVolumeListExternalResponse = lazySchema(() => z.strictObject({
  Volumes: z.array(CSIVolumeExternalStub).nullable(),
  ...queryMetaFields(),
}));
export type CSIVolumeListExternalResponse = z.infer<typeof CSIVolumeListExternalResponse>;

/** What a controller instance can do (its ControllerGetCapabilities). */
export const CSIControllerInfo = lazySchema(() => z.strictObject({
  SupportsCreateDelete: z.boolean(),
  SupportsAttachDetach: z.boolean(),
  SupportsListVolumes: z.boolean(),
  SupportsGetCapacity: z.boolean(),
  SupportsCreateDeleteSnapshot: z.boolean(),
  SupportsListSnapshots: z.boolean(),
  SupportsClone: z.boolean(),
  SupportsReadOnlyAttach: z.boolean(),
  SupportsExpand: z.boolean(),
  SupportsListVolumesAttachedNodes: z.boolean(),
  SupportsCondition: z.boolean(),
  SupportsGet: z.boolean(),
}));
export type CSIControllerInfo = z.infer<typeof CSIControllerInfo>;

/** What a node instance is and can do (NodeGetInfo, NodeGetCapabilities). */
export const CSINodeInfo = lazySchema(() => z.strictObject({
  /** The plugin's own ID of the node. */
  ID: z.string(),
  /** 0: no limit. */
  MaxVolumes: int,
  AccessibleTopology: CSITopology.nullable(),
  RequiresNodeStageVolume: z.boolean(),
  SupportsStats: z.boolean(),
  SupportsExpand: z.boolean(),
  SupportsCondition: z.boolean(),
}));
export type CSINodeInfo = z.infer<typeof CSINodeInfo>;

/** One instance of a plugin on one node, as the node last fingerprinted it. `ControllerInfo` is on controllers only, `NodeInfo` on nodes only. */
export const CSIInfo = lazySchema(() => z.strictObject({
  PluginID: z.string(),
  AllocID: z.string(),
  Healthy: z.boolean(),
  HealthDescription: z.string(),
  /** A Go time (RFC 3339). */
  UpdateTime: z.string(),
  RequiresControllerPlugin: z.boolean(),
  RequiresTopologies: z.boolean(),
  ControllerInfo: CSIControllerInfo.optional(),
  NodeInfo: CSINodeInfo.optional(),
  /** Nomad's server sends these too (structs.CSIInfo); api's struct drops them: GetPluginInfo's name and vendor version. */
  Provider: z.string(),
  ProviderVersion: z.string(),
}));
export type CSIInfo = z.infer<typeof CSIInfo>;

/** Berth: a node where the plugin said it can take no more volumes (RESOURCE_EXHAUSTED); placement skips it for the plugin until a claim there is released. */
export const CSIPluginExhaustion = lazySchema(() => z.strictObject({
  /** A Go time (RFC 3339). */
  Since: z.string(),
  Reason: z.string(),
}));
export type CSIPluginExhaustion = z.infer<typeof CSIPluginExhaustion>;

/** `GET /v1/plugin/csi/:id`. */
export const CSIPlugin = lazySchema(() => z.strictObject({
  ID: z.string(),
  Provider: z.string(),
  Version: z.string(),
  ControllerRequired: z.boolean(),
  /** Node ID -> its controller instance. */
  Controllers: z.record(z.string(), CSIInfo).nullable(),
  /** Node ID -> its node instance. */
  Nodes: z.record(z.string(), CSIInfo).nullable(),
  /** The allocations that run the plugin. */
  Allocations: z.array(AllocationListStub).nullable(),
  ControllersHealthy: int,
  ControllersExpected: int,
  NodesHealthy: int,
  NodesExpected: int,
  CreateIndex: int.nonnegative(),
  ModifyIndex: int.nonnegative(),
  CreateTime: int,
  ModifyTime: int,
  /** Berth: node ID -> why placement treats the node as full for this plugin. */
  BerthExhaustedNodes: z.record(z.string(), CSIPluginExhaustion),
}));
export type CSIPlugin = z.infer<typeof CSIPlugin>;

/** One row of `GET /v1/plugins?type=csi`. */
export const CSIPluginListStub = lazySchema(() => z.strictObject({
  ID: z.string(),
  Provider: z.string(),
  ControllerRequired: z.boolean(),
  ControllersHealthy: int,
  ControllersExpected: int,
  NodesHealthy: int,
  NodesExpected: int,
  CreateIndex: int.nonnegative(),
  ModifyIndex: int.nonnegative(),
}));
export type CSIPluginListStub = z.infer<typeof CSIPluginListStub>;
