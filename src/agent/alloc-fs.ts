// Reading an allocation's directory for `alloc fs` without ever leaving it.
// A path is resolved against the allocation directory, `..` may not climb
// out of it, and every symlink on the way is followed by realpath and the
// result must still lie inside the directory. Files are then opened and the
// open descriptor is checked again (/proc/self/fd), so a symlink swapped in
// between the check and the open is caught too (what openat with
// RESOLVE_BENEATH would give).

import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { isAbsolute, join, normalize, relative, sep } from 'node:path';
import type { AllocFileInfo } from '../api/index.js';
import { BerthError } from '../lib/index.js';

export type AllocFsErrorCode = 'ALLOC_FS_ESCAPE' | 'ALLOC_FS_SECRET' | 'ALLOC_FS_NOT_FOUND' | 'ALLOC_FS_NOT_A_FILE' | 'ALLOC_FS_NOT_A_DIRECTORY';

/** A refused or failed `alloc fs` read. ALLOC_FS_ESCAPE: the path leads outside the allocation directory. */
export class AllocFsError extends BerthError<AllocFsErrorCode> {}


function inside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/**
 * The real path of `userPath` (relative to the allocation directory `root`;
 * a leading `/` means the directory itself). Throws AllocFsError FS_ESCAPE
 * when `..` or a symlink leads outside `root`, FS_NOT_FOUND when it does not exist.
 */
export async function resolveInside(root: string, userPath: string): Promise<string> {
  const realRoot = await realpath(root);
  const clean = normalize(`/${userPath || ''}`);
  // normalize('/a/../..') is '/', so climbing is checked on the raw segments.
  let depth = 0;
  for (const seg of (userPath || '').split('/')) {
    if (seg === '..') depth--;
    else if (seg && seg !== '.') depth++;
    if (depth < 0) throw new AllocFsError('ALLOC_FS_ESCAPE', `path "${userPath}" leads outside the allocation directory`);
  }
  const joined = join(realRoot, clean);
  let real: string;
  try {
    real = await realpath(joined);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      // Missing outside is an escape, not a missing file (no probing of what exists out there):
      // the nearest existing ancestor, or a dangling symlink's target, decides.
      const link = await readlink(joined).catch(() => undefined);
      if (link !== undefined && !inside(realRoot, join(joined, '..', link))) {
        throw new AllocFsError('ALLOC_FS_ESCAPE', `path "${userPath}" is a symlink that leads outside the allocation directory`);
      }
      for (let up = join(joined, '..'); inside(realRoot, up) && up !== realRoot; up = join(up, '..')) {
        const real = await realpath(up).catch(() => undefined);
        if (real === undefined) continue;
        if (!inside(realRoot, real)) throw new AllocFsError('ALLOC_FS_ESCAPE', `path "${userPath}" leads outside the allocation directory (through a symlink)`);
        break;
      }
      throw new AllocFsError('ALLOC_FS_NOT_FOUND', `no such file or directory in the allocation: ${clean}`);
    }
    throw err;
  }
  if (!inside(realRoot, real)) throw new AllocFsError('ALLOC_FS_ESCAPE', `path "${userPath}" leads outside the allocation directory (through a symlink)`);
  // A task's secrets/ holds its tokens and rendered secrets: not readable from outside, as in Nomad.
  if (relative(realRoot, real).split(sep)[1] === 'secrets') throw new AllocFsError('ALLOC_FS_SECRET', `reading a task's secrets directory is not allowed`);
  return real;
}

function mode(st: Stats): string {
  const kind = st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'L' : '-';
  const bits = 'rwxrwxrwx'
    .split('')
    .map((c, i) => (st.mode & (1 << (8 - i)) ? c : '-'))
    .join('');
  return kind + bits;
}

/** An entry as Nomad's AllocFileInfo. */
function info(name: string, st: Stats, linkTarget?: string): AllocFileInfo {
  const out: AllocFileInfo = { Name: name, IsDir: st.isDirectory(), Size: st.size, FileMode: mode(st), ModTime: st.mtime.toISOString() };
  if (linkTarget !== undefined) out.LinkTarget = linkTarget;
  return out;
}

/**
 * What a file holds, as Nomad's stat says it (Go's http.DetectContentType
 * on its first 512 bytes, `.json` files as JSON): text or octets here.
 */
async function contentType(real: string, st: Stats): Promise<string> {
  if (real.endsWith('.json')) return 'application/json';
  if (!st.isFile()) return 'application/octet-stream';
  const head = Buffer.alloc(512);
  const handle = await open(real, constants.O_RDONLY | constants.O_NONBLOCK).catch(() => undefined);
  if (!handle) return 'application/octet-stream';
  try {
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    const bytes = head.subarray(0, bytesRead);
    if (bytesRead === 0) return 'text/plain; charset=utf-8';
    const binary = bytes.some((b) => b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0c && b !== 0x0d && b !== 0x1b);
    return binary ? 'application/octet-stream' : 'text/plain; charset=utf-8';
  } finally {
    await handle.close();
  }
}

/** `alloc fs ls`: the entries of a directory; symlinks are listed, not followed. */
export async function listDir(root: string, userPath: string): Promise<AllocFileInfo[]> {
  const dir = await resolveInside(root, userPath);
  const st = await lstat(dir);
  if (!st.isDirectory()) throw new AllocFsError('ALLOC_FS_NOT_A_DIRECTORY', `${userPath || '/'} is not a directory`);
  const entries = await readdir(dir);
  const out: AllocFileInfo[] = [];
  for (const name of entries.sort()) {
    const est = await lstat(join(dir, name)).catch(() => undefined);
    if (!est) continue;
    out.push(info(name, est, est.isSymbolicLink() ? await readlink(join(dir, name)).catch(() => '') : undefined));
  }
  return out;
}

/** `alloc fs stat`: one entry (a symlink inside the directory is followed), with its content type. */
export async function statPath(root: string, userPath: string): Promise<AllocFileInfo> {
  const real = await resolveInside(root, userPath);
  const name = normalize(`/${userPath || ''}`).split('/').pop() || '/';
  const st = await lstat(real);
  return { ...info(name, st), ContentType: await contentType(real, st) };
}

/**
 * Opens a regular file inside the allocation directory for reading, and
 * checks the open descriptor's own path, so that a symlink swapped in after
 * the check is refused. The caller closes the handle.
 */
export async function openInside(root: string, userPath: string): Promise<{ handle: FileHandle; size: number }> {
  const real = await resolveInside(root, userPath);
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const opened = await readlink(`/proc/self/fd/${handle.fd}`);
    if (!inside(await realpath(root), opened)) throw new AllocFsError('ALLOC_FS_ESCAPE', `path "${userPath}" leads outside the allocation directory`);
    const st = await handle.stat();
    if (st.isDirectory()) throw new AllocFsError('ALLOC_FS_NOT_A_FILE', `${userPath} is a directory; use alloc fs ls`);
    if (!st.isFile()) throw new AllocFsError('ALLOC_FS_NOT_A_FILE', `${userPath} is not a regular file`);
    return { handle, size: st.size };
  } catch (err) {
    await handle.close();
    throw err;
  }
}
