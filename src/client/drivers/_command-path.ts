// Whether a task's command can be found before its executor is spawned: a
// missing program is a configuration error that no restart can fix, and is
// reported as such (DriverError with `recoverable: false`) instead of as an
// exit code 127 that the restart policy retries.

import { accessSync, constants, statSync } from 'node:fs';
import { dirname, isAbsolute, join, posix } from 'node:path';
import type { TaskConfig } from './task-driver.js';

/** The PATH a task gets when its env sets none (as the executor's). */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Host directories the exec driver binds into the task's root at the same path. */
const EXEC_HOST_DIRS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/usr', '/etc'];

function executable(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

const under = (path: string, dir: string): boolean => path === dir || path.startsWith(`${dir}/`);

/**
 * Where a path inside an exec task's root is on the host, or undefined when
 * it cannot be told before the task runs (its /tmp, /dev, /proc, ...).
 */
function execHostPath(inside: string, cfg: TaskConfig): string | undefined {
  const p = posix.normalize(inside);
  const mounts = [...cfg.mounts].sort((a, b) => b.destination.length - a.destination.length);
  for (const m of mounts) if (under(p, m.destination)) return join(m.source, p.slice(m.destination.length));
  const dirs: Array<[string, string]> = [
    ['/local', cfg.taskDir],
    ['/alloc', join(cfg.allocDir, 'alloc')],
    ['/secrets', cfg.secretsDir],
  ];
  for (const [dst, src] of dirs) if (under(p, dst)) return join(src, p.slice(dst.length));
  if (EXEC_HOST_DIRS.some((d) => under(p, d))) return p;
  return undefined;
}

/**
 * Why the task's command cannot be run, or undefined when it can (or when
 * that cannot be known before the task runs). `mode` is the driver: for
 * raw_exec a relative path is under the task's directory (its working
 * directory, as in Nomad: `local/app`) and the host's files are the task's;
 * for exec the path is inside the task's root (relative: from `/`, where
 * local/ is).
 * A name without a slash is looked up on the task's PATH. Never throws.
 */
export function commandProblem(cfg: TaskConfig, mode: 'raw_exec' | 'exec'): string | undefined {
  const cmd = cfg.command;
  const toHost = (p: string): string | undefined =>
    mode === 'exec' ? execHostPath(posix.join('/', p), cfg) : isAbsolute(p) ? p : join(dirname(cfg.taskDir), p);
  if (cmd.includes('/')) {
    const host = toHost(cmd);
    if (host === undefined || executable(host)) return undefined;
    return `command "${cmd}" does not exist or is not an executable file`;
  }
  const dirs = (cfg.env['PATH'] ?? DEFAULT_PATH).split(':').filter(Boolean);
  for (const dir of dirs) {
    const host = toHost(posix.join(dir, cmd));
    if (host === undefined || executable(host)) return undefined;
  }
  return `command "${cmd}" was not found on the task's PATH (${dirs.join(':')})`;
}
