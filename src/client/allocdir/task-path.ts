// Where a job's relative path lands: Nomad resolves a template or artifact
// destination against the task directory and never lets it leave the
// allocation directory.

import path from 'node:path';
import type { TaskDir } from './alloc-dir.js';

/**
 * The host path of `p` (already interpolated) for the task of `td`:
 * relative paths and paths as the task sees them in its chroot ("/local/x")
 * are taken under the task directory; an absolute path already inside the
 * allocation directory (a raw_exec task's `${NOMAD_TASK_DIR}/x`) is kept.
 * Returns undefined when the result would leave `allocDir`. Pure.
 */
export function resolveTaskPath(td: TaskDir, allocDir: string, p: string): string | undefined {
  const inside = (x: string): boolean => x === allocDir || x.startsWith(allocDir + path.sep);
  const asGiven = path.resolve(p);
  const resolved = path.isAbsolute(p) && inside(asGiven) ? asGiven : path.join(td.dir, p);
  return inside(resolved) ? resolved : undefined;
}
