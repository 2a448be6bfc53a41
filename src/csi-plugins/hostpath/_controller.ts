// The hostpath Controller service: volumes are directories, snapshots are
// copies of them, "attaching" to a node is a record. Every call is
// idempotent; calls that change a volume hold its lock (ABORTED if taken).

import { randomUUID } from 'node:crypto';
import { chmod, cp, mkdir, rename, rm } from 'node:fs/promises';
import { Status, type ServerError } from 'nice-grpc';
import {
  ControllerServiceCapability_RPC_Type as RpcType,
  type ControllerServiceImplementation,
  type CreateVolumeRequest,
  type TopologyRequirement,
} from '../../gen/csi/v1/csi.js';
import { availableCapacity, lockOrAbort, type HostpathContext } from './_context.js';
import { mountStateOf, readMountInfo, realpathOrUndefined } from './_mount.js';
import type { ContentSourceRecord, SnapshotRecord, VolumeRecord } from './_state.js';
import {
  checkCapability,
  checkRange,
  grpcError,
  isSingleNode,
  isWithin,
  page,
  requireCapabilityShape,
  requireField,
  requireName,
  sameCapability,
  sameSource,
  sameStringMap,
  snapshotToWire,
  sourceFromWire,
  TOPOLOGY_KEY,
  unsupportedReason,
  volumeToWire,
} from './_wire.js';

const GiB = 1024 ** 3;
/** Size of a volume created without a capacity range. */
const DEFAULT_CAPACITY = GiB;

/** The Controller capabilities the plugin advertises with these options. */
export function controllerCapabilities(ctx: HostpathContext): RpcType[] {
  const caps = [
    RpcType.CREATE_DELETE_VOLUME,
    RpcType.LIST_VOLUMES,
    RpcType.LIST_VOLUMES_PUBLISHED_NODES,
    RpcType.GET_CAPACITY,
    RpcType.CREATE_DELETE_SNAPSHOT,
    RpcType.LIST_SNAPSHOTS,
    RpcType.CLONE_VOLUME,
    RpcType.EXPAND_VOLUME,
  ];
  if (ctx.publishUnpublish) caps.splice(1, 0, RpcType.PUBLISH_UNPUBLISH_VOLUME);
  return caps;
}

const volumeLock = (id: string): string => `volume:${id}`;
const snapshotLock = (id: string): string => `snapshot:${id}`;

/** Builds the Controller service over the shared context. */
export function createControllerService(ctx: HostpathContext): ControllerServiceImplementation {
  const { store, layout, locks } = ctx;
  const log = ctx.logger;

  const unimplemented = (rpc: string): ServerError => grpcError(Status.UNIMPLEMENTED, `${rpc} is not implemented by the hostpath plugin`);

  function topologyAllows(req: TopologyRequirement | undefined): boolean {
    const requisite = req?.requisite ?? [];
    if (requisite.length === 0) return true;
    const ours: Record<string, string> = { [TOPOLOGY_KEY]: ctx.nodeId };
    return requisite.some((t) => Object.entries(t.segments).every(([k, v]) => ours[k] === v));
  }

  /** Whether anything on a node still uses the volume; the reason for the CO when so. */
  async function inUse(vol: VolumeRecord): Promise<string | undefined> {
    if (vol.published.length > 0) {
      return `volume is still published to node(s) ${vol.published.map((p) => JSON.stringify(p.nodeId)).join(', ')}; ControllerUnpublishVolume first`;
    }
    const onNode = await store.findNodeVolume(vol.id);
    if (onNode?.staged || (onNode?.targets.length ?? 0) > 0) {
      return 'volume is still staged or published on this node; NodeUnpublishVolume and NodeUnstageVolume first';
    }
    const dir = await realpathOrUndefined(layout.volumeDir(vol.key));
    if (!dir) return undefined;
    const mounts = await readMountInfo();
    if (mounts.some((m) => isWithin(m.mountPoint, dir))) return 'something is mounted inside the volume directory';
    // A bind mount of the directory that no record knows of (records lost, or made by hand) still uses it.
    for (const m of mounts.filter((m) => m.root.endsWith(`/${vol.key}`))) {
      if ((await mountStateOf(m.mountPoint, dir)).kind === 'ours') return `volume directory is still mounted at ${m.mountPoint}`;
    }
    return undefined;
  }

  /** Copies `from` into a fresh directory and moves it to `to`, so `to` never holds a half copy. */
  async function materialise(to: string, from: string | undefined): Promise<void> {
    const tmp = layout.tmpPath(randomUUID());
    try {
      if (from) {
        // verbatimSymlinks: links inside a volume are copied as they are, never followed out of it.
        await cp(from, tmp, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true, errorOnExist: true });
      } else {
        await mkdir(tmp);
      }
      // Development volumes: the workload may run as any user.
      await chmod(tmp, 0o777);
      await rename(tmp, to);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      throw err;
    }
  }

  function existingIsCompatible(
    v: VolumeRecord,
    req: CreateVolumeRequest,
    range: { required: number; limit: number },
    source: ContentSourceRecord | undefined,
  ): string | undefined {
    if (v.capacityBytes < range.required || (range.limit > 0 && v.capacityBytes > range.limit)) {
      return `a volume named ${JSON.stringify(v.name)} exists with capacity ${v.capacityBytes} bytes, outside the requested range`;
    }
    if (!sameSource(v.source, source)) return `a volume named ${JSON.stringify(v.name)} exists with a different content source`;
    if (!sameStringMap(v.parameters, req.parameters)) return `a volume named ${JSON.stringify(v.name)} exists with different parameters`;
    return undefined;
  }

  return {
    async createVolume(req) {
      const name = requireName(req.name, 'name');
      if (req.volumeCapabilities.length === 0) throw grpcError(Status.INVALID_ARGUMENT, 'volume_capabilities is required');
      req.volumeCapabilities.forEach((c, i) => checkCapability(c, `volume_capabilities[${i}]`));
      const range = checkRange(req.capacityRange, 'capacity_range');
      const source = sourceFromWire(req.volumeContentSource);
      if (Object.keys(req.mutableParameters).length > 0) {
        throw grpcError(Status.INVALID_ARGUMENT, 'mutable_parameters are not supported (MODIFY_VOLUME is not advertised)');
      }
      if (!topologyAllows(req.accessibilityRequirements)) {
        throw grpcError(Status.RESOURCE_EXHAUSTED, `no requisite topology matches this plugin's node ${JSON.stringify(ctx.nodeId)}`);
      }

      const sourceKey = source ? ('snapshotId' in source ? snapshotLock(source.snapshotId) : volumeLock(source.volumeId)) : undefined;
      const release = lockOrAbort(locks, `volume-name:${name}`, ...(sourceKey ? [sourceKey] : []));
      let reserved = 0;
      try {
        const existing = [...store.volumes.values()].find((v) => v.name === name);
        if (existing) {
          const conflict = existingIsCompatible(existing, req, range, source);
          if (conflict) throw grpcError(Status.ALREADY_EXISTS, conflict);
          return { volume: volumeToWire(existing, ctx.nodeId) };
        }

        let sourceDir: string | undefined;
        let sourceSize = 0;
        if (source && 'snapshotId' in source) {
          const snap = store.snapshots.get(source.snapshotId);
          if (!snap) throw grpcError(Status.NOT_FOUND, 'source snapshot not found');
          sourceDir = layout.snapshotDir(snap.key);
          sourceSize = snap.sizeBytes;
        } else if (source) {
          const vol = store.volumes.get(source.volumeId);
          if (!vol) throw grpcError(Status.NOT_FOUND, 'source volume not found');
          sourceDir = layout.volumeDir(vol.key);
          sourceSize = vol.capacityBytes;
        }

        let capacity = range.required > 0 ? range.required : source ? sourceSize : DEFAULT_CAPACITY;
        if (range.limit > 0 && capacity > range.limit) {
          if (source) {
            throw grpcError(Status.OUT_OF_RANGE, `the content source holds ${sourceSize} bytes, more than limit_bytes ${range.limit}`);
          }
          capacity = range.limit;
        }
        if (source && capacity < sourceSize) {
          throw grpcError(Status.OUT_OF_RANGE, `required_bytes ${capacity} is smaller than the content source (${sourceSize} bytes)`);
        }
        const available = await availableCapacity(ctx);
        if (capacity > available) {
          throw grpcError(Status.OUT_OF_RANGE, `${capacity} bytes requested but only ${available} bytes are available`);
        }
        reserved = capacity;
        ctx.reservations.bytes += reserved;

        const id = randomUUID();
        const record: VolumeRecord = {
          id,
          name,
          key: id,
          capacityBytes: capacity,
          parameters: { ...req.parameters },
          ...(source ? { source } : {}),
          createdAt: Date.now(),
          seq: store.nextSeq(),
          published: [],
        };
        await materialise(layout.volumeDir(record.key), sourceDir);
        store.volumes.set(id, record);
        try {
          await store.persist('controller');
        } catch (err) {
          store.volumes.delete(id);
          await rm(layout.volumeDir(record.key), { recursive: true, force: true });
          throw err;
        }
        log.info({ volumeId: id, capacityBytes: capacity, fromSnapshot: !!source && 'snapshotId' in source, fromVolume: !!source && 'volumeId' in source }, 'volume created');
        return { volume: volumeToWire(record, ctx.nodeId) };
      } finally {
        ctx.reservations.bytes -= reserved;
        release();
      }
    },

    async deleteVolume(req) {
      const id = requireField(req.volumeId, 'volume_id');
      const release = lockOrAbort(locks, volumeLock(id));
      try {
        const vol = store.volumes.get(id);
        if (!vol) return {};
        const busy = await inUse(vol);
        if (busy) throw grpcError(Status.FAILED_PRECONDITION, busy);
        store.volumes.delete(id);
        await store.persist('controller');
        await rm(layout.volumeDir(vol.key), { recursive: true, force: true });
        log.info({ volumeId: id }, 'volume deleted');
        return {};
      } finally {
        release();
      }
    },

    async controllerPublishVolume(req) {
      if (!ctx.publishUnpublish) throw unimplemented('ControllerPublishVolume');
      const id = requireField(req.volumeId, 'volume_id');
      const nodeId = requireField(req.nodeId, 'node_id');
      const capability = checkCapability(req.volumeCapability, 'volume_capability');
      if (req.readonly) {
        throw grpcError(Status.INVALID_ARGUMENT, 'readonly needs the PUBLISH_READONLY capability, which this plugin does not advertise');
      }
      const release = lockOrAbort(locks, volumeLock(id));
      try {
        const vol = store.volumes.get(id);
        if (!vol) throw grpcError(Status.NOT_FOUND, 'volume not found');
        if (nodeId !== ctx.nodeId) throw grpcError(Status.NOT_FOUND, `node ${JSON.stringify(nodeId)} is not known to this plugin`);
        const existing = vol.published.find((p) => p.nodeId === nodeId);
        if (existing) {
          if (!sameCapability(existing.capability, capability) || existing.readonly !== req.readonly) {
            throw grpcError(Status.ALREADY_EXISTS, 'volume is already published to this node with a different capability');
          }
          return { publishContext: {} };
        }
        const elsewhere = vol.published.filter((p) => p.nodeId !== nodeId);
        if (elsewhere.length > 0 && (isSingleNode(capability) || elsewhere.some((p) => isSingleNode(p.capability)))) {
          throw grpcError(Status.FAILED_PRECONDITION, 'volume is published to another node and its access mode allows one node only');
        }
        const onNode = [...store.volumes.values()].filter((v) => v.published.some((p) => p.nodeId === nodeId)).length;
        if (ctx.maxVolumesPerNode > 0 && onNode >= ctx.maxVolumesPerNode) {
          throw grpcError(Status.RESOURCE_EXHAUSTED, `node already has ${onNode} volumes published, its maximum`);
        }
        vol.published = [...vol.published, { nodeId, readonly: req.readonly, capability }];
        try {
          await store.persist('controller');
        } catch (err) {
          vol.published = vol.published.filter((p) => p.nodeId !== nodeId);
          throw err;
        }
        log.info({ volumeId: id, nodeId }, 'volume published to node');
        return { publishContext: {} };
      } finally {
        release();
      }
    },

    async controllerUnpublishVolume(req) {
      if (!ctx.publishUnpublish) throw unimplemented('ControllerUnpublishVolume');
      const id = requireField(req.volumeId, 'volume_id');
      const release = lockOrAbort(locks, volumeLock(id));
      try {
        const vol = store.volumes.get(id);
        // Unknown volume or node: it is certainly not published there, which is what the CO wants.
        if (!vol) return {};
        const before = vol.published;
        vol.published = req.nodeId === '' ? [] : before.filter((p) => p.nodeId !== req.nodeId);
        if (vol.published.length !== before.length) {
          try {
            await store.persist('controller');
          } catch (err) {
            vol.published = before;
            throw err;
          }
          log.info({ volumeId: id, nodeId: req.nodeId || '(all)' }, 'volume unpublished from node');
        }
        return {};
      } finally {
        release();
      }
    },

    async validateVolumeCapabilities(req) {
      const id = requireField(req.volumeId, 'volume_id');
      if (req.volumeCapabilities.length === 0) throw grpcError(Status.INVALID_ARGUMENT, 'volume_capabilities is required');
      req.volumeCapabilities.forEach((c, i) => requireCapabilityShape(c, `volume_capabilities[${i}]`));
      const vol = store.volumes.get(id);
      if (!vol) throw grpcError(Status.NOT_FOUND, 'volume not found');
      for (const cap of req.volumeCapabilities) {
        const reason = unsupportedReason(cap);
        if (reason) return { message: reason };
      }
      if (Object.keys(req.parameters).length > 0 && !sameStringMap(req.parameters, vol.parameters)) {
        return { message: 'parameters differ from those the volume was created with' };
      }
      if (Object.keys(req.volumeContext).length > 0 && !sameStringMap(req.volumeContext, vol.parameters)) {
        return { message: 'volume_context differs from the one CreateVolume returned' };
      }
      if (Object.keys(req.mutableParameters).length > 0) {
        return { message: 'mutable_parameters are not supported (MODIFY_VOLUME is not advertised)' };
      }
      return {
        confirmed: {
          volumeContext: req.volumeContext,
          volumeCapabilities: req.volumeCapabilities,
          parameters: req.parameters,
          mutableParameters: {},
        },
      };
    },

    async listVolumes(req) {
      const all = [...store.volumes.values()].sort((a, b) => a.seq - b.seq);
      const { entries, nextToken } = page(all, req.maxEntries, req.startingToken, store.lastSeq);
      return {
        entries: entries.map((v) => ({
          volume: volumeToWire(v, ctx.nodeId),
          status: { publishedNodeIds: v.published.map((p) => p.nodeId) },
        })),
        nextToken,
      };
    },

    async getCapacity(req) {
      const fits =
        req.volumeCapabilities.every((c) => (c.block || c.mount) && !unsupportedReason(c)) &&
        (!req.accessibleTopology || topologyAllows({ requisite: [req.accessibleTopology], preferred: [] }));
      const available = fits ? await availableCapacity(ctx) : 0;
      return { availableCapacity: BigInt(available), maximumVolumeSize: BigInt(available) };
    },

    async controllerGetCapabilities() {
      return { capabilities: controllerCapabilities(ctx).map((type) => ({ rpc: { type } })) };
    },

    async createSnapshot(req) {
      const name = requireName(req.name, 'name');
      const sourceId = requireField(req.sourceVolumeId, 'source_volume_id');
      const release = lockOrAbort(locks, `snapshot-name:${name}`, volumeLock(sourceId));
      try {
        const existing = [...store.snapshots.values()].find((s) => s.name === name);
        if (existing) {
          if (existing.sourceVolumeId !== sourceId) {
            throw grpcError(Status.ALREADY_EXISTS, `a snapshot named ${JSON.stringify(name)} exists for a different source volume`);
          }
          return { snapshot: snapshotToWire(existing) };
        }
        const vol = store.volumes.get(sourceId);
        if (!vol) throw grpcError(Status.NOT_FOUND, 'source volume not found');
        const id = randomUUID();
        const record: SnapshotRecord = {
          id,
          name,
          key: id,
          sourceVolumeId: sourceId,
          sizeBytes: vol.capacityBytes,
          createdAt: Date.now(),
          seq: store.nextSeq(),
        };
        await materialise(layout.snapshotDir(record.key), layout.volumeDir(vol.key));
        store.snapshots.set(id, record);
        try {
          await store.persist('controller');
        } catch (err) {
          store.snapshots.delete(id);
          await rm(layout.snapshotDir(record.key), { recursive: true, force: true });
          throw err;
        }
        log.info({ snapshotId: id, volumeId: sourceId }, 'snapshot created');
        return { snapshot: snapshotToWire(record) };
      } finally {
        release();
      }
    },

    async deleteSnapshot(req) {
      const id = requireField(req.snapshotId, 'snapshot_id');
      const release = lockOrAbort(locks, snapshotLock(id));
      try {
        const snap = store.snapshots.get(id);
        if (!snap) return {};
        store.snapshots.delete(id);
        await store.persist('controller');
        await rm(layout.snapshotDir(snap.key), { recursive: true, force: true });
        log.info({ snapshotId: id }, 'snapshot deleted');
        return {};
      } finally {
        release();
      }
    },

    async listSnapshots(req) {
      let all = [...store.snapshots.values()].sort((a, b) => a.seq - b.seq);
      if (req.snapshotId !== '') all = all.filter((s) => s.id === req.snapshotId);
      if (req.sourceVolumeId !== '') all = all.filter((s) => s.sourceVolumeId === req.sourceVolumeId);
      const { entries, nextToken } = page(all, req.maxEntries, req.startingToken, store.lastSeq);
      return { entries: entries.map((s) => ({ snapshot: snapshotToWire(s) })), nextToken };
    },

    async controllerExpandVolume(req) {
      const id = requireField(req.volumeId, 'volume_id');
      if (!req.capacityRange) throw grpcError(Status.INVALID_ARGUMENT, 'capacity_range is required');
      const range = checkRange(req.capacityRange, 'capacity_range');
      if (req.volumeCapability) checkCapability(req.volumeCapability, 'volume_capability');
      const release = lockOrAbort(locks, volumeLock(id));
      let reserved = 0;
      try {
        const vol = store.volumes.get(id);
        if (!vol) throw grpcError(Status.NOT_FOUND, 'volume not found');
        if (range.limit > 0 && vol.capacityBytes > range.limit) {
          throw grpcError(Status.OUT_OF_RANGE, `volume already holds ${vol.capacityBytes} bytes, more than limit_bytes; volumes never shrink`);
        }
        const target = Math.max(vol.capacityBytes, range.required);
        const grow = target - vol.capacityBytes;
        if (grow > 0) {
          const available = await availableCapacity(ctx);
          if (grow > available) throw grpcError(Status.OUT_OF_RANGE, `growing by ${grow} bytes needs more than the ${available} bytes available`);
          reserved = grow;
          ctx.reservations.bytes += reserved;
          const before = vol.capacityBytes;
          vol.capacityBytes = target;
          try {
            await store.persist('controller');
          } catch (err) {
            vol.capacityBytes = before;
            throw err;
          }
          log.info({ volumeId: id, capacityBytes: target }, 'volume expanded');
        }
        // A directory has nothing to grow on the node, but the call lets a CO run its full expansion flow.
        return { capacityBytes: BigInt(target), nodeExpansionRequired: true };
      } finally {
        ctx.reservations.bytes -= reserved;
        release();
      }
    },

    async getSnapshot() {
      throw unimplemented('GetSnapshot');
    },

    async controllerGetVolume() {
      throw unimplemented('ControllerGetVolume');
    },

    async controllerModifyVolume() {
      throw unimplemented('ControllerModifyVolume');
    },
  };
}
