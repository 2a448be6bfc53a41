// Berth's CSI rows -> Nomad's CSI shapes (src/api/csi.ts): volumes, their
// list stubs, plugins, snapshots and the storage provider's volumes. Pure
// functions over a store snapshot, typed with the src/api types so that a
// field missing from a conversion fails the typecheck. Secrets never pass:
// a volume's `Secrets` is always null and its mount flags one "[REDACTED]",
// as Nomad's Sanitize writes them.

import type {
  CSIControllerInfo,
  CSIInfo,
  CSINodeInfo,
  CSIPlugin,
  CSIPluginListStub,
  CSISnapshot,
  CSITopology,
  CSIVolume,
  CSIVolumeAccessMode,
  CSIVolumeAttachmentMode,
  CSIVolumeExternalStub,
  CSIVolumeListStub,
  VolumeClaimListStub,
  VolumeClaimState,
} from '../../api/index.js';
import type { ControllerCapability, CsiSnapshot, ListedVolume, PluginFingerprint, Topology } from '../../csi/index.js';
import { redactMap, withNodeInstances, type CsiPluginRow, type CsiPluginInstance, type CsiPluginReport, type VolumeClaim } from '../../structs/index.js';
import { rowKey, type StateReader } from '../state/index.js';
import type { VolumeView } from '../volumes/index.js';
import type { VolumeHealthView } from '../volumehealth/index.js';
import { AllocShaper } from './alloc-shapes.js';
import { goTime, nodeVolumeUsage, volumeCondition } from './csi-berth-shapes.js';

const REDACTED = '[REDACTED]';

function topologies(list: readonly Topology[]): CSITopology[] {
  return list.map((t) => ({ Segments: { ...t } }));
}

/** Berth's claim -> its Berth shape (publish context never included). */
export function volumeClaimState(c: VolumeClaim): VolumeClaimState {
  return {
    AllocationID: c.allocId,
    NodeID: c.nodeId,
    ExternalNodeID: c.externalNodeId,
    Mode: c.mode,
    AccessMode: c.accessMode,
    AttachmentMode: c.attachmentMode,
    State: c.state,
    ControllerPublish: c.controllerPublish,
    ReleaseReason: c.releaseReason,
    ReleaseAttempts: c.releaseAttempts,
    LastError: c.lastError,
    ClaimTime: goTime(c.claimTime),
    FencedUntil: c.fencedUntil ? goTime(c.fencedUntil) : null,
    FenceReason: c.fenceReason ?? '',
    BerthReleaseForced: c.releaseForced === true,
    BerthReleaseOverride: c.releaseOverride ?? '',
    CreateIndex: c.createIndex,
    ModifyIndex: c.modifyIndex,
  };
}

/** A claim with its volume and its allocation's job and status, as the snapshot has them (`GET /v1/volumes/csi/claims`' rows, the claim topic's events). */
export function volumeClaimListStub(c: VolumeClaim, snap: StateReader): VolumeClaimListStub {
  const a = snap.get('allocations', rowKey(c.allocId));
  return {
    ...volumeClaimState(c),
    Namespace: c.namespace,
    VolumeID: c.volumeId,
    PluginID: c.pluginId,
    JobID: a?.jobId ?? '',
    AllocClientStatus: a?.clientStatus ?? 'gone',
    AllocDesiredStatus: a?.desiredStatus ?? 'gone',
  };
}

/** The plugin-derived fields a volume and its stub carry (zero when no node runs the plugin). */
function pluginFields(plugin: CsiPluginRow | undefined) {
  return {
    ControllerRequired: plugin?.controllerRequired ?? false,
    ControllersHealthy: plugin?.controllersHealthy ?? 0,
    ControllersExpected: plugin?.controllersExpected ?? 0,
    NodesHealthy: plugin?.nodesHealthy ?? 0,
    NodesExpected: plugin?.nodesExpected ?? 0,
  };
}

/** The access and attachment mode of the volume's current claims ("" while none is taken), as Nomad's volume shows them. */
function currentModes(claims: readonly VolumeClaim[]): { AccessMode: CSIVolumeAccessMode; AttachmentMode: CSIVolumeAttachmentMode } {
  const taken = claims.find((c) => c.state === 'taken');
  return taken ? { AccessMode: taken.accessMode, AttachmentMode: taken.attachmentMode } : { AccessMode: '', AttachmentMode: '' };
}

function allocsOf(claims: readonly VolumeClaim[], mode: 'read' | 'write'): Record<string, null> {
  return Object.fromEntries(claims.filter((c) => c.state === 'taken' && c.mode === mode).map((c) => [c.allocId, null]));
}

/**
 * A volume's public view -> Nomad's CSIVolume, with Berth's claims, secret
 * names, usage and condition (`health`: empty usage and null condition
 * without the volume health service).
 */
export function csiVolume(v: VolumeView, snap: StateReader, health?: VolumeHealthView): CSIVolume {
  const plugin = snap.get('plugins', rowKey(v.pluginId));
  const shaper = new AllocShaper(snap);
  const readAllocs = allocsOf(v.claims, 'read');
  const writeAllocs = allocsOf(v.claims, 'write');
  const allocations = [...Object.keys(readAllocs), ...Object.keys(writeAllocs)]
    .map((id) => snap.get('allocations', rowKey(id)))
    .filter((a) => a !== undefined)
    .map((a) => shaper.stub(a));
  const source = v.contentSource;
  return {
    ID: v.id,
    Name: v.name,
    ExternalID: v.externalId,
    Namespace: v.namespace,
    RequestedTopologies: v.topologyRequest ? { Required: topologies(v.topologyRequest.required), Preferred: topologies(v.topologyRequest.preferred) } : null,
    Topologies: topologies(v.accessibleTopology),
    ...currentModes(v.claims),
    MountOptions: { FSType: v.mountOptions.fsType, MountFlags: v.mountOptions.mountFlags.length ? [REDACTED] : null },
    Secrets: null,
    Parameters: { ...v.parameters },
    Context: { ...v.context },
    Capacity: v.capacityBytes,
    RequestedCapacityMin: v.capacityMinBytes,
    RequestedCapacityMax: v.capacityMaxBytes,
    RequestedCapabilities: v.capabilities.map((c) => ({ AccessMode: c.accessMode, AttachmentMode: c.attachmentMode })),
    CloneID: source && 'volumeId' in source ? source.volumeId : '',
    SnapshotID: source && 'snapshotId' in source ? source.snapshotId : '',
    ReadAllocs: readAllocs,
    WriteAllocs: writeAllocs,
    Allocations: allocations,
    Schedulable: v.schedulable,
    PluginID: v.pluginId,
    Provider: v.provider || plugin?.provider || '',
    ProviderVersion: plugin?.version ?? '',
    ...pluginFields(plugin),
    ResourceExhausted: goTime(0),
    CreateIndex: v.createIndex,
    ModifyIndex: v.modifyIndex,
    CreateTime: 0,
    ModifyTime: 0,
    BerthClaims: v.claims.map(volumeClaimState),
    BerthSecretNames: [...v.secretNames],
    BerthUsage: (health?.usage ?? []).map(nodeVolumeUsage),
    BerthCondition: health?.condition ? volumeCondition(health.condition) : null,
  };
}

/**
 * A volume's public view -> one row of Nomad's volume list, with Berth's
 * capacity, releasing claims, usage and condition (`health`, as csiVolume)
 * and the drift loop's count of differences about it (`driftFindings`).
 */
export function csiVolumeListStub(v: VolumeView, snap: StateReader, health?: VolumeHealthView, driftFindings = 0): CSIVolumeListStub {
  const plugin = snap.get('plugins', rowKey(v.pluginId));
  return {
    ID: v.id,
    Namespace: v.namespace,
    Name: v.name,
    ExternalID: v.externalId,
    Topologies: topologies(v.accessibleTopology),
    ...currentModes(v.claims),
    CurrentReaders: Object.keys(allocsOf(v.claims, 'read')).length,
    CurrentWriters: Object.keys(allocsOf(v.claims, 'write')).length,
    Schedulable: v.schedulable,
    PluginID: v.pluginId,
    Provider: v.provider || plugin?.provider || '',
    ...pluginFields(plugin),
    ResourceExhausted: goTime(0),
    CreateIndex: v.createIndex,
    ModifyIndex: v.modifyIndex,
    CreateTime: 0,
    ModifyTime: 0,
    BerthCapacity: v.capacityBytes,
    BerthClaimsReleasing: v.claims.filter((c) => c.state !== 'taken' && c.state !== 'free').length,
    BerthUsage: (health?.usage ?? []).map(nodeVolumeUsage),
    BerthCondition: health?.condition ? volumeCondition(health.condition) : null,
    BerthDriftFindings: driftFindings,
  };
}

const CONTROLLER_FLAGS: ReadonlyArray<[keyof CSIControllerInfo, ControllerCapability]> = [
  ['SupportsCreateDelete', 'CREATE_DELETE_VOLUME'],
  ['SupportsAttachDetach', 'PUBLISH_UNPUBLISH_VOLUME'],
  ['SupportsListVolumes', 'LIST_VOLUMES'],
  ['SupportsGetCapacity', 'GET_CAPACITY'],
  ['SupportsCreateDeleteSnapshot', 'CREATE_DELETE_SNAPSHOT'],
  ['SupportsListSnapshots', 'LIST_SNAPSHOTS'],
  ['SupportsClone', 'CLONE_VOLUME'],
  ['SupportsReadOnlyAttach', 'PUBLISH_READONLY'],
  ['SupportsExpand', 'EXPAND_VOLUME'],
  ['SupportsListVolumesAttachedNodes', 'LIST_VOLUMES_PUBLISHED_NODES'],
  ['SupportsCondition', 'VOLUME_CONDITION'],
  ['SupportsGet', 'GET_VOLUME'],
];

function controllerInfo(capabilities: readonly ControllerCapability[]): CSIControllerInfo {
  return Object.fromEntries(CONTROLLER_FLAGS.map(([flag, cap]) => [flag, capabilities.includes(cap)])) as CSIControllerInfo;
}

function nodeInfo(inst: CsiPluginInstance, fp: PluginFingerprint | undefined, fallback: CsiPluginRow['nodeCapabilities']): CSINodeInfo {
  const caps = fp?.node?.capabilities ?? fallback;
  const topology = inst.topology ?? fp?.node?.info.accessibleTopology;
  return {
    ID: inst.externalNodeId,
    MaxVolumes: inst.maxVolumes,
    AccessibleTopology: topology ? { Segments: { ...topology } } : null,
    RequiresNodeStageVolume: caps.includes('STAGE_UNSTAGE_VOLUME'),
    SupportsStats: caps.includes('GET_VOLUME_STATS'),
    SupportsExpand: caps.includes('EXPAND_VOLUME'),
    SupportsCondition: caps.includes('VOLUME_CONDITION'),
  };
}

/** One instance -> CSIInfo, reading the instance's full fingerprint from its node's row. */
function csiInfo(plugin: CsiPluginRow, inst: CsiPluginInstance, kind: 'controller' | 'node', snap: StateReader): CSIInfo {
  const node = snap.get('nodes', rowKey(inst.nodeId));
  const report: CsiPluginReport | undefined = kind === 'controller' ? node?.csiControllerPlugins?.[plugin.id] : node?.csiNodePlugins?.[plugin.id];
  const fp = report?.fingerprint;
  const services = fp?.capabilities.services ?? [];
  const info: CSIInfo = {
    PluginID: plugin.id,
    AllocID: inst.allocId,
    Healthy: inst.healthy,
    HealthDescription: inst.healthReason,
    UpdateTime: goTime(inst.updatedAt),
    RequiresControllerPlugin: fp ? services.includes('CONTROLLER_SERVICE') : plugin.controllerRequired,
    RequiresTopologies: services.includes('VOLUME_ACCESSIBILITY_CONSTRAINTS'),
    Provider: report?.provider ?? plugin.provider,
    ProviderVersion: report?.version ?? plugin.version,
  };
  if (kind === 'controller') info.ControllerInfo = controllerInfo(fp?.controller?.capabilities ?? plugin.controllerCapabilities);
  else info.NodeInfo = nodeInfo(inst, fp, plugin.nodeCapabilities);
  return info;
}

function instances(plugin: CsiPluginRow, map: Record<string, CsiPluginInstance>, kind: 'controller' | 'node', snap: StateReader): Record<string, CSIInfo> {
  return Object.fromEntries(Object.entries(map).map(([nodeId, inst]) => [nodeId, csiInfo(plugin, inst, kind, snap)]));
}

/**
 * A plugin row -> Nomad's CSIPlugin, its allocations as list stubs, with
 * Berth's nodes at their volume limit. Its node instances are read from the
 * node rows (the plugin row does not keep them): O(nodes).
 */
export function csiPlugin(plugin: CsiPluginRow, snap: StateReader): CSIPlugin {
  const shaper = new AllocShaper(snap);
  const { nodes } = withNodeInstances(plugin, snap.list('nodes'));
  return {
    ID: plugin.id,
    Provider: plugin.provider,
    Version: plugin.version,
    ControllerRequired: plugin.controllerRequired,
    Controllers: instances(plugin, plugin.controllers, 'controller', snap),
    Nodes: instances(plugin, nodes, 'node', snap),
    Allocations: plugin.allocations
      .map((a) => snap.get('allocations', rowKey(a.allocId)))
      .filter((a) => a !== undefined)
      .map((a) => shaper.stub(a)),
    ControllersHealthy: plugin.controllersHealthy,
    ControllersExpected: plugin.controllersExpected,
    NodesHealthy: plugin.nodesHealthy,
    NodesExpected: plugin.nodesExpected,
    CreateIndex: plugin.createIndex,
    ModifyIndex: plugin.modifyIndex,
    CreateTime: 0,
    ModifyTime: 0,
    BerthExhaustedNodes: Object.fromEntries(Object.entries(plugin.exhaustedNodes).map(([nodeId, e]) => [nodeId, { Since: goTime(e.at), Reason: e.reason }])),
  };
}

/** A plugin row -> one row of Nomad's plugin list. */
export function csiPluginListStub(plugin: CsiPluginRow): CSIPluginListStub {
  return {
    ID: plugin.id,
    Provider: plugin.provider,
    ControllerRequired: plugin.controllerRequired,
    ControllersHealthy: plugin.controllersHealthy,
    ControllersExpected: plugin.controllersExpected,
    NodesHealthy: plugin.nodesHealthy,
    NodesExpected: plugin.nodesExpected,
    CreateIndex: plugin.createIndex,
    ModifyIndex: plugin.modifyIndex,
  };
}

/**
 * A plugin's snapshot -> Nomad's CSISnapshot. `sourceVolumeId` is the
 * registered volume whose external ID the snapshot came from ("" when none).
 */
export function csiSnapshot(s: CsiSnapshot, pluginId: string, sourceVolumeId: string): CSISnapshot {
  return {
    ID: s.snapshotId,
    ExternalSourceVolumeID: s.sourceVolumeId,
    SizeBytes: s.sizeBytes,
    CreateTime: s.creationTime === undefined ? 0 : Math.floor(s.creationTime / 1000),
    IsReady: s.readyToUse,
    SourceVolumeID: sourceVolumeId,
    PluginID: pluginId,
    Name: '',
    Secrets: null,
    Parameters: null,
  };
}

/** One entry of the plugin's ListVolumes -> Nomad's external volume stub (context values that look like credentials redacted). */
export function csiVolumeExternalStub(l: ListedVolume): CSIVolumeExternalStub {
  const source = l.volume.contentSource;
  return {
    ExternalID: l.volume.volumeId,
    CapacityBytes: l.volume.capacityBytes,
    VolumeContext: redactMap(l.volume.volumeContext),
    CloneID: source && 'volumeId' in source ? source.volumeId : '',
    SnapshotID: source && 'snapshotId' in source ? source.snapshotId : '',
    PublishedExternalNodeIDs: l.publishedNodeIds ? [...l.publishedNodeIds] : null,
    IsAbnormal: l.condition?.abnormal ?? false,
    Status: l.condition?.message ?? '',
  };
}
