// Berth's own view of what a CSI plugin says about itself and its volumes.
// Plain, JSON-friendly objects: the fingerprint a node stores and reports.
// Protobuf types never leave src/csi; these are what the rest of Berth sees.

import type { SecretMap } from '../lib/index.js';
import type { VolumeCapability } from './capability.js';

/** Capabilities named as the spec names them (PluginCapability.Service.Type). */
export type PluginServiceCapability =
  | 'CONTROLLER_SERVICE'
  | 'VOLUME_ACCESSIBILITY_CONSTRAINTS'
  | 'GROUP_CONTROLLER_SERVICE'
  | 'SNAPSHOT_METADATA_SERVICE';

/** PluginCapability.VolumeExpansion.Type. */
export type VolumeExpansionCapability = 'ONLINE' | 'OFFLINE';

/** ControllerServiceCapability.RPC.Type. */
export type ControllerCapability =
  | 'CREATE_DELETE_VOLUME'
  | 'PUBLISH_UNPUBLISH_VOLUME'
  | 'LIST_VOLUMES'
  | 'GET_CAPACITY'
  | 'CREATE_DELETE_SNAPSHOT'
  | 'LIST_SNAPSHOTS'
  | 'CLONE_VOLUME'
  | 'PUBLISH_READONLY'
  | 'EXPAND_VOLUME'
  | 'LIST_VOLUMES_PUBLISHED_NODES'
  | 'VOLUME_CONDITION'
  | 'GET_VOLUME'
  | 'SINGLE_NODE_MULTI_WRITER'
  | 'MODIFY_VOLUME'
  | 'GET_SNAPSHOT';

/** NodeServiceCapability.RPC.Type. */
export type NodeCapability =
  | 'STAGE_UNSTAGE_VOLUME'
  | 'GET_VOLUME_STATS'
  | 'EXPAND_VOLUME'
  | 'VOLUME_CONDITION'
  | 'SINGLE_NODE_MULTI_WRITER'
  | 'VOLUME_MOUNT_GROUP';

/** GroupControllerServiceCapability.RPC.Type. */
export type GroupControllerCapability = 'CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT';

/** GetPluginInfo: who the plugin is. */
export interface PluginInfo {
  /** Domain-like name, e.g. `hostpath.csi.berth.dev`; the "provider". */
  name: string;
  vendorVersion: string;
  manifest: Record<string, string>;
}

/** GetPluginCapabilities. Unknown values a newer plugin sends are dropped. */
export interface PluginCapabilities {
  services: PluginServiceCapability[];
  volumeExpansion: VolumeExpansionCapability[];
}

/** A topology segment set: key/value pairs such as `{ "topology.berth.dev/node": "n1" }`. */
export type Topology = Record<string, string>;

/** NodeGetInfo. */
export interface NodeInfo {
  /** The plugin's own ID for this node; what ControllerPublish must be sent. */
  nodeId: string;
  /** 0 means the plugin sets no limit. */
  maxVolumesPerNode: number;
  accessibleTopology?: Topology;
}

/** Probe: `ready` is false while the plugin is still starting. */
export interface ProbeResult {
  ready: boolean;
}

/**
 * Everything Berth learns from a plugin when it first connects. Controller and
 * node parts are present only for the services the plugin runs.
 */
export interface PluginFingerprint {
  info: PluginInfo;
  capabilities: PluginCapabilities;
  controller?: { capabilities: ControllerCapability[] };
  node?: { capabilities: NodeCapability[]; info: NodeInfo };
}

/** Where a new volume's content comes from. */
export type VolumeContentSource = { snapshotId: string } | { volumeId: string };

/** A volume as CreateVolume / ListVolumes / ControllerGetVolume report it. */
export interface CsiVolume {
  volumeId: string;
  /** 0 means unknown. */
  capacityBytes: number;
  volumeContext: Record<string, string>;
  contentSource?: VolumeContentSource;
  accessibleTopology: Topology[];
}

/** Condition a plugin may report for a volume (VOLUME_CONDITION). */
export interface VolumeCondition {
  abnormal: boolean;
  message: string;
}

/** One entry of ListVolumes. */
export interface ListedVolume {
  volume: CsiVolume;
  /** Present when the plugin has LIST_VOLUMES_PUBLISHED_NODES. */
  publishedNodeIds?: string[];
  condition?: VolumeCondition;
}

export interface Page<T> {
  entries: T[];
  /** Pass back as `startingToken` for the next page; empty when this was the last. */
  nextToken: string;
}

/** The range of sizes a volume may have; 0 means "no opinion". */
export interface CapacityRange {
  requiredBytes?: number;
  limitBytes?: number;
}

/** TopologyRequirement of CreateVolume. */
export interface TopologyRequirement {
  requisite: Topology[];
  preferred: Topology[];
}

export interface CsiSnapshot {
  snapshotId: string;
  sourceVolumeId: string;
  sizeBytes: number;
  /** Milliseconds since the epoch; undefined when the plugin did not say. */
  creationTime?: number;
  readyToUse: boolean;
  groupSnapshotId: string;
}

/** NodeGetVolumeStats usage entry. */
export interface VolumeUsage {
  unit: 'BYTES' | 'INODES' | 'UNKNOWN';
  available: number;
  total: number;
  used: number;
}

export interface VolumeStats {
  usage: VolumeUsage[];
  condition?: VolumeCondition;
}

// ---- requests -------------------------------------------------------------

export interface CreateVolumeRequest {
  name: string;
  capacityRange?: CapacityRange;
  volumeCapabilities: VolumeCapability[];
  parameters?: Record<string, string>;
  secrets?: SecretMap;
  contentSource?: VolumeContentSource;
  accessibilityRequirements?: TopologyRequirement;
  mutableParameters?: Record<string, string>;
}

export interface ControllerPublishRequest {
  volumeId: string;
  /** The plugin's NodeGetInfo.node_id, not Berth's node ID. */
  nodeId: string;
  volumeCapability: VolumeCapability;
  readonly: boolean;
  secrets?: SecretMap;
  volumeContext?: Record<string, string>;
}

export interface ControllerUnpublishRequest {
  volumeId: string;
  /** Empty means "from every node". */
  nodeId?: string;
  secrets?: SecretMap;
}

export interface ValidateRequest {
  volumeId: string;
  volumeContext?: Record<string, string>;
  volumeCapabilities: VolumeCapability[];
  parameters?: Record<string, string>;
  mutableParameters?: Record<string, string>;
  secrets?: SecretMap;
}

export interface NodeStageRequest {
  volumeId: string;
  publishContext?: Record<string, string>;
  stagingTargetPath: string;
  volumeCapability: VolumeCapability;
  secrets?: SecretMap;
  volumeContext?: Record<string, string>;
}

export interface NodePublishRequest {
  volumeId: string;
  publishContext?: Record<string, string>;
  /** Set when the node plugin has STAGE_UNSTAGE_VOLUME. */
  stagingTargetPath?: string;
  targetPath: string;
  volumeCapability: VolumeCapability;
  readonly: boolean;
  secrets?: SecretMap;
  volumeContext?: Record<string, string>;
}

export interface ExpandVolumeRequest {
  volumeId: string;
  capacityRange: CapacityRange;
  secrets?: SecretMap;
  volumeCapability?: VolumeCapability;
}

export interface NodeExpandVolumeRequest {
  volumeId: string;
  volumePath: string;
  capacityRange?: CapacityRange;
  stagingTargetPath?: string;
  volumeCapability?: VolumeCapability;
  secrets?: SecretMap;
}

export interface CreateSnapshotRequest {
  sourceVolumeId: string;
  name: string;
  secrets?: SecretMap;
  parameters?: Record<string, string>;
}

export interface ListSnapshotsRequest {
  maxEntries?: number;
  startingToken?: string;
  sourceVolumeId?: string;
  snapshotId?: string;
  secrets?: SecretMap;
}

export interface GetCapacityRequest {
  volumeCapabilities?: VolumeCapability[];
  parameters?: Record<string, string>;
  accessibleTopology?: Topology;
}

export interface CapacityAnswer {
  availableCapacity: number;
  maximumVolumeSize?: number;
  minimumVolumeSize?: number;
}
