// The fake plugin's in-memory storage system: volumes, snapshots, what is
// attached to which node and what is staged and published where. Spec-like
// and idempotent; it never touches the filesystem. Every method either
// returns the answer or throws a nice-grpc ServerError.
// One thing past 500 lines: one storage system's state machine (the CSI
// spec's volume lifecycle), whose rules read best side by side.

import { ServerError, Status } from 'nice-grpc';
import type { Clock } from '../../../src/lib/index.js';
import type { GrpcCodeName } from '../../../src/csi/index.js';
import type {
  ControllerCapability,
  NodeCapability,
  PluginServiceCapability,
  Topology,
  VolumeContentSource,
  VolumeExpansionCapability,
} from '../../../src/csi/index.js';
import {
  VolumeCapability_AccessMode_Mode as AccessMode,
  VolumeUsage_Unit,
  type CapacityRange as WireCapacityRange,
  type ControllerExpandVolumeRequest,
  type ControllerExpandVolumeResponse,
  type ControllerGetVolumeRequest,
  type ControllerGetVolumeResponse,
  type ControllerModifyVolumeRequest,
  type ControllerModifyVolumeResponse,
  type ControllerPublishVolumeRequest,
  type ControllerPublishVolumeResponse,
  type ControllerUnpublishVolumeRequest,
  type ControllerUnpublishVolumeResponse,
  type CreateSnapshotRequest,
  type CreateSnapshotResponse,
  type CreateVolumeRequest,
  type CreateVolumeResponse,
  type DeepPartial,
  type DeleteSnapshotRequest,
  type DeleteSnapshotResponse,
  type DeleteVolumeRequest,
  type DeleteVolumeResponse,
  type GetCapacityResponse,
  type GetSnapshotRequest,
  type GetSnapshotResponse,
  type ListSnapshotsRequest,
  type ListSnapshotsResponse,
  type ListVolumesRequest,
  type ListVolumesResponse,
  type ListVolumesResponse_VolumeStatus,
  type NodeExpandVolumeRequest,
  type NodeExpandVolumeResponse,
  type NodeGetVolumeStatsRequest,
  type NodeGetVolumeStatsResponse,
  type NodePublishVolumeRequest,
  type NodePublishVolumeResponse,
  type NodeStageVolumeRequest,
  type NodeStageVolumeResponse,
  type NodeUnpublishVolumeRequest,
  type NodeUnpublishVolumeResponse,
  type NodeUnstageVolumeRequest,
  type NodeUnstageVolumeResponse,
  type Snapshot as WireSnapshot,
  type ValidateVolumeCapabilitiesRequest,
  type ValidateVolumeCapabilitiesResponse,
  type Volume as WireVolume,
  type VolumeCapability as WireVolumeCapability,
  type VolumeContentSource as WireContentSource,
} from '../../../src/gen/csi/v1/csi.js';

const GiB = 1024 ** 3;
/** What GetCapacity reports: 1 PiB, more than any test asks for. */
const AVAILABLE_CAPACITY = 2n ** 50n;

/** A volume the fake has created, as tests may read it. */
export interface FakeVolume {
  readonly volumeId: string;
  /** The CreateVolume name (the CO's idempotency key). */
  readonly name: string;
  /** Current size: the requested size, or 1 GiB by default; grown by ControllerExpandVolume. */
  readonly capacityBytes: number;
  readonly parameters: Readonly<Record<string, string>>;
  /** Set by CreateVolume, replaced by ControllerModifyVolume. */
  readonly mutableParameters: Readonly<Record<string, string>>;
  /** What the fake answers as volume_context: a copy of `parameters`. */
  readonly volumeContext: Readonly<Record<string, string>>;
  readonly contentSource?: VolumeContentSource;
  /** The fake's own topology when it advertises VOLUME_ACCESSIBILITY_CONSTRAINTS, else empty. */
  readonly accessibleTopology: readonly Topology[];
  /** clock.now() at creation. */
  readonly createdAt: number;
}

/** A snapshot the fake has cut. */
export interface FakeSnapshot {
  readonly snapshotId: string;
  readonly name: string;
  readonly sourceVolumeId: string;
  readonly sizeBytes: number;
  /** clock.now() at creation. */
  readonly createdAt: number;
}

type MutableVolume = { -readonly [K in keyof FakeVolume]: FakeVolume[K] };

export interface ModelConfig {
  nodeId: string;
  /** Which node IDs ControllerPublish accepts. */
  acceptsNode: (nodeId: string) => boolean;
  maxVolumesPerNode: number;
  topology: Topology;
  plugin: ReadonlySet<PluginServiceCapability>;
  controller: ReadonlySet<ControllerCapability>;
  node: ReadonlySet<NodeCapability>;
  expansion: ReadonlySet<VolumeExpansionCapability>;
  clock: Clock;
}

/** A gRPC error as the fake answers it. */
export function grpcError(code: GrpcCodeName, message: string): ServerError {
  return new ServerError(Status[code], message);
}

function required(value: string, field: string): void {
  if (value === '') throw grpcError('INVALID_ARGUMENT', `${field} is required`);
}

const MULTI_WRITER_MODES: ReadonlySet<AccessMode> = new Set([
  AccessMode.SINGLE_NODE_SINGLE_WRITER,
  AccessMode.SINGLE_NODE_MULTI_WRITER,
]);

/** Throws INVALID_ARGUMENT unless `cap` has an access type and a known access mode. */
function checkCapabilityShape(cap: WireVolumeCapability | undefined, field: string): WireVolumeCapability {
  if (!cap) throw grpcError('INVALID_ARGUMENT', `${field} is required`);
  if (!cap.block && !cap.mount) throw grpcError('INVALID_ARGUMENT', `${field}.access_type is required`);
  const mode = cap.accessMode?.mode;
  if (mode === undefined || mode === AccessMode.UNKNOWN || mode === AccessMode.UNRECOGNIZED) {
    throw grpcError('INVALID_ARGUMENT', `${field}.access_mode is required`);
  }
  return cap;
}

function bytes(value: bigint | undefined, field: string): number {
  if (value === undefined) return 0;
  if (value < 0n) throw grpcError('INVALID_ARGUMENT', `${field} must not be negative`);
  return Number(value);
}

function sourceFromWire(source: WireContentSource | undefined): VolumeContentSource | undefined {
  if (source?.snapshot) return { snapshotId: source.snapshot.snapshotId };
  if (source?.volume) return { volumeId: source.volume.volumeId };
  return undefined;
}

function sourceToWire(source: VolumeContentSource | undefined): WireContentSource | undefined {
  if (!source) return undefined;
  if ('snapshotId' in source) return { snapshot: { snapshotId: source.snapshotId } };
  return { volume: { volumeId: source.volumeId } };
}

function volumeToWire(v: FakeVolume): DeepPartial<WireVolume> {
  return {
    volumeId: v.volumeId,
    capacityBytes: BigInt(v.capacityBytes),
    volumeContext: { ...v.volumeContext },
    contentSource: sourceToWire(v.contentSource),
    accessibleTopology: v.accessibleTopology.map((segments) => ({ segments: { ...segments } })),
  };
}

function snapshotToWire(s: FakeSnapshot): DeepPartial<WireSnapshot> {
  return {
    snapshotId: s.snapshotId,
    sourceVolumeId: s.sourceVolumeId,
    sizeBytes: BigInt(s.sizeBytes),
    creationTime: new Date(s.createdAt),
    readyToUse: true,
  };
}

/** One page of `items`; tokens are decimal offsets. A token that is not one is ABORTED, as the spec asks. */
function page<T>(items: readonly T[], maxEntries: number, token: string): { entries: T[]; nextToken: string } {
  if (maxEntries < 0) throw grpcError('INVALID_ARGUMENT', 'max_entries must not be negative');
  let start = 0;
  if (token !== '') {
    if (!/^\d{1,15}$/.test(token) || Number(token) > items.length) {
      throw grpcError('ABORTED', `starting_token ${JSON.stringify(token)} is not valid`);
    }
    start = Number(token);
  }
  const end = maxEntries > 0 ? Math.min(items.length, start + maxEntries) : items.length;
  return { entries: items.slice(start, end), nextToken: end < items.length ? String(end) : '' };
}

function topologyMatches(wanted: Record<string, string>, have: Topology): boolean {
  return Object.entries(wanted).every(([k, v]) => have[k] === v);
}

export class FakeModel {
  readonly volumes = new Map<string, MutableVolume>();
  readonly snapshots = new Map<string, FakeSnapshot>();
  readonly staged = new Map<string, string>();
  readonly published = new Map<string, Set<string>>();
  readonly controllerPublished = new Map<string, Set<string>>();
  /** volumeId -> the condition to report (VOLUME_CONDITION); absent: healthy. */
  readonly conditions = new Map<string, { abnormal: boolean; message: string }>();

  readonly #config: ModelConfig;
  /** CreateVolume name -> volume id and the size that name was first asked for. */
  readonly #volumeNames = new Map<string, { volumeId: string; requestedBytes: number }>();
  readonly #snapshotNames = new Map<string, string>();
  #volumeSeq = 0;
  #snapshotSeq = 0;

  constructor(config: ModelConfig) {
    this.#config = config;
  }

  reset(): void {
    this.volumes.clear();
    this.snapshots.clear();
    this.staged.clear();
    this.published.clear();
    this.controllerPublished.clear();
    this.conditions.clear();
    this.#volumeNames.clear();
    this.#snapshotNames.clear();
    this.#volumeSeq = 0;
    this.#snapshotSeq = 0;
  }

  #modeAllowed(cap: WireVolumeCapability, multiWriter: boolean): boolean {
    const mode = cap.accessMode?.mode;
    return mode === undefined || !MULTI_WRITER_MODES.has(mode) || multiWriter;
  }

  #volume(volumeId: string): MutableVolume {
    const volume = this.volumes.get(volumeId);
    if (!volume) throw grpcError('NOT_FOUND', `volume ${volumeId} does not exist`);
    return volume;
  }

  #status(volumeId: string): DeepPartial<ListVolumesResponse_VolumeStatus> | undefined {
    const published = this.#config.controller.has('LIST_VOLUMES_PUBLISHED_NODES');
    const condition = this.#config.controller.has('VOLUME_CONDITION');
    if (!published && !condition) return undefined;
    return {
      publishedNodeIds: published ? [...(this.controllerPublished.get(volumeId) ?? [])] : [],
      volumeCondition: condition ? this.#condition(volumeId) : undefined,
    };
  }

  #condition(volumeId: string): { abnormal: boolean; message: string } {
    return this.conditions.get(volumeId) ?? { abnormal: false, message: 'healthy' };
  }

  // ---- controller -------------------------------------------------------

  createVolume(req: CreateVolumeRequest): DeepPartial<CreateVolumeResponse> {
    required(req.name, 'name');
    if (req.volumeCapabilities.length === 0) throw grpcError('INVALID_ARGUMENT', 'volume_capabilities is required');
    req.volumeCapabilities.forEach((cap, i) => {
      checkCapabilityShape(cap, `volume_capabilities[${i}]`);
      if (!this.#modeAllowed(cap, this.#config.controller.has('SINGLE_NODE_MULTI_WRITER'))) {
        throw grpcError('INVALID_ARGUMENT', `volume_capabilities[${i}]: access mode needs SINGLE_NODE_MULTI_WRITER`);
      }
    });
    const requiredBytes = bytes(req.capacityRange?.requiredBytes, 'capacity_range.required_bytes');
    const limitBytes = bytes(req.capacityRange?.limitBytes, 'capacity_range.limit_bytes');
    if (limitBytes > 0 && requiredBytes > limitBytes) {
      throw grpcError('OUT_OF_RANGE', 'capacity_range.required_bytes exceeds limit_bytes');
    }
    const capacity = requiredBytes > 0 ? requiredBytes : limitBytes > 0 ? Math.min(GiB, limitBytes) : GiB;

    const known = this.#volumeNames.get(req.name);
    if (known) {
      if (known.requestedBytes !== capacity) {
        throw grpcError('ALREADY_EXISTS', `volume ${req.name} exists with a different capacity`);
      }
      return { volume: volumeToWire(this.#volume(known.volumeId)) };
    }

    const accessible = this.#config.plugin.has('VOLUME_ACCESSIBILITY_CONSTRAINTS');
    const requisite = req.accessibilityRequirements?.requisite ?? [];
    if (accessible && requisite.length > 0 && !requisite.some((t) => topologyMatches(t.segments, this.#config.topology))) {
      throw grpcError('RESOURCE_EXHAUSTED', 'no requisite topology is reachable from this plugin');
    }

    const volumeId = `vol-${++this.#volumeSeq}`;
    const volume: MutableVolume = {
      volumeId,
      name: req.name,
      capacityBytes: capacity,
      parameters: { ...req.parameters },
      mutableParameters: { ...req.mutableParameters },
      volumeContext: { ...req.parameters },
      contentSource: sourceFromWire(req.volumeContentSource),
      accessibleTopology: accessible ? [{ ...this.#config.topology }] : [],
      createdAt: this.#config.clock.now(),
    };
    this.volumes.set(volumeId, volume);
    this.#volumeNames.set(req.name, { volumeId, requestedBytes: capacity });
    return { volume: volumeToWire(volume) };
  }

  deleteVolume(req: DeleteVolumeRequest): DeepPartial<DeleteVolumeResponse> {
    required(req.volumeId, 'volume_id');
    const volume = this.volumes.get(req.volumeId);
    if (!volume) return {};
    const nodes = this.controllerPublished.get(req.volumeId);
    if (nodes && nodes.size > 0) {
      throw grpcError('FAILED_PRECONDITION', `volume ${req.volumeId} is still published to ${[...nodes].join(', ')}`);
    }
    this.volumes.delete(req.volumeId);
    this.#volumeNames.delete(volume.name);
    return {};
  }

  controllerPublishVolume(req: ControllerPublishVolumeRequest): DeepPartial<ControllerPublishVolumeResponse> {
    required(req.volumeId, 'volume_id');
    required(req.nodeId, 'node_id');
    const cap = checkCapabilityShape(req.volumeCapability, 'volume_capability');
    if (req.readonly && !this.#config.controller.has('PUBLISH_READONLY')) {
      throw grpcError('INVALID_ARGUMENT', 'readonly needs the PUBLISH_READONLY capability');
    }
    if (!this.#modeAllowed(cap, this.#config.controller.has('SINGLE_NODE_MULTI_WRITER'))) {
      throw grpcError('INVALID_ARGUMENT', 'access mode needs SINGLE_NODE_MULTI_WRITER');
    }
    this.#volume(req.volumeId);
    if (!this.#config.acceptsNode(req.nodeId)) throw grpcError('NOT_FOUND', `node ${req.nodeId} does not exist`);
    const nodes = this.controllerPublished.get(req.volumeId) ?? new Set<string>();
    if (!nodes.has(req.nodeId)) {
      const limit = this.#config.maxVolumesPerNode;
      if (limit > 0 && this.#attachedTo(req.nodeId) >= limit) {
        throw grpcError('RESOURCE_EXHAUSTED', `node ${req.nodeId} has ${limit} volumes attached already`);
      }
      nodes.add(req.nodeId);
      this.controllerPublished.set(req.volumeId, nodes);
    }
    return { publishContext: { devicePath: `/dev/fake/${req.volumeId}` } };
  }

  #attachedTo(nodeId: string): number {
    let n = 0;
    for (const nodes of this.controllerPublished.values()) if (nodes.has(nodeId)) n++;
    return n;
  }

  controllerUnpublishVolume(req: ControllerUnpublishVolumeRequest): DeepPartial<ControllerUnpublishVolumeResponse> {
    required(req.volumeId, 'volume_id');
    const nodes = this.controllerPublished.get(req.volumeId);
    if (!nodes) return {};
    if (req.nodeId === '') nodes.clear();
    else nodes.delete(req.nodeId);
    if (nodes.size === 0) this.controllerPublished.delete(req.volumeId);
    return {};
  }

  validateVolumeCapabilities(req: ValidateVolumeCapabilitiesRequest): DeepPartial<ValidateVolumeCapabilitiesResponse> {
    required(req.volumeId, 'volume_id');
    if (req.volumeCapabilities.length === 0) throw grpcError('INVALID_ARGUMENT', 'volume_capabilities is required');
    req.volumeCapabilities.forEach((cap, i) => checkCapabilityShape(cap, `volume_capabilities[${i}]`));
    this.#volume(req.volumeId);
    const multiWriter = this.#config.controller.has('SINGLE_NODE_MULTI_WRITER');
    if (!req.volumeCapabilities.every((cap) => this.#modeAllowed(cap, multiWriter))) {
      return { message: 'single-node single/multi-writer access modes are not supported' };
    }
    return {
      confirmed: {
        volumeContext: req.volumeContext,
        volumeCapabilities: req.volumeCapabilities,
        parameters: req.parameters,
        mutableParameters: req.mutableParameters,
      },
    };
  }

  listVolumes(req: ListVolumesRequest): DeepPartial<ListVolumesResponse> {
    const { entries, nextToken } = page([...this.volumes.values()], req.maxEntries, req.startingToken);
    return {
      entries: entries.map((v) => ({ volume: volumeToWire(v), status: this.#status(v.volumeId) })),
      nextToken,
    };
  }

  getCapacity(): DeepPartial<GetCapacityResponse> {
    return { availableCapacity: AVAILABLE_CAPACITY };
  }

  controllerGetVolume(req: ControllerGetVolumeRequest): DeepPartial<ControllerGetVolumeResponse> {
    required(req.volumeId, 'volume_id');
    const volume = this.#volume(req.volumeId);
    return { volume: volumeToWire(volume), status: this.#status(volume.volumeId) };
  }

  controllerModifyVolume(req: ControllerModifyVolumeRequest): DeepPartial<ControllerModifyVolumeResponse> {
    required(req.volumeId, 'volume_id');
    if (Object.keys(req.mutableParameters).length === 0) {
      throw grpcError('INVALID_ARGUMENT', 'mutable_parameters is required');
    }
    const volume = this.#volume(req.volumeId);
    volume.mutableParameters = { ...volume.mutableParameters, ...req.mutableParameters };
    return {};
  }

  controllerExpandVolume(req: ControllerExpandVolumeRequest): DeepPartial<ControllerExpandVolumeResponse> {
    required(req.volumeId, 'volume_id');
    const range = this.#range(req.capacityRange);
    const volume = this.#volume(req.volumeId);
    if (!this.#config.expansion.has('ONLINE') && (this.controllerPublished.get(req.volumeId)?.size ?? 0) > 0) {
      throw grpcError('FAILED_PRECONDITION', `volume ${req.volumeId} is published and only offline expansion is supported`);
    }
    volume.capacityBytes = Math.max(volume.capacityBytes, range.requiredBytes);
    return { capacityBytes: BigInt(volume.capacityBytes), nodeExpansionRequired: true };
  }

  #range(range: WireCapacityRange | undefined): { requiredBytes: number; limitBytes: number } {
    if (!range) throw grpcError('INVALID_ARGUMENT', 'capacity_range is required');
    const requiredBytes = bytes(range.requiredBytes, 'capacity_range.required_bytes');
    const limitBytes = bytes(range.limitBytes, 'capacity_range.limit_bytes');
    if (limitBytes > 0 && requiredBytes > limitBytes) {
      throw grpcError('OUT_OF_RANGE', 'capacity_range.required_bytes exceeds limit_bytes');
    }
    return { requiredBytes, limitBytes };
  }

  createSnapshot(req: CreateSnapshotRequest): DeepPartial<CreateSnapshotResponse> {
    required(req.sourceVolumeId, 'source_volume_id');
    required(req.name, 'name');
    const knownId = this.#snapshotNames.get(req.name);
    const known = knownId === undefined ? undefined : this.snapshots.get(knownId);
    if (known) {
      if (known.sourceVolumeId !== req.sourceVolumeId) {
        throw grpcError('ALREADY_EXISTS', `snapshot ${req.name} exists for another source volume`);
      }
      return { snapshot: snapshotToWire(known) };
    }
    const source = this.#volume(req.sourceVolumeId);
    const snapshot: FakeSnapshot = {
      snapshotId: `snap-${++this.#snapshotSeq}`,
      name: req.name,
      sourceVolumeId: req.sourceVolumeId,
      sizeBytes: source.capacityBytes,
      createdAt: this.#config.clock.now(),
    };
    this.snapshots.set(snapshot.snapshotId, snapshot);
    this.#snapshotNames.set(req.name, snapshot.snapshotId);
    return { snapshot: snapshotToWire(snapshot) };
  }

  deleteSnapshot(req: DeleteSnapshotRequest): DeepPartial<DeleteSnapshotResponse> {
    required(req.snapshotId, 'snapshot_id');
    const snapshot = this.snapshots.get(req.snapshotId);
    if (snapshot) {
      this.snapshots.delete(req.snapshotId);
      this.#snapshotNames.delete(snapshot.name);
    }
    return {};
  }

  listSnapshots(req: ListSnapshotsRequest): DeepPartial<ListSnapshotsResponse> {
    let all = [...this.snapshots.values()];
    if (req.snapshotId !== '') all = all.filter((s) => s.snapshotId === req.snapshotId);
    if (req.sourceVolumeId !== '') all = all.filter((s) => s.sourceVolumeId === req.sourceVolumeId);
    const { entries, nextToken } = page(all, req.maxEntries, req.startingToken);
    return { entries: entries.map((s) => ({ snapshot: snapshotToWire(s) })), nextToken };
  }

  getSnapshot(req: GetSnapshotRequest): DeepPartial<GetSnapshotResponse> {
    required(req.snapshotId, 'snapshot_id');
    const snapshot = this.snapshots.get(req.snapshotId);
    if (!snapshot) throw grpcError('NOT_FOUND', `snapshot ${req.snapshotId} does not exist`);
    return { snapshot: snapshotToWire(snapshot) };
  }

  // ---- node -------------------------------------------------------------

  nodeStageVolume(req: NodeStageVolumeRequest): DeepPartial<NodeStageVolumeResponse> {
    required(req.volumeId, 'volume_id');
    required(req.stagingTargetPath, 'staging_target_path');
    const cap = checkCapabilityShape(req.volumeCapability, 'volume_capability');
    if (!this.#modeAllowed(cap, this.#config.node.has('SINGLE_NODE_MULTI_WRITER'))) {
      throw grpcError('INVALID_ARGUMENT', 'access mode needs SINGLE_NODE_MULTI_WRITER');
    }
    const current = this.staged.get(req.volumeId);
    if (current !== undefined && current !== req.stagingTargetPath) {
      throw grpcError('FAILED_PRECONDITION', `volume ${req.volumeId} is already staged at another path`);
    }
    this.staged.set(req.volumeId, req.stagingTargetPath);
    return {};
  }

  nodeUnstageVolume(req: NodeUnstageVolumeRequest): DeepPartial<NodeUnstageVolumeResponse> {
    required(req.volumeId, 'volume_id');
    required(req.stagingTargetPath, 'staging_target_path');
    if (this.staged.get(req.volumeId) !== req.stagingTargetPath) return {};
    const targets = this.published.get(req.volumeId);
    if (targets && targets.size > 0) {
      throw grpcError('FAILED_PRECONDITION', `volume ${req.volumeId} is still published at ${targets.size} target(s)`);
    }
    this.staged.delete(req.volumeId);
    return {};
  }

  nodePublishVolume(req: NodePublishVolumeRequest): DeepPartial<NodePublishVolumeResponse> {
    required(req.volumeId, 'volume_id');
    required(req.targetPath, 'target_path');
    const cap = checkCapabilityShape(req.volumeCapability, 'volume_capability');
    if (!this.#modeAllowed(cap, this.#config.node.has('SINGLE_NODE_MULTI_WRITER'))) {
      throw grpcError('INVALID_ARGUMENT', 'access mode needs SINGLE_NODE_MULTI_WRITER');
    }
    if (this.#config.node.has('STAGE_UNSTAGE_VOLUME')) {
      if (req.stagingTargetPath === '') {
        throw grpcError('FAILED_PRECONDITION', 'staging_target_path is required: the plugin has STAGE_UNSTAGE_VOLUME');
      }
      if (this.staged.get(req.volumeId) !== req.stagingTargetPath) {
        throw grpcError('FAILED_PRECONDITION', `volume ${req.volumeId} is not staged at the given staging_target_path`);
      }
    }
    const targets = this.published.get(req.volumeId);
    if (targets) targets.add(req.targetPath);
    else this.published.set(req.volumeId, new Set([req.targetPath]));
    return {};
  }

  nodeUnpublishVolume(req: NodeUnpublishVolumeRequest): DeepPartial<NodeUnpublishVolumeResponse> {
    required(req.volumeId, 'volume_id');
    required(req.targetPath, 'target_path');
    const targets = this.published.get(req.volumeId);
    if (targets?.delete(req.targetPath) && targets.size === 0) this.published.delete(req.volumeId);
    return {};
  }

  /** True when `path` is where `volumeId` is published or staged on this node. */
  #usedAt(volumeId: string, path: string): boolean {
    return this.published.get(volumeId)?.has(path) === true || this.staged.get(volumeId) === path;
  }

  nodeGetVolumeStats(req: NodeGetVolumeStatsRequest): DeepPartial<NodeGetVolumeStatsResponse> {
    required(req.volumeId, 'volume_id');
    required(req.volumePath, 'volume_path');
    if (!this.#usedAt(req.volumeId, req.volumePath)) {
      throw grpcError('NOT_FOUND', `volume ${req.volumeId} is not published at the given volume_path`);
    }
    const total = BigInt(this.volumes.get(req.volumeId)?.capacityBytes ?? GiB);
    return {
      usage: [{ unit: VolumeUsage_Unit.BYTES, total, used: 0n, available: total }],
      volumeCondition: this.#config.node.has('VOLUME_CONDITION') ? this.#condition(req.volumeId) : undefined,
    };
  }

  nodeExpandVolume(req: NodeExpandVolumeRequest): DeepPartial<NodeExpandVolumeResponse> {
    required(req.volumeId, 'volume_id');
    required(req.volumePath, 'volume_path');
    if (!this.#usedAt(req.volumeId, req.volumePath)) {
      throw grpcError('NOT_FOUND', `volume ${req.volumeId} is not published at the given volume_path`);
    }
    const requested = bytes(req.capacityRange?.requiredBytes, 'capacity_range.required_bytes');
    const known = this.volumes.get(req.volumeId)?.capacityBytes ?? 0;
    return { capacityBytes: BigInt(Math.max(requested, known)) };
  }
}
