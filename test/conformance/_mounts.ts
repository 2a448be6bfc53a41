// What the kernel says is mounted, read independently of any plugin code, and
// the cleanup that keeps a failing test run from leaving mounts behind.

import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { rm } from 'node:fs/promises';

export interface Mount {
  readonly mountPoint: string;
  readonly root: string;
  readonly options: readonly string[];
}

const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));

/** Every mount this process sees, in /proc/self/mountinfo order. */
export function mounts(): Mount[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const f = l.split(' ');
      return { root: unescape(f[3] ?? ''), mountPoint: unescape(f[4] ?? ''), options: (f[5] ?? '').split(',') };
    });
}

/** The mounts stacked at `p` (resolved through symlinks when it exists). */
export function mountsAt(p: string): Mount[] {
  let real = p;
  try {
    real = realpathSync(p);
  } catch {
    // A path that does not exist has no mounts; compare as given.
  }
  return mounts().filter((m) => m.mountPoint === real);
}

/** Mount points at or below `root`. */
export function mountsUnder(root: string): Mount[] {
  const real = realpathSync(root);
  return mounts().filter((m) => m.mountPoint === real || m.mountPoint.startsWith(real + '/'));
}

/** Lazily unmounts everything at or below `root`, deepest first. Never throws for one stuck mount. */
export function unmountEverythingUnder(root: string): void {
  for (let round = 0; round < 256; round++) {
    const left = mountsUnder(root).sort((a, b) => b.mountPoint.length - a.mountPoint.length);
    const first = left[0];
    if (!first) return;
    try {
      execFileSync('umount', ['-l', first.mountPoint], { stdio: 'ignore' });
    } catch {
      // Gone meanwhile, or refused: the next round sees which.
    }
  }
}

/**
 * Unmounts everything under `root`, then removes it. Refuses to remove a
 * tree that still has mounts in it (that would delete through them).
 */
export async function removeTree(root: string): Promise<void> {
  unmountEverythingUnder(root);
  const left = mountsUnder(root);
  if (left.length > 0) throw new Error(`mounts remain under ${root}: ${left.map((m) => m.mountPoint).join(', ')}`);
  await rm(root, { recursive: true, force: true });
}
