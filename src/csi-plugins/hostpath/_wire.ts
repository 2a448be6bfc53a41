// Request checks and wire conversions shared by the hostpath Controller and
// Node services. Every check throws a nice-grpc ServerError with the code
// the CSI spec asks for; messages never include secrets or mount flags.

import { createHash } from 'node:crypto';
import path from 'node:path';
import { ServerError, Status } from 'nice-grpc';
import {
  VolumeCapability_AccessMode_Mode as AccessMode,
  type CapacityRange,
  type DeepPartial,
  type Snapshot,
  type Volume,
  type VolumeCapability,
  type VolumeContentSource,
} from '../../gen/csi/v1/csi.js';
import type { CapabilityRecord, ContentSourceRecord, SnapshotRecord, VolumeRecord } from './_state.js';

/** The topology key every hostpath volume and node reports. */
export const TOPOLOGY_KEY = 'topology.hostpath.csi.berth.dev/node';

/** The spec's bound on names the CO sends (CreateVolume/CreateSnapshot). */
const MAX_NAME_BYTES = 128;
const MAX_PATH_BYTES = 4096;

export function grpcError(code: Status, message: string): ServerError {
  return new ServerError(code, message);
}

/** INVALID_ARGUMENT unless `value` is a non-empty string. */
export function requireField(value: string, field: string): string {
  if (value === '') throw grpcError(Status.INVALID_ARGUMENT, `${field} is required`);
  return value;
}

/** INVALID_ARGUMENT unless `value` is a non-empty name within the spec's 128 bytes. */
export function requireName(value: string, field: string): string {
  requireField(value, field);
  const n = Buffer.byteLength(value, 'utf8');
  if (n > MAX_NAME_BYTES) throw grpcError(Status.INVALID_ARGUMENT, `${field} is ${n} bytes; the CSI limit is ${MAX_NAME_BYTES}`);
  return value;
}

/** INVALID_ARGUMENT unless `value` is an absolute path without NUL. Returns it normalised. */
export function requireAbsolutePath(value: string, field: string): string {
  requireField(value, field);
  if (!path.isAbsolute(value)) throw grpcError(Status.INVALID_ARGUMENT, `${field} must be an absolute path`);
  if (value.includes('\0')) throw grpcError(Status.INVALID_ARGUMENT, `${field} must not contain NUL`);
  if (Buffer.byteLength(value, 'utf8') > MAX_PATH_BYTES) throw grpcError(Status.INVALID_ARGUMENT, `${field} is too long`);
  return path.resolve(value);
}

/** True when `child` is `parent` or lies below it (both absolute, normalised). */
export function isWithin(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith('/') ? parent : parent + '/');
}

/** The access modes a hostpath volume honours. SINGLE_NODE_{SINGLE,MULTI}_WRITER need a capability we do not advertise. */
const SUPPORTED_MODES: ReadonlySet<AccessMode> = new Set([
  AccessMode.SINGLE_NODE_WRITER,
  AccessMode.SINGLE_NODE_READER_ONLY,
  AccessMode.MULTI_NODE_READER_ONLY,
  AccessMode.MULTI_NODE_SINGLE_WRITER,
  AccessMode.MULTI_NODE_MULTI_WRITER,
]);

const READER_ONLY_MODES: ReadonlySet<number> = new Set([AccessMode.SINGLE_NODE_READER_ONLY, AccessMode.MULTI_NODE_READER_ONLY]);
const SINGLE_NODE_MODES: ReadonlySet<number> = new Set([AccessMode.SINGLE_NODE_WRITER, AccessMode.SINGLE_NODE_READER_ONLY]);

/** True for access modes that only ever read. */
export function isReaderOnly(cap: CapabilityRecord): boolean {
  return READER_ONLY_MODES.has(cap.mode);
}

/** True for access modes that allow one node at a time. */
export function isSingleNode(cap: CapabilityRecord): boolean {
  return SINGLE_NODE_MODES.has(cap.mode);
}

/**
 * Why the plugin cannot honour `cap`, or undefined when it can. `cap` must
 * already have an access type and mode (see `checkCapability`).
 */
export function unsupportedReason(cap: VolumeCapability): string | undefined {
  if (cap.block) return 'block access is not supported: hostpath volumes are directories; ask for a mount capability';
  const mode = cap.accessMode?.mode ?? AccessMode.UNKNOWN;
  if (!SUPPORTED_MODES.has(mode)) return `access mode ${AccessMode[mode] ?? mode} is not supported`;
  if (cap.mount?.volumeMountGroup) return 'volume_mount_group is not supported (VOLUME_MOUNT_GROUP is not advertised)';
  return undefined;
}

/** INVALID_ARGUMENT when `cap` is missing or malformed (no access type, no access mode). */
export function requireCapabilityShape(cap: VolumeCapability | undefined, field: string): VolumeCapability {
  if (!cap) throw grpcError(Status.INVALID_ARGUMENT, `${field} is required`);
  if (!cap.block && !cap.mount) throw grpcError(Status.INVALID_ARGUMENT, `${field}.access_type is required`);
  if (cap.block && cap.mount) throw grpcError(Status.INVALID_ARGUMENT, `${field} sets both block and mount`);
  const mode = cap.accessMode?.mode;
  if (mode === undefined || mode === AccessMode.UNKNOWN || mode === AccessMode.UNRECOGNIZED) {
    throw grpcError(Status.INVALID_ARGUMENT, `${field}.access_mode is required`);
  }
  return cap;
}

/** Checks shape and support; INVALID_ARGUMENT for either. Returns the record to keep. */
export function checkCapability(cap: VolumeCapability | undefined, field: string): CapabilityRecord {
  const c = requireCapabilityShape(cap, field);
  const reason = unsupportedReason(c);
  if (reason) throw grpcError(Status.INVALID_ARGUMENT, `${field}: ${reason}`);
  return capabilityRecord(c);
}

/** The comparable form of a capability: mount flags become a digest, never stored or shown. */
export function capabilityRecord(cap: VolumeCapability): CapabilityRecord {
  const flags = [...(cap.mount?.mountFlags ?? [])].sort();
  return {
    mode: cap.accessMode?.mode ?? AccessMode.UNKNOWN,
    fsType: cap.mount?.fsType ?? '',
    mountFlagsDigest: flags.length ? createHash('sha256').update(JSON.stringify(flags)).digest('hex') : '',
  };
}

export function sameCapability(a: CapabilityRecord, b: CapabilityRecord): boolean {
  return a.mode === b.mode && a.fsType === b.fsType && a.mountFlagsDigest === b.mountFlagsDigest;
}

/** A byte count from the wire as a safe number. Negative: INVALID_ARGUMENT; beyond 2^53: OUT_OF_RANGE. */
export function byteCount(value: bigint, field: string): number {
  if (value < 0n) throw grpcError(Status.INVALID_ARGUMENT, `${field} must not be negative`);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw grpcError(Status.OUT_OF_RANGE, `${field} is larger than this plugin can count`);
  return Number(value);
}

/** The range as numbers (0 = unbounded); INVALID_ARGUMENT when limit < required. */
export function checkRange(range: CapacityRange | undefined, field: string): { required: number; limit: number } {
  const required = byteCount(range?.requiredBytes ?? 0n, `${field}.required_bytes`);
  const limit = byteCount(range?.limitBytes ?? 0n, `${field}.limit_bytes`);
  if (limit > 0 && limit < required) {
    throw grpcError(Status.INVALID_ARGUMENT, `${field}.limit_bytes (${limit}) is less than required_bytes (${required})`);
  }
  return { required, limit };
}

export function sourceFromWire(source: VolumeContentSource | undefined): ContentSourceRecord | undefined {
  if (!source) return undefined;
  if (source.snapshot) return { snapshotId: requireField(source.snapshot.snapshotId, 'volume_content_source.snapshot.snapshot_id') };
  if (source.volume) return { volumeId: requireField(source.volume.volumeId, 'volume_content_source.volume.volume_id') };
  throw grpcError(Status.INVALID_ARGUMENT, 'volume_content_source must name a snapshot or a volume');
}

export function sourceToWire(source: ContentSourceRecord | undefined): DeepPartial<VolumeContentSource> | undefined {
  if (!source) return undefined;
  if ('snapshotId' in source) return { snapshot: { snapshotId: source.snapshotId } };
  return { volume: { volumeId: source.volumeId } };
}

export function sameSource(a: ContentSourceRecord | undefined, b: ContentSourceRecord | undefined): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

export function sameStringMap(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const ak = Object.keys(a).sort();
  const bk = Object.keys(b).sort();
  return ak.length === bk.length && ak.every((k, i) => k === bk[i] && a[k] === b[k]);
}

export function volumeToWire(v: VolumeRecord, nodeId: string): DeepPartial<Volume> {
  return {
    volumeId: v.id,
    capacityBytes: BigInt(v.capacityBytes),
    volumeContext: { ...v.parameters },
    contentSource: sourceToWire(v.source),
    accessibleTopology: [{ segments: { [TOPOLOGY_KEY]: nodeId } }],
  };
}

export function snapshotToWire(s: SnapshotRecord): DeepPartial<Snapshot> {
  return {
    snapshotId: s.id,
    sourceVolumeId: s.sourceVolumeId,
    sizeBytes: BigInt(s.sizeBytes),
    creationTime: new Date(s.createdAt),
    readyToUse: true,
  };
}

/**
 * One page of `items` (sorted by seq). The token is the seq of the last
 * entry already returned, so entries deleted or added between pages never
 * make a token invalid. A token that is not one we could have issued:
 * ABORTED, as the spec asks.
 */
export function page<T extends { seq: number }>(
  items: readonly T[],
  maxEntries: number,
  token: string,
  lastSeq: number,
): { entries: T[]; nextToken: string } {
  if (maxEntries < 0) throw grpcError(Status.INVALID_ARGUMENT, 'max_entries must not be negative');
  let after = 0;
  if (token !== '') {
    if (!/^[1-9][0-9]{0,14}$/.test(token) || Number(token) > lastSeq) {
      throw grpcError(Status.ABORTED, `starting_token ${JSON.stringify(token.slice(0, 64))} is not valid; list again from the start`);
    }
    after = Number(token);
  }
  const rest = items.filter((i) => i.seq > after);
  if (maxEntries === 0 || rest.length <= maxEntries) return { entries: rest, nextToken: '' };
  const entries = rest.slice(0, maxEntries);
  return { entries, nextToken: String(entries[entries.length - 1]!.seq) };
}
