// A task's `user` for the built-in drivers: the name (or uid) resolved on the
// host, the task's own directories handed to it, and the command wrapped in
// util-linux `setpriv`, which drops to that user (and its groups) right
// before it execs the task, after exec's namespaces and chroot are built as
// root.

import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, readFileSync } from 'node:fs';
import { DriverError } from './driver-error.js';

const SETPRIV = existsSync('/usr/bin/setpriv') ? '/usr/bin/setpriv' : 'setpriv';

/** uid and gid of `user` (a name, or a uid) from /etc/passwd; undefined when it has no line there. */
function fromPasswd(user: string): { uid: number; gid: number } | undefined {
  let text: string;
  try {
    text = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  const byUid = /^\d+$/.test(user);
  for (const line of text.split('\n')) {
    const [name, , uid, gid] = line.split(':');
    if (uid === undefined || gid === undefined) continue;
    if (byUid ? uid === user : name === user) return { uid: Number(uid), gid: Number(gid) };
  }
  return undefined;
}

function idOf(flag: '-u' | '-g', user: string): number | undefined {
  try {
    return Number(execFileSync('id', [flag, user], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    return undefined;
  }
}

/** uid and gid of `user` (a name, or a uid) on this node; undefined when it has none. Blocks briefly (reads /etc/passwd; runs `id` for a user not listed there). */
export function taskUserIds(user: string): { uid: number; gid: number } | undefined {
  // /etc/passwd first: `id` (users from NSS sources too) is a fork of the agent, twice.
  const local = fromPasswd(user);
  const uid = local ? local.uid : idOf('-u', user);
  const gid = local ? local.gid : idOf('-g', user);
  if (uid === undefined || gid === undefined || !Number.isInteger(uid) || !Number.isInteger(gid)) return undefined;
  return { uid, gid };
}

/**
 * The command and args that run `command` as `user`, with `dirs` (the task's
 * local and secrets directories) owned by it. Blocks briefly (reads
 * /etc/passwd; runs `id` for a user not listed there).
 * Throws DriverError DRIVER_START_FAILED (not recoverable) when the node has
 * no such user.
 */
export function runAsUser(user: string, command: string, args: string[], taskName: string, dirs: string[]): { command: string; args: string[] } {
  const ids = taskUserIds(user);
  if (!ids) throw new DriverError('DRIVER_START_FAILED', `task ${taskName}: user "${user}" does not exist on this node`, { recoverable: false });
  const { uid, gid } = ids;
  for (const dir of dirs) if (existsSync(dir)) chownSync(dir, uid, gid);
  const groups = /^\d+$/.test(user) ? ['--clear-groups'] : ['--init-groups'];
  return { command: SETPRIV, args: [`--reuid=${uid}`, `--regid=${gid}`, ...groups, '--', command, ...args] };
}
