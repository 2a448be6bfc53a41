// Translation between protobuf messages (src/gen) and Berth's types. Private
// to src/csi: nothing outside this folder sees a generated type.

import {
  ControllerServiceCapability_RPC_Type as GenControllerCap,
  NodeServiceCapability_RPC_Type as GenNodeCap,
  PluginCapability_Service_Type as GenServiceCap,
  PluginCapability_VolumeExpansion_Type as GenExpansion,
  GroupControllerServiceCapability_RPC_Type as GenGroupCap,
  VolumeCapability_AccessMode_Mode as GenMode,
  VolumeUsage_Unit as GenUnit,
  type ControllerServiceCapability,
  type NodeServiceCapability,
  type PluginCapability,
  type GroupControllerServiceCapability,
  type Snapshot as GenSnapshot,
  type VolumeGroupSnapshot as GenGroupSnapshot,
  type Topology as GenTopology,
  type TopologyRequirement as GenTopologyRequirement,
  type Volume as GenVolume,
  type VolumeCapability as GenVolumeCapability,
  type VolumeCondition as GenVolumeCondition,
  type VolumeContentSource as GenContentSource,
  type CapacityRange as GenCapacityRange,
} from '../gen/csi/v1/csi.js';
import type { SecretMap } from '../lib/index.js';
import { VolumeCapability, type AccessMode } from './capability.js';
import { CsiProtocolError } from './errors.js';
import type {
  CapacityRange,
  ControllerCapability,
  CsiSnapshot,
  CsiVolume,
  GroupControllerCapability,
  NodeCapability,
  PluginCapabilities,
  PluginServiceCapability,
  Topology,
  TopologyRequirement,
  VolumeCondition,
  VolumeContentSource,
  VolumeExpansionCapability,
} from './types.js';

const MODE_TO_WIRE: Readonly<Record<AccessMode, GenMode>> = {
  'single-node-writer': GenMode.SINGLE_NODE_WRITER,
  'single-node-reader-only': GenMode.SINGLE_NODE_READER_ONLY,
  'multi-node-reader-only': GenMode.MULTI_NODE_READER_ONLY,
  'multi-node-single-writer': GenMode.MULTI_NODE_SINGLE_WRITER,
  'multi-node-multi-writer': GenMode.MULTI_NODE_MULTI_WRITER,
  'single-node-single-writer': GenMode.SINGLE_NODE_SINGLE_WRITER,
  'single-node-multi-writer': GenMode.SINGLE_NODE_MULTI_WRITER,
};
const MODE_FROM_WIRE = new Map<number, AccessMode>(
  Object.entries(MODE_TO_WIRE).map(([mode, wire]) => [wire, mode as AccessMode]),
);

/** A Berth capability as the wire wants it. Mount flags are revealed here and only here. */
export function capabilityToWire(cap: VolumeCapability): GenVolumeCapability {
  const accessMode = { mode: MODE_TO_WIRE[cap.accessMode] };
  if (cap.isBlock) return { block: {}, mount: undefined, accessMode };
  return {
    block: undefined,
    mount: { fsType: cap.fsType, mountFlags: [...cap.revealMountFlags()], volumeMountGroup: cap.volumeMountGroup },
    accessMode,
  };
}

/** A wire capability in Berth's terms; undefined when its mode or access type is unknown or unset. */
export function capabilityFromWire(wire: GenVolumeCapability): VolumeCapability | undefined {
  const mode = MODE_FROM_WIRE.get(wire.accessMode?.mode ?? GenMode.UNKNOWN);
  if (!mode) return undefined;
  if (wire.block) return VolumeCapability.block(mode);
  if (wire.mount) {
    return VolumeCapability.mount(mode, {
      fsType: wire.mount.fsType,
      mountFlags: wire.mount.mountFlags,
      volumeMountGroup: wire.mount.volumeMountGroup,
    });
  }
  return undefined;
}

// Enum values a newer plugin may send that this build does not know are
// dropped: an unknown capability is one Berth cannot use anyway.
function enumNames<T extends string>(values: readonly number[], table: Record<number, string>, known: readonly T[]): T[] {
  const out: T[] = [];
  for (const v of values) {
    const name = table[v];
    if (name && (known as readonly string[]).includes(name) && !out.includes(name as T)) out.push(name as T);
  }
  return out;
}

const SERVICE_CAPS: readonly PluginServiceCapability[] = [
  'CONTROLLER_SERVICE',
  'VOLUME_ACCESSIBILITY_CONSTRAINTS',
  'GROUP_CONTROLLER_SERVICE',
  'SNAPSHOT_METADATA_SERVICE',
];
const EXPANSION_CAPS: readonly VolumeExpansionCapability[] = ['ONLINE', 'OFFLINE'];
const CONTROLLER_CAPS: readonly ControllerCapability[] = [
  'CREATE_DELETE_VOLUME',
  'PUBLISH_UNPUBLISH_VOLUME',
  'LIST_VOLUMES',
  'GET_CAPACITY',
  'CREATE_DELETE_SNAPSHOT',
  'LIST_SNAPSHOTS',
  'CLONE_VOLUME',
  'PUBLISH_READONLY',
  'EXPAND_VOLUME',
  'LIST_VOLUMES_PUBLISHED_NODES',
  'VOLUME_CONDITION',
  'GET_VOLUME',
  'SINGLE_NODE_MULTI_WRITER',
  'MODIFY_VOLUME',
  'GET_SNAPSHOT',
];
const NODE_CAPS: readonly NodeCapability[] = [
  'STAGE_UNSTAGE_VOLUME',
  'GET_VOLUME_STATS',
  'EXPAND_VOLUME',
  'VOLUME_CONDITION',
  'SINGLE_NODE_MULTI_WRITER',
  'VOLUME_MOUNT_GROUP',
];
const GROUP_CAPS: readonly GroupControllerCapability[] = ['CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT'];

export function pluginCapabilitiesFromWire(caps: PluginCapability[]): PluginCapabilities {
  const services: number[] = [];
  const expansion: number[] = [];
  for (const c of caps) {
    if (c.service) services.push(c.service.type);
    if (c.volumeExpansion) expansion.push(c.volumeExpansion.type);
  }
  return {
    services: enumNames(services, GenServiceCap as unknown as Record<number, string>, SERVICE_CAPS),
    volumeExpansion: enumNames(expansion, GenExpansion as unknown as Record<number, string>, EXPANSION_CAPS),
  };
}

export function controllerCapabilitiesFromWire(caps: ControllerServiceCapability[]): ControllerCapability[] {
  const types = caps.flatMap((c) => (c.rpc ? [c.rpc.type] : []));
  return enumNames(types, GenControllerCap as unknown as Record<number, string>, CONTROLLER_CAPS);
}

export function nodeCapabilitiesFromWire(caps: NodeServiceCapability[]): NodeCapability[] {
  const types = caps.flatMap((c) => (c.rpc ? [c.rpc.type] : []));
  return enumNames(types, GenNodeCap as unknown as Record<number, string>, NODE_CAPS);
}

export function groupCapabilitiesFromWire(caps: GroupControllerServiceCapability[]): GroupControllerCapability[] {
  const types = caps.flatMap((c) => (c.rpc ? [c.rpc.type] : []));
  return enumNames(types, GenGroupCap as unknown as Record<number, string>, GROUP_CAPS);
}

/** An int64 from the wire as a JS number; out-of-spec negatives become a protocol error. */
export function int64ToNumber(rpc: string, field: string, value: bigint | number | undefined): number {
  if (value === undefined) return 0;
  const n = Number(value);
  if (n < 0) throw new CsiProtocolError(rpc, `${field} is negative (${value})`);
  return n;
}

export function toBigInt(value: number | undefined): bigint {
  return BigInt(value ?? 0);
}

export function capacityRangeToWire(range: CapacityRange | undefined): GenCapacityRange | undefined {
  if (!range) return undefined;
  return { requiredBytes: toBigInt(range.requiredBytes), limitBytes: toBigInt(range.limitBytes) };
}

export function topologyFromWire(t: GenTopology | undefined): Topology | undefined {
  return t ? { ...t.segments } : undefined;
}

export function topologyRequirementToWire(req: TopologyRequirement | undefined): GenTopologyRequirement | undefined {
  if (!req) return undefined;
  return {
    requisite: req.requisite.map((segments) => ({ segments: { ...segments } })),
    preferred: req.preferred.map((segments) => ({ segments: { ...segments } })),
  };
}

export function contentSourceToWire(src: VolumeContentSource | undefined): GenContentSource | undefined {
  if (!src) return undefined;
  if ('snapshotId' in src) return { snapshot: { snapshotId: src.snapshotId }, volume: undefined };
  return { snapshot: undefined, volume: { volumeId: src.volumeId } };
}

function contentSourceFromWire(src: GenContentSource | undefined): VolumeContentSource | undefined {
  if (src?.snapshot) return { snapshotId: src.snapshot.snapshotId };
  if (src?.volume) return { volumeId: src.volume.volumeId };
  return undefined;
}

export function volumeFromWire(rpc: string, v: GenVolume | undefined): CsiVolume {
  if (!v) throw new CsiProtocolError(rpc, 'volume is missing');
  if (!v.volumeId) throw new CsiProtocolError(rpc, 'volume.volume_id is empty');
  const out: CsiVolume = {
    volumeId: v.volumeId,
    capacityBytes: int64ToNumber(rpc, 'capacity_bytes', v.capacityBytes),
    volumeContext: { ...v.volumeContext },
    accessibleTopology: v.accessibleTopology.map((t) => ({ ...t.segments })),
  };
  const source = contentSourceFromWire(v.contentSource);
  if (source) out.contentSource = source;
  return out;
}

export function conditionFromWire(c: GenVolumeCondition | undefined): VolumeCondition | undefined {
  return c ? { abnormal: c.abnormal, message: c.message } : undefined;
}

export function snapshotFromWire(rpc: string, s: GenSnapshot | undefined): CsiSnapshot {
  if (!s) throw new CsiProtocolError(rpc, 'snapshot is missing');
  if (!s.snapshotId) throw new CsiProtocolError(rpc, 'snapshot.snapshot_id is empty');
  const out: CsiSnapshot = {
    snapshotId: s.snapshotId,
    sourceVolumeId: s.sourceVolumeId,
    sizeBytes: int64ToNumber(rpc, 'size_bytes', s.sizeBytes),
    readyToUse: s.readyToUse,
    groupSnapshotId: s.groupSnapshotId,
  };
  if (s.creationTime) out.creationTime = s.creationTime.getTime();
  return out;
}

/** A volume group snapshot as Berth sees it. Throws CsiProtocolError when it is missing or has no id. */
export function groupSnapshotFromWire(
  rpc: string,
  g: GenGroupSnapshot | undefined,
): { groupSnapshotId: string; snapshots: CsiSnapshot[]; readyToUse: boolean } {
  if (!g?.groupSnapshotId) throw new CsiProtocolError(rpc, 'group_snapshot is missing');
  return {
    groupSnapshotId: g.groupSnapshotId,
    snapshots: g.snapshots.map((s) => snapshotFromWire(rpc, s)),
    readyToUse: g.readyToUse,
  };
}

export function usageUnitFromWire(unit: number): 'BYTES' | 'INODES' | 'UNKNOWN' {
  if (unit === GenUnit.BYTES) return 'BYTES';
  if (unit === GenUnit.INODES) return 'INODES';
  return 'UNKNOWN';
}

/** Secrets as the wire carries them: the one place a request's SecretMap is revealed. */
export const reveal = (s: SecretMap | undefined): Record<string, string> => s?.reveal() ?? {};
