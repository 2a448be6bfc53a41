// The node's account of its CSI mounts for `berth volume doctor`: every
// staging and publication record with whether the kernel has its path
// mounted, and the mounts under the node plugins' staging and per-allocation
// directories that no record names. And the one repair of a mount with no
// record: unmounting it, after checking again that it still has none.

import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { NodeMountInventory } from '../../structs/index.js';
import { ClientVolumeError } from './client-volume-error.js';
import { MountTable } from './mount-table.js';
import type { RecordedVolumes } from './volume-records.js';

const run = promisify(execFile);

/** A node plugin's mount root on the host. */
export interface PluginMountRoot {
  pluginId: string;
  root: string;
}

/**
 * Where a path sits in a plugin's layout: `<root>/staging/<ns>/<volume>/<usage>`
 * or `<root>/per-alloc/<alloc>/<volume>/<usage>` (MountPaths), or undefined
 * when it is no such directory.
 */
function layoutOwner(roots: readonly PluginMountRoot[], p: string): PluginMountRoot | undefined {
  return roots.find(({ root }) => {
    const rel = path.relative(root, p);
    if (rel.startsWith('..') || path.isAbsolute(rel)) return false;
    const parts = rel.split(path.sep);
    return parts.length === 4 && (parts[0] === 'staging' || parts[0] === 'per-alloc');
  });
}

/**
 * The inventory, from the records and one read of /proc/self/mountinfo
 * (`mountinfo` overrides the file, for tests). Reads only; throws the read
 * error of the mount table.
 */
export async function takeMountInventory(recorded: RecordedVolumes, roots: readonly PluginMountRoot[], mountinfo?: string): Promise<NodeMountInventory> {
  const table = await MountTable.read(mountinfo);
  const mounts = recorded.mounts();
  const recordedPaths = new Set(mounts.map((m) => path.resolve(m.path)));
  const records = mounts
    // A record on its way out (an unpublish or unstage in flight or owed) is expected to have no mount.
    .filter((m) => m.op === 'publish' || m.op === 'stage')
    .map((m) => ({
      kind: m.kind,
      pluginId: m.pluginId,
      namespace: m.namespace,
      volumeId: m.volumeId,
      externalId: m.externalId,
      ...(m.allocId ? { allocId: m.allocId } : {}),
      path: m.path,
      state: m.state,
      mounted: table.has(path.resolve(m.path)),
    }));
  const strayMounts: NodeMountInventory['strayMounts'] = [];
  for (const r of roots) {
    for (const p of [...table.under(path.join(r.root, 'staging')), ...table.under(path.join(r.root, 'per-alloc'))]) {
      if (recordedPaths.has(p) || layoutOwner([r], p) === undefined) continue;
      strayMounts.push({ pluginId: r.pluginId, path: p });
    }
  }
  return { records, strayMounts: strayMounts.sort((a, b) => a.path.localeCompare(b.path)) };
}

/**
 * Unmounts `p` when it is still a mount with no record in a plugin's
 * staging or per-allocation layout; resolves `{ alreadyDone: true }` when
 * it is not mounted. Throws ClientVolumeError CLIENT_VOLUME_BAD_REQUEST for
 * a path outside that layout or one a record names (never unmounted here),
 * and the umount failure otherwise.
 */
export async function unmountStray(recorded: RecordedVolumes, roots: readonly PluginMountRoot[], p: string): Promise<{ alreadyDone: boolean }> {
  const target = path.resolve(p);
  if (!layoutOwner(roots, target)) {
    throw new ClientVolumeError('CLIENT_VOLUME_BAD_REQUEST', `${p} is not a staging or publish directory of a node plugin; not unmounting it`);
  }
  if (recorded.mounts().some((m) => path.resolve(m.path) === target)) {
    throw new ClientVolumeError('CLIENT_VOLUME_BAD_REQUEST', `${p} is recorded as a volume mount of this node; detach the volume instead`);
  }
  if (!(await MountTable.read()).has(target)) return { alreadyDone: true };
  await run('umount', [target]);
  return { alreadyDone: false };
}
