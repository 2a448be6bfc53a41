// Reading and undoing mounts: /proc/self/mountinfo and umount(8).

import { execFile } from 'node:child_process';
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

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

/** Runs mount(8) with `args`; throws with its stderr on failure. */
export async function mount(args: string[]): Promise<void> {
  await run('mount', args);
}

/**
 * Unmounts everything at or under `root`, deepest first (lazily when busy).
 * Returns how many mounts were undone. Safe to repeat.
 */
export async function unmountAllUnder(root: string): Promise<number> {
  let n = 0;
  for (let i = 0; i < 256; i++) {
    const next = mountPointsUnder(root)[0];
    if (!next) break;
    try {
      await run('umount', [next]);
    } catch {
      await run('umount', ['-l', next]).catch(() => undefined);
    }
    n += 1;
  }
  return n;
}
