// The fake CSI plugin's options and defaults, what it records of a call, and
// which capability each RPC needs advertised. Private to the fake: tests take
// the types from fake-plugin.ts (and the folder door).

import type {
  ControllerCapability,
  CsiRpc,
  NodeCapability,
  PluginServiceCapability,
  Topology,
  VolumeExpansionCapability,
} from '../../../src/csi/index.js';
import type { Clock } from '../../../src/lib/index.js';

export interface FakePluginOptions {
  /** Absolute path of the unix socket (at most 107 bytes). A stale file there is removed before listening. */
  socketPath: string;
  /** GetPluginInfo name. Default 'fake.csi.berth.dev'. */
  name?: string;
  /** Default '1.0.0'. */
  vendorVersion?: string;
  manifest?: Record<string, string>;
  /** Default ['CONTROLLER_SERVICE', 'VOLUME_ACCESSIBILITY_CONSTRAINTS']. */
  pluginCapabilities?: PluginServiceCapability[];
  /**
   * Default CREATE_DELETE_VOLUME, PUBLISH_UNPUBLISH_VOLUME, LIST_VOLUMES,
   * GET_CAPACITY, CREATE_DELETE_SNAPSHOT, LIST_SNAPSHOTS, EXPAND_VOLUME, PUBLISH_READONLY.
   */
  controllerCapabilities?: ControllerCapability[];
  /** Default STAGE_UNSTAGE_VOLUME, GET_VOLUME_STATS, EXPAND_VOLUME. */
  nodeCapabilities?: NodeCapability[];
  /** Volume expansion modes advertised by GetPluginCapabilities. Default ['ONLINE']. */
  expansion?: VolumeExpansionCapability[];
  /** NodeGetInfo node_id; the only node ControllerPublish accepts (unless `acceptsNode` says more). Default 'fake-node-1'. */
  nodeId?: string;
  /**
   * Which node IDs ControllerPublish accepts, for one controller serving many
   * (simulated) nodes. Default: only `nodeId`.
   */
  acceptsNode?: (nodeId: string) => boolean;
  /** NodeGetInfo max_volumes_per_node; also enforced by ControllerPublish. Default 0 (no limit). */
  maxVolumesPerNode?: number;
  /** Default { 'topology.fake.csi.berth.dev/zone': 'z1' }. */
  topology?: Topology;
  /** Stamps recorded calls and created volumes. Default systemClock. Scripted delays use real time. */
  clock?: Clock;
}

/** One call as the fake received it. */
export interface RecordedCall {
  rpc: CsiRpc;
  /**
   * The decoded request (camelCase fields, int64 as bigint). Every `secrets`
   * map is a SecretMap and every `mountFlags` list a SecretList, so printing
   * the call never shows them; `.reveal()` gives the values. JSON.stringify
   * of a call works and prints bigints as decimal strings.
   */
  request: Record<string, unknown>;
  /** clock.now() when the call arrived. */
  at: number;
  /** Milliseconds left until the caller's gRPC deadline when the call arrived; absent without a deadline. */
  deadline?: number;
}

export interface WaitForCallOptions {
  /** Wait for the count-th call (1-based, counted since the last clearCalls/reset). Default 1. */
  count?: number;
  /** Default 5000. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export const DEFAULTS = {
  name: 'fake.csi.berth.dev',
  vendorVersion: '1.0.0',
  pluginCapabilities: ['CONTROLLER_SERVICE', 'VOLUME_ACCESSIBILITY_CONSTRAINTS'] as PluginServiceCapability[],
  controllerCapabilities: [
    'CREATE_DELETE_VOLUME',
    'PUBLISH_UNPUBLISH_VOLUME',
    'LIST_VOLUMES',
    'GET_CAPACITY',
    'CREATE_DELETE_SNAPSHOT',
    'LIST_SNAPSHOTS',
    'EXPAND_VOLUME',
    'PUBLISH_READONLY',
  ] as ControllerCapability[],
  nodeCapabilities: ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'EXPAND_VOLUME'] as NodeCapability[],
  expansion: ['ONLINE'] as VolumeExpansionCapability[],
  nodeId: 'fake-node-1',
  topology: { 'topology.fake.csi.berth.dev/zone': 'z1' } as Topology,
};

/** How long stop() lets in-flight calls finish before it ends them. */
export const STOP_GRACE_MS = 500;
/** How long stop()/crash() wait for the answers of ended calls to reach their clients. */
export const FLUSH_MS = 100;
/** sun_path is 108 bytes including the terminating NUL. */
export const MAX_SOCKET_PATH_BYTES = 107;

/** What an RPC needs advertised before the fake serves it; `never` marks RPCs the fake does not implement. */
export interface Requirement {
  plugin?: PluginServiceCapability;
  controller?: ControllerCapability;
  node?: NodeCapability;
  never?: true;
}

export const REQUIREMENTS: Partial<Record<CsiRpc, Requirement[]>> = {
  CreateVolume: [{ plugin: 'CONTROLLER_SERVICE' }, { controller: 'CREATE_DELETE_VOLUME' }],
  DeleteVolume: [{ plugin: 'CONTROLLER_SERVICE' }, { controller: 'CREATE_DELETE_VOLUME' }],
  ControllerPublishVolume: [{ plugin: 'CONTROLLER_SERVICE' }, { controller: 'PUBLISH_UNPUBLISH_VOLUME' }],
  ControllerUnpublishVolume: [{ plugin: 'CONTROLLER_SERVICE' }, { controller: 'PUBLISH_UNPUBLISH_VOLUME' }],
  ValidateVolumeCapabilities: [{ plugin: 'CONTROLLER_SERVICE' }],
  ListVolumes: [{ plugin: 'CONTROLLER_SERVICE' }, { controller: 'LIST_VOLUMES' }],
  GetCapacity: [{ plugin: 'CONTROLLER_SERVICE' }, { controller: 'GET_CAPACITY' }],
  ControllerGetCapabilities: [{ plugin: 'CONTROLLER_SERVICE' }],
  CreateSnapshot: [{ plugin: 'CONTROLLER_SERVICE' }, { controller: 'CREATE_DELETE_SNAPSHOT' }],
  DeleteSnapshot: [{ plugin: 'CONTROLLER_SERVICE' }, { controller: 'CREATE_DELETE_SNAPSHOT' }],
  ListSnapshots: [{ plugin: 'CONTROLLER_SERVICE' }, { controller: 'LIST_SNAPSHOTS' }],
  ControllerExpandVolume: [{ plugin: 'CONTROLLER_SERVICE' }, { controller: 'EXPAND_VOLUME' }],
  ControllerGetVolume: [{ plugin: 'CONTROLLER_SERVICE' }, { controller: 'GET_VOLUME' }],
  ControllerModifyVolume: [{ plugin: 'CONTROLLER_SERVICE' }, { controller: 'MODIFY_VOLUME' }],
  GetSnapshot: [{ plugin: 'CONTROLLER_SERVICE' }, { controller: 'GET_SNAPSHOT' }],
  GroupControllerGetCapabilities: [{ plugin: 'GROUP_CONTROLLER_SERVICE' }],
  CreateVolumeGroupSnapshot: [{ never: true }],
  DeleteVolumeGroupSnapshot: [{ never: true }],
  GetVolumeGroupSnapshot: [{ never: true }],
  NodeStageVolume: [{ node: 'STAGE_UNSTAGE_VOLUME' }],
  NodeUnstageVolume: [{ node: 'STAGE_UNSTAGE_VOLUME' }],
  NodeGetVolumeStats: [{ node: 'GET_VOLUME_STATS' }],
  NodeExpandVolume: [{ node: 'EXPAND_VOLUME' }],
};
