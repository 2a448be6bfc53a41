// A task's `user` for the built-in drivers: the name (or uid) resolved on the
// host, the task's own directories handed to it, and the command wrapped in
// util-linux `setpriv`, which drops to that user (and its groups) right
// before it execs the task, after exec's namespaces and chroot are built as
// root.

import { execFileSync } from 'node:child_process';
import { chownSync, existsSync } from 'node:fs';
import { DriverError } from './driver-error.js';

const SETPRIV = existsSync('/usr/bin/setpriv') ? '/usr/bin/setpriv' : 'setpriv';

function idOf(flag: '-u' | '-g', user: string): number | undefined {
  try {
    return Number(execFileSync('id', [flag, user], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    return undefined;
  }
}

/**
 * The command and args that run `command` as `user`, with `dirs` (the task's
 * local and secrets directories) owned by it. Blocks briefly (runs `id`).
 * Throws DriverError DRIVER_START_FAILED (not recoverable) when the node has
 * no such user.
 */
export function runAsUser(user: string, command: string, args: string[], taskName: string, dirs: string[]): { command: string; args: string[] } {
  const uid = idOf('-u', user);
  const gid = idOf('-g', user);
  if (uid === undefined || gid === undefined || !Number.isInteger(uid) || !Number.isInteger(gid)) {
    throw new DriverError('DRIVER_START_FAILED', `task ${taskName}: user "${user}" does not exist on this node`, { recoverable: false });
  }
  for (const dir of dirs) if (existsSync(dir)) chownSync(dir, uid, gid);
  const groups = /^\d+$/.test(user) ? ['--clear-groups'] : ['--init-groups'];
  return { command: SETPRIV, args: [`--reuid=${uid}`, `--regid=${gid}`, ...groups, '--', command, ...args] };
}
