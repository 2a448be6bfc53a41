// Reading mounts (/proc/self/mountinfo) and making and undoing them through
// the node's mount helper (mount-helper.ts), never a fork of the agent.

import { readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { mountHelper } from './mount-helper.js';

/** Mount points (as the kernel names them) at or under `root`, deepest first. */
export function mountPointsUnder(root: string): string[] {
  let real: string;
  try {
    real = realpathSync(root);
  } catch {
    return [];
  }
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => (l.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8))))
    .filter((m) => m === real || m.startsWith(`${real}/`))
    .sort((a, b) => b.length - a.length);
}

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
 * Whether `dir` holds a file system other than its parent's (a tmpfs mounted
 * on it): one stat each, where isMountPoint reads the whole mount table (long
 * with hundreds of allocations). A bind mount from the same file system is not
 * seen; use isMountPoint for those. False when `dir` is missing.
 */
export function hasOwnFileSystem(dir: string): boolean {
  try {
    return statSync(dir).dev !== statSync(dirname(dir)).dev;
  } catch {
    return false;
  }
}

/**
 * Runs mount(8) with `args` in the mount helper. With `unlessOwnFs`, does
 * nothing when that directory already holds a file system of its own (safe
 * to repeat, and asked again if the helper dies meanwhile). Resolves with
 * whether it mounted; throws MountHelperError (MOUNT_FAILED with mount's
 * stderr, MOUNT_HELPER_DIED).
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
 * MOUNT_HELPER_DIED when the helper died twice meanwhile.
 */
export async function unmountUnder(root: string, opts: { keep?: readonly string[]; remove?: boolean } = {}): Promise<{ unmounted: number; left: string[] }> {
  return mountHelper().request({ op: 'unmount', root, ...(opts.keep?.length ? { keep: [...opts.keep] } : {}), ...(opts.remove ? { remove: true } : {}) });
}

/**
 * Creates each directory (with its parents) in the mount helper and sets its
 * exact mode (mkdir's is cut by the umask). Safe to repeat. Throws
 * MountHelperError MOUNT_FAILED with the failing directory.
 */
export async function makeDirs(dirs: ReadonlyArray<readonly [path: string, mode: number]>): Promise<void> {
  await mountHelper().request({ op: 'mkdirs', dirs: dirs.map(([p, m]) => [p, m]) });
}

/**
 * Unmounts everything at or under `root`, deepest first (lazily when busy).
 * Returns how many mounts were undone. Safe to repeat.
 */
export async function unmountAllUnder(root: string): Promise<number> {
  return (await unmountUnder(root)).unmounted;
}
