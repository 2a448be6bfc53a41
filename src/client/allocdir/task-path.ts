// Where a job's relative path lands: Nomad resolves a template or artifact
// destination against the task directory and never lets it leave the
// allocation directory.

import { realpath } from 'node:fs/promises';
import path from 'node:path';
import type { TaskDir } from './alloc-dir.js';

/**
 * The host path of `p` (already interpolated) for the task of `td`:
 * relative paths and paths as the task sees them in its chroot ("/local/x")
 * are taken under the task directory; an absolute path already inside the
 * allocation directory (a raw_exec task's `${NOMAD_TASK_DIR}/x`) is kept.
 * Returns undefined when the result would leave `allocDir`. Pure.
 */
export function resolveTaskPath(td: Pick<TaskDir, 'dir'>, allocDir: string, p: string): string | undefined {
  const inside = (x: string): boolean => x === allocDir || x.startsWith(allocDir + path.sep);
  const asGiven = path.resolve(p);
  const resolved = path.isAbsolute(p) && inside(asGiven) ? asGiven : path.join(td.dir, p);
  return inside(resolved) ? resolved : undefined;
}

/**
 * Whether a host file a job names (an artifact or template `source`) may be
 * read: it must be, symlinks resolved, inside the allocation directory or
 * one of `roots` (the agent's client.file_roots; undefined: anywhere).
 * A missing file is allowed here (the read then fails with its own error).
 */
export async function mayReadHostPath(p: string, allocDir: string, roots: readonly string[] | undefined): Promise<boolean> {
  if (roots === undefined) return true;
  const real = await realpath(p).catch(() => path.resolve(p));
  const realAlloc = await realpath(allocDir).catch(() => allocDir);
  const under = (root: string): boolean => root === '/' || real === root || real.startsWith(root.endsWith('/') ? root : root + path.sep);
  if (under(realAlloc)) return true;
  for (const root of roots) if (under(await realpath(root).catch(() => root))) return true;
  return false;
}

/** The message for a source outside the file roots. */
export function outsideRootsMessage(roots: readonly string[]): string {
  return `outside the directories this node lets jobs read (client.file_roots in the agent config: ${roots.length ? roots.join(', ') : 'none set'})`;
}

/**
 * Whether `p`, or its nearest existing ancestor, really lies inside
 * `allocDir` once symlinks are resolved: a task may have replaced a
 * directory of its own with a link out of the allocation, which a write by
 * the agent (as root) must not follow. Check before creating or writing.
 */
export async function reallyInside(p: string, allocDir: string): Promise<boolean> {
  const realAlloc = await realpath(allocDir).catch(() => allocDir);
  let probe = p;
  for (;;) {
    const real = await realpath(probe).catch(() => undefined);
    if (real !== undefined) return real === realAlloc || real.startsWith(realAlloc + path.sep);
    const up = path.dirname(probe);
    if (up === probe) return false;
    probe = up;
  }
}
