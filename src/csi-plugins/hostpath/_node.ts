// The hostpath Node service: NodeStage bind-mounts the volume directory onto
// the staging path, NodePublish bind-mounts the staging path onto a target
// directory it creates (read-only on request). What is mounted is always
// read back from /proc/self/mountinfo, so a retry after a crash or a reboot
// does the right thing whatever the records say.

import { lstat, mkdir, rmdir, stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import { Status } from 'nice-grpc';
import {
  NodeServiceCapability_RPC_Type as NodeRpc,
  VolumeUsage_Unit,
  type NodeServiceImplementation,
} from '../../gen/csi/v1/csi.js';
import { lockOrAbort, type HostpathContext } from './_context.js';
import { bindMount, isErrno, mountsAt, mountStateOf, realpathOrUndefined, remountReadOnly, unmount, type MountState } from './_mount.js';
import { directoryUsage } from './_usage.js';
import type { NodeVolumeRecord, VolumeRecord } from './_state.js';
import {
  checkCapability,
  checkRange,
  grpcError,
  isReaderOnly,
  requireAbsolutePath,
  requireField,
  sameCapability,
  TOPOLOGY_KEY,
} from './_wire.js';

/** The Node capabilities the plugin advertises. */
export const NODE_CAPABILITIES: readonly NodeRpc[] = [NodeRpc.STAGE_UNSTAGE_VOLUME, NodeRpc.GET_VOLUME_STATS, NodeRpc.EXPAND_VOLUME, NodeRpc.VOLUME_CONDITION];

/** A mount stack deeper than this at one path is not something we made. */
const MAX_UNMOUNT_LAYERS = 16;

/** Builds the Node service over the shared context. */
export function createNodeService(ctx: HostpathContext): NodeServiceImplementation {
  const { store, layout, locks } = ctx;
  const log = ctx.logger;

  async function volumeOrNotFound(id: string): Promise<VolumeRecord> {
    const vol = await store.findVolume(id);
    if (!vol) throw grpcError(Status.NOT_FOUND, 'volume not found');
    return vol;
  }

  function nodeRecord(volumeId: string): NodeVolumeRecord {
    let rec = store.nodeVolumes.get(volumeId);
    if (!rec) {
      rec = { volumeId, targets: [] };
      store.nodeVolumes.set(volumeId, rec);
    }
    return rec;
  }

  /** A CO path must not reach into the plugin's own data. INVALID_ARGUMENT when it does. */
  function refuseDataDir(p: string, field: string): void {
    if (layout.contains(p)) throw grpcError(Status.INVALID_ARGUMENT, `${field} must not lie inside the plugin's data directory`);
  }

  /** Unmounts every layer of this volume at `real`. Returns the state left behind ('none' or 'other'). */
  async function unmountOurs(real: string, volumeDir: string): Promise<MountState> {
    for (let i = 0; i < MAX_UNMOUNT_LAYERS; i++) {
      const state = await mountStateOf(real, volumeDir);
      if (state.kind !== 'ours') return state;
      await unmount(real);
    }
    return mountStateOf(real, volumeDir);
  }

  /** Drops target records whose mount is gone (after a reboot, or someone else unmounted it). */
  async function pruneTargets(rec: NodeVolumeRecord, volumeDir: string): Promise<boolean> {
    const alive = [];
    for (const t of rec.targets) {
      if ((await mountStateOf(t.path, volumeDir)).kind === 'ours') alive.push(t);
    }
    const changed = alive.length !== rec.targets.length;
    rec.targets = alive;
    return changed;
  }

  return {
    async nodeStageVolume(req) {
      const id = requireField(req.volumeId, 'volume_id');
      const staging = requireAbsolutePath(req.stagingTargetPath, 'staging_target_path');
      const capability = checkCapability(req.volumeCapability, 'volume_capability');
      refuseDataDir(staging, 'staging_target_path');
      const release = lockOrAbort(locks, `volume:${id}`);
      try {
        // Another instance of this plugin on this node (the one an update replaces) may have acted on it.
        await store.syncNodeVolume(id);
        const vol = await volumeOrNotFound(id);
        const volumeDir = layout.volumeDir(vol.key);
        const real = await realpathOrUndefined(staging);
        if (real === undefined) {
          throw grpcError(Status.FAILED_PRECONDITION, 'staging_target_path does not exist; the CO must create it before NodeStageVolume');
        }
        refuseDataDir(real, 'staging_target_path');
        if (!(await stat(real)).isDirectory()) throw grpcError(Status.FAILED_PRECONDITION, 'staging_target_path is not a directory');

        const rec = store.nodeVolumes.get(id);
        if (rec?.staged) {
          // A record whose mount is gone (reboot, manual umount) no longer binds the volume to that path.
          const prev = await realpathOrUndefined(rec.staged.path);
          if (prev === undefined || (await mountStateOf(prev, volumeDir)).kind !== 'ours') rec.staged = undefined;
        }
        if (rec?.staged && rec.staged.path !== staging) {
          throw grpcError(Status.FAILED_PRECONDITION, 'volume is already staged at a different staging_target_path');
        }
        if (rec?.staged && !sameCapability(rec.staged.capability, capability)) {
          throw grpcError(Status.ALREADY_EXISTS, 'volume is already staged with a different volume_capability');
        }
        const state = await mountStateOf(real, volumeDir);
        if (state.kind === 'other') throw grpcError(Status.FAILED_PRECONDITION, 'something else is mounted at staging_target_path');
        if (state.kind === 'none') await bindMount(volumeDir, real);
        if (!rec?.staged) {
          nodeRecord(id).staged = { path: staging, capability };
          try {
            await store.persist('node');
          } catch (err) {
            if (state.kind === 'none') await unmount(real);
            nodeRecord(id).staged = undefined;
            throw err;
          }
        }
        if (state.kind === 'none') log.info({ volumeId: id, stagingPath: staging }, 'volume staged');
        return {};
      } finally {
        release();
      }
    },

    async nodeUnstageVolume(req) {
      const id = requireField(req.volumeId, 'volume_id');
      const staging = requireAbsolutePath(req.stagingTargetPath, 'staging_target_path');
      const release = lockOrAbort(locks, `volume:${id}`);
      try {
        // Another instance of this plugin on this node (the one an update replaces) may have acted on it.
        await store.syncNodeVolume(id);
        const vol = await volumeOrNotFound(id);
        const volumeDir = layout.volumeDir(vol.key);
        const rec = store.nodeVolumes.get(id);
        if (rec) {
          if (await pruneTargets(rec, volumeDir)) await store.persist('node');
          if (rec.targets.length > 0) {
            throw grpcError(Status.FAILED_PRECONDITION, `volume is still published at ${rec.targets.length} target path(s); NodeUnpublishVolume first`);
          }
        }
        const real = await realpathOrUndefined(staging);
        let unmounted = false;
        if (real !== undefined && !layout.contains(real)) {
          const before = await mountStateOf(real, volumeDir);
          const after = await unmountOurs(real, volumeDir);
          unmounted = before.kind === 'ours';
          if (after.kind === 'other' && unmounted) {
            log.warn({ volumeId: id, stagingPath: staging }, 'a foreign mount remains at the staging path');
          }
        }
        if (rec?.staged?.path === staging) {
          rec.staged = undefined;
          if (rec.targets.length === 0) store.nodeVolumes.delete(id);
          await store.persist('node');
        }
        if (unmounted) log.info({ volumeId: id, stagingPath: staging }, 'volume unstaged');
        return {};
      } finally {
        release();
      }
    },

    async nodePublishVolume(req) {
      const id = requireField(req.volumeId, 'volume_id');
      const target = requireAbsolutePath(req.targetPath, 'target_path');
      const capability = checkCapability(req.volumeCapability, 'volume_capability');
      if (req.stagingTargetPath === '') {
        // The spec's answer when STAGE_UNSTAGE_VOLUME is advertised and no staging path is sent.
        throw grpcError(Status.FAILED_PRECONDITION, 'staging_target_path is required: this plugin stages volumes (STAGE_UNSTAGE_VOLUME)');
      }
      const staging = requireAbsolutePath(req.stagingTargetPath, 'staging_target_path');
      refuseDataDir(target, 'target_path');
      if (target === staging) throw grpcError(Status.INVALID_ARGUMENT, 'target_path must differ from staging_target_path');
      const readonly = req.readonly || isReaderOnly(capability);
      const release = lockOrAbort(locks, `volume:${id}`);
      try {
        // Another instance of this plugin on this node (the one an update replaces) may have acted on it.
        await store.syncNodeVolume(id);
        const vol = await volumeOrNotFound(id);
        const volumeDir = layout.volumeDir(vol.key);
        const rec = store.nodeVolumes.get(id);
        const realStaging = await realpathOrUndefined(staging);
        if (!rec?.staged || rec.staged.path !== staging || realStaging === undefined || (await mountStateOf(realStaging, volumeDir)).kind !== 'ours') {
          throw grpcError(Status.FAILED_PRECONDITION, 'volume is not staged at staging_target_path; NodeStageVolume first');
        }

        const parent = await realpathOrUndefined(path.dirname(target));
        if (parent === undefined) {
          throw grpcError(Status.FAILED_PRECONDITION, 'the parent directory of target_path does not exist; the CO must create it');
        }
        refuseDataDir(parent, 'target_path');
        // Work on parent-real + name so that no symlink in the path can redirect the mount.
        const real = path.join(parent, path.basename(target));

        const state = await mountStateOf(real, volumeDir);
        const known = rec.targets.find((t) => t.path === target);
        if (state.kind === 'ours') {
          const same = known
            ? sameCapability(known.capability, capability) && known.readonly === readonly
            : state.readonly === readonly;
          if (!same) throw grpcError(Status.ALREADY_EXISTS, 'volume is already published at target_path with a different capability or readonly flag');
          if (!known) {
            rec.targets.push({ path: target, readonly, capability });
            await store.persist('node');
          }
          return {};
        }
        if (state.kind === 'other') throw grpcError(Status.FAILED_PRECONDITION, 'something else is mounted at target_path');
        if (known) rec.targets = rec.targets.filter((t) => t !== known);

        let created = false;
        try {
          await mkdir(real, { mode: 0o750 });
          created = true;
        } catch (err) {
          if (!isErrno(err, 'EEXIST')) throw err;
          const st = await lstat(real);
          if (!st.isDirectory()) throw grpcError(Status.FAILED_PRECONDITION, 'target_path exists and is not a directory');
        }
        try {
          await bindMount(realStaging, real);
          if (readonly) await remountReadOnly(real);
          rec.targets.push({ path: target, readonly, capability });
          await store.persist('node');
        } catch (err) {
          rec.targets = rec.targets.filter((t) => t.path !== target);
          await unmountOurs(real, volumeDir).catch(() => undefined);
          if (created) await rmdir(real).catch(() => undefined);
          throw err;
        }
        log.info({ volumeId: id, targetPath: target, readonly }, 'volume published');
        return {};
      } finally {
        release();
      }
    },

    async nodeUnpublishVolume(req) {
      const id = requireField(req.volumeId, 'volume_id');
      const target = requireAbsolutePath(req.targetPath, 'target_path');
      const release = lockOrAbort(locks, `volume:${id}`);
      try {
        // Another instance of this plugin on this node (the one an update replaces) may have acted on it.
        await store.syncNodeVolume(id);
        const vol = await volumeOrNotFound(id);
        const volumeDir = layout.volumeDir(vol.key);
        const rec = store.nodeVolumes.get(id);
        const known = rec?.targets.some((t) => t.path === target) ?? false;
        const parent = await realpathOrUndefined(path.dirname(target));
        const real = parent === undefined ? undefined : path.join(parent, path.basename(target));
        if (real !== undefined && !layout.contains(real)) {
          const before = await mountStateOf(real, volumeDir);
          const after = await unmountOurs(real, volumeDir);
          if (after.kind === 'other') {
            throw grpcError(Status.FAILED_PRECONDITION, 'target_path is a mount point of something other than this volume; not touching it');
          }
          // Remove the directory NodePublish made; one the plugin never used is not ours to remove.
          if (known || before.kind === 'ours') {
            try {
              await rmdir(real);
            } catch (err) {
              if (isErrno(err, 'ENOTEMPTY')) {
                throw grpcError(Status.FAILED_PRECONDITION, 'target_path is not empty after unmounting; not removing it');
              }
              if (!isErrno(err, 'ENOENT') && !isErrno(err, 'ENOTDIR')) throw err;
            }
          }
          if (before.kind === 'ours') log.info({ volumeId: id, targetPath: target }, 'volume unpublished');
        }
        if (rec && known) {
          rec.targets = rec.targets.filter((t) => t.path !== target);
          if (!rec.staged && rec.targets.length === 0) store.nodeVolumes.delete(id);
          await store.persist('node');
        }
        return {};
      } finally {
        release();
      }
    },

    async nodeGetVolumeStats(req) {
      const id = requireField(req.volumeId, 'volume_id');
      const volumePath = requireField(req.volumePath, 'volume_path');
      const vol = await volumeOrNotFound(id);
      const notHere = grpcError(Status.NOT_FOUND, 'volume_path is not a mount of this volume');
      if (!path.isAbsolute(volumePath) || volumePath.includes('\0')) throw notHere;
      const dir = layout.volumeDir(vol.key);
      let used;
      try {
        used = await directoryUsage(dir);
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw err;
        // The directory was removed behind our back: what is mounted at volume_path is a deleted
        // directory. Say so (VOLUME_CONDITION) rather than report usage of nothing.
        const real = await realpathOrUndefined(volumePath);
        if (real === undefined || (await mountsAt(real)).length === 0) throw notHere;
        log.warn({ volumeId: id, volumeDir: dir }, 'volume directory has vanished');
        return { usage: [], volumeCondition: { abnormal: true, message: `the volume's directory ${dir} has vanished from the node` } };
      }
      if ((await mountStateOf(volumePath, dir)).kind !== 'ours') throw notHere;
      // Usage of the volume's own directory (not the disk it lives on), against the size it was given.
      const s = await statfs(dir);
      const diskTotal = s.blocks * s.bsize;
      const total = vol.capacityBytes > 0 ? vol.capacityBytes : diskTotal;
      const available = Math.max(0, Math.min(total - used.bytes, s.bavail * s.bsize));
      return {
        usage: [
          { unit: VolumeUsage_Unit.BYTES, total: BigInt(total), available: BigInt(available), used: BigInt(used.bytes) },
          { unit: VolumeUsage_Unit.INODES, total: BigInt(s.files), available: BigInt(s.ffree), used: BigInt(used.inodes) },
        ],
        volumeCondition: { abnormal: false, message: 'volume directory present' },
      };
    },

    async nodeExpandVolume(req) {
      const id = requireField(req.volumeId, 'volume_id');
      const volumePath = requireField(req.volumePath, 'volume_path');
      if (req.volumeCapability) checkCapability(req.volumeCapability, 'volume_capability');
      const range = checkRange(req.capacityRange, 'capacity_range');
      const release = lockOrAbort(locks, `volume:${id}`);
      try {
        // Another instance of this plugin on this node (the one an update replaces) may have acted on it.
        await store.syncNodeVolume(id);
        const vol = await volumeOrNotFound(id);
        const notHere = grpcError(Status.NOT_FOUND, 'volume_path is not a mount of this volume');
        if (!path.isAbsolute(volumePath) || volumePath.includes('\0')) throw notHere;
        if ((await mountStateOf(volumePath, layout.volumeDir(vol.key))).kind !== 'ours') throw notHere;
        if (range.required > vol.capacityBytes) {
          throw grpcError(Status.OUT_OF_RANGE, `required_bytes is more than the volume's ${vol.capacityBytes} bytes; ControllerExpandVolume first`);
        }
        if (range.limit > 0 && vol.capacityBytes > range.limit) {
          throw grpcError(Status.OUT_OF_RANGE, `the volume holds ${vol.capacityBytes} bytes, more than limit_bytes`);
        }
        // A directory grows with its filesystem; there is nothing to resize. Report the size the controller granted.
        return { capacityBytes: BigInt(vol.capacityBytes) };
      } finally {
        release();
      }
    },

    async nodeGetCapabilities() {
      return { capabilities: NODE_CAPABILITIES.map((type) => ({ rpc: { type } })) };
    },

    async nodeGetInfo() {
      return {
        nodeId: ctx.nodeId,
        maxVolumesPerNode: BigInt(ctx.maxVolumesPerNode),
        accessibleTopology: { segments: { [TOPOLOGY_KEY]: ctx.nodeId } },
      };
    },
  };
}
