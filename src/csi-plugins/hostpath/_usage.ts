// What a hostpath volume holds: a walk of its directory (as du(1) counts it),
// since a volume is a directory on a shared file system and statfs would
// report the whole disk. Hard links are counted once; the walk stays on the
// directory's own file system (a mount inside the volume is not the volume).

import { lstat, opendir } from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from './_mount.js';

/** Bytes allocated (st_blocks x 512) and inodes (files, directories, links) under `dir`, itself included. */
export interface DirectoryUsage {
  bytes: number;
  inodes: number;
}

/**
 * Walks `dir` without following symlinks. Entries that vanish during the
 * walk are skipped. Throws ENOENT when `dir` itself is missing, and any
 * other error of reading it.
 */
export async function directoryUsage(dir: string): Promise<DirectoryUsage> {
  const root = await lstat(dir, { bigint: true });
  const seen = new Set<string>();
  let bytes = 0n;
  let inodes = 0;
  const count = (st: { dev: bigint; ino: bigint; blocks: bigint }): boolean => {
    const key = `${st.dev}:${st.ino}`;
    if (seen.has(key)) return false;
    seen.add(key);
    bytes += st.blocks * 512n;
    inodes++;
    return true;
  };
  count(root);
  const pending = [dir];
  while (pending.length > 0) {
    const current = pending.pop() as string;
    let handle;
    try {
      handle = await opendir(current);
    } catch (err) {
      if (isErrno(err, 'ENOENT') || isErrno(err, 'ENOTDIR')) continue;
      throw err;
    }
    for await (const entry of handle) {
      const p = path.join(current, entry.name);
      let st;
      try {
        st = await lstat(p, { bigint: true });
      } catch (err) {
        if (isErrno(err, 'ENOENT')) continue;
        throw err;
      }
      if (st.dev !== root.dev) continue;
      if (count(st) && st.isDirectory()) pending.push(p);
    }
  }
  return { bytes: Number(bytes), inodes };
}
