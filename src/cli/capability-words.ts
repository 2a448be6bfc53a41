// What each CSI capability means to the person running `berth csi`, in a few
// words, naming the berth command it enables where there is one.

import type {
  ControllerCapability,
  GroupControllerCapability,
  NodeCapability,
  PluginServiceCapability,
  VolumeExpansionCapability,
} from '../csi/index.js';

const PLUGIN: Record<PluginServiceCapability, string> = {
  CONTROLLER_SERVICE: 'serves the Controller service (create, attach, list volumes)',
  VOLUME_ACCESSIBILITY_CONSTRAINTS: 'volumes are reachable only from some topology segments',
  GROUP_CONTROLLER_SERVICE: 'serves the GroupController service (group snapshots)',
  SNAPSHOT_METADATA_SERVICE: 'serves the SnapshotMetadata service',
};

const EXPANSION: Record<VolumeExpansionCapability, string> = {
  ONLINE: 'volumes can grow while in use',
  OFFLINE: 'volumes can grow only while not published',
};

const CONTROLLER: Record<ControllerCapability, string> = {
  CREATE_DELETE_VOLUME: 'create-volume, delete-volume',
  PUBLISH_UNPUBLISH_VOLUME: 'controller-publish, controller-unpublish (attach to a node)',
  LIST_VOLUMES: 'list-volumes',
  GET_CAPACITY: 'capacity',
  CREATE_DELETE_SNAPSHOT: 'create-snapshot, delete-snapshot',
  LIST_SNAPSHOTS: 'list-snapshots',
  CLONE_VOLUME: 'create-volume --from-volume',
  PUBLISH_READONLY: 'controller-publish --readonly',
  EXPAND_VOLUME: 'expand',
  LIST_VOLUMES_PUBLISHED_NODES: 'list-volumes shows the nodes each volume is published to',
  VOLUME_CONDITION: 'reports volume health',
  GET_VOLUME: 'ControllerGetVolume',
  SINGLE_NODE_MULTI_WRITER: 'single-node-single-writer and single-node-multi-writer access modes',
  MODIFY_VOLUME: 'ControllerModifyVolume',
  GET_SNAPSHOT: 'GetSnapshot',
};

const NODE: Record<NodeCapability, string> = {
  STAGE_UNSTAGE_VOLUME: 'stage before publish, unstage after unpublish',
  GET_VOLUME_STATS: 'stats',
  EXPAND_VOLUME: 'node-expand',
  VOLUME_CONDITION: 'stats reports volume health',
  SINGLE_NODE_MULTI_WRITER: 'single-node-single-writer and single-node-multi-writer access modes',
  VOLUME_MOUNT_GROUP: 'stage/publish --mount-group',
};

const GROUP: Record<GroupControllerCapability, string> = {
  CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT: 'volume group snapshots',
};

const TABLES: Record<CapabilityKind, Record<string, string>> = {
  plugin: PLUGIN,
  expansion: EXPANSION,
  controller: CONTROLLER,
  node: NODE,
  group: GROUP,
};

export type CapabilityKind = 'plugin' | 'expansion' | 'controller' | 'node' | 'group';

/** Capability names padded and followed by what they mean, one per line. */
export function describeCapabilities(kind: CapabilityKind, names: readonly string[]): string[] {
  const table = TABLES[kind];
  const width = Math.max(0, ...names.map((n) => n.length));
  return names.map((n) => (table[n] ? `${n.padEnd(width)}  ${table[n]}` : n));
}
