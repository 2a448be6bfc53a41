// Reading mounts (/proc/self/mountinfo) and making and undoing them through
// the node's mount helper (mount-helper.ts), never a fork of the agent.

import { realpathSync } from 'node:fs';
import { mountHelper } from './mount-helper.js';
import { hasOwnFileSystem, mountPointsUnder } from './mount-table.mjs';

export { hasOwnFileSystem, mountPointsUnder };

/** Whether `dir` is a mount point. */
export function isMountPoint(dir: string): boolean {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    return false;
  }
  return mountPointsUnder(dir).includes(real);
}

/**
 * Runs mount(8) with `args` in the mount helper. With `unlessOwnFs`, does
 * nothing when that directory already holds a file system of its own (safe
 * to repeat, and asked again if the helper dies meanwhile). Resolves with
 * whether it mounted; throws MountHelperError (ALLOC_MOUNT_FAILED with mount's
 * stderr, ALLOC_MOUNT_HELPER_DIED).
 */
export async function mount(args: string[], opts: { unlessOwnFs?: string } = {}): Promise<boolean> {
  const r = await mountHelper().request<{ mounted: boolean }>({ op: 'mount', args, ...(opts.unlessOwnFs ? { unlessOwnFs: opts.unlessOwnFs } : {}) });
  return r.mounted;
}

/** Runs a /bin/sh -e script of mount commands in the mount helper (one spawn for several mounts). Throws MountHelperError. */
export async function mountScript(script: string): Promise<void> {
  await mountHelper().request({ op: 'sh', script });
}

/**
 * Unmounts everything at or under `root` except at or under a path of `keep`,
 * deepest first (lazily when busy), in the mount helper; with `remove`, then
 * deletes `root` if nothing is left mounted under it. Resolves with how
 * many mounts were undone and the mount points still there (ones not even
 * a lazy unmount could undo). Safe to repeat. Throws MountHelperError
 * ALLOC_MOUNT_HELPER_DIED when the helper died twice meanwhile.
 */
export async function unmountUnder(root: string, opts: { keep?: readonly string[]; remove?: boolean } = {}): Promise<{ unmounted: number; left: string[] }> {
  return mountHelper().request({ op: 'unmount', root, ...(opts.keep?.length ? { keep: [...opts.keep] } : {}), ...(opts.remove ? { remove: true } : {}) });
}

/**
 * Creates each directory (with its parents) with its exact mode, then does
 * each of `mounts` as mount(args, { unlessOwnFs }) would, in one request to
 * the mount helper (an allocation's tree and its secrets tmpfs in one round
 * trip; `mounts` may be empty). Resolves with one outcome a mount, in
 * order (a failed mount is reported there, not thrown). Safe to repeat.
 * Throws MountHelperError ALLOC_MOUNT_FAILED when a directory cannot be made.
 */
export async function buildTree(
  dirs: ReadonlyArray<readonly [path: string, mode: number]>,
  mounts: ReadonlyArray<{ args: string[]; unlessOwnFs: string }>,
): Promise<Array<{ ok: boolean; error?: string }>> {
  const r = await mountHelper().request<{ mounts: Array<{ ok: boolean; error?: string }> }>({
    op: 'build',
    dirs: dirs.map(([p, m]) => [p, m]),
    mounts: mounts.map((m) => ({ args: [...m.args], unlessOwnFs: m.unlessOwnFs })),
  });
  return r.mounts;
}

/**
 * Unmounts everything at or under `root`, deepest first (lazily when busy).
 * Returns how many mounts were undone. Safe to repeat.
 */
export async function unmountAllUnder(root: string): Promise<number> {
  return (await unmountUnder(root)).unmounted;
}
