// Clean-up of the directories the volume manager made: only empty ones, and
// never a mount point (the kernel refuses to rmdir both), so nothing a
// plugin still has mounted can go.

import { readdir, rmdir } from 'node:fs/promises';
import path from 'node:path';

/** The subdirectories of `dir`; [] when it cannot be read. */
export async function listDirs(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory()).map((e) => path.join(dir, e.name));
  } catch {
    return [];
  }
}

/** rmdir when empty and not a mount point (the kernel refuses both). Resolves true when removed. */
export async function removeEmptyDir(dir: string): Promise<boolean> {
  try {
    await rmdir(dir);
    return true;
  } catch {
    return false;
  }
}

/** Removes `dir` and then its parents while they are empty, stopping below `stopAt`. Never throws. */
export async function removeEmptyDirs(dir: string, stopAt: string): Promise<void> {
  for (let d = dir; d !== stopAt && d.startsWith(`${stopAt}/`); d = path.dirname(d)) {
    if (!(await removeEmptyDir(d))) {
      // A target the plugin removed itself is gone already; carry on to its parent.
      try {
        await readdir(d);
        return;
      } catch {
        continue;
      }
    }
  }
}
