// The agent unmounting a staging or publish path itself, when the plugin
// will not (docs/csi-rules.md, "A release always ends"): a path whose
// volume's source has vanished from the node (the kernel shows the bind's
// source as `...//deleted`), or any path an operator's forced detach names.
// Each layer at the path is detached lazily (umount -l), so a task that
// still holds a file there cannot keep it.

import { execFile } from 'node:child_process';
import { readFile, realpath } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A mount stack deeper than this at one path is not something a plugin made. */
const MAX_LAYERS = 16;

/** Why the agent unmounted a path itself. */
export type AgentUnmountReason = 'source-vanished' | 'forced';

/** A path the agent unmounted itself after the plugin refused to, for the claim's history. */
export interface AgentUnmount {
  op: 'unpublish' | 'unstage';
  path: string;
  reason: AgentUnmountReason;
  /** The plugin's refusal, as the step saw it. */
  pluginError: string;
  /** How many mount layers were detached there (0: nothing was mounted any more). */
  layers: number;
}

/** What a negation step may do when the plugin refuses: `force` (an operator's detach) takes over any path. */
export interface Takeover {
  force: boolean;
  /** Filled with what the agent did. */
  done: AgentUnmount[];
}

/** The mounts at `mountPoint`, bottom first: their mountinfo `root` field (a bind's source, relative to its filesystem). */
export function mountRootsAt(mountinfo: string, mountPoint: string): string[] {
  const roots: string[] = [];
  for (const line of mountinfo.split('\n')) {
    const f = line.split(' ');
    if (f.length < 10 || f[3] === undefined || f[4] === undefined) continue;
    if (unescape(f[4]) === mountPoint) roots.push(unescape(f[3]));
  }
  return roots;
}

function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

async function resolved(p: string): Promise<string> {
  return realpath(p).catch(() => p);
}

/**
 * True when the top mount at `p` shows a directory that was removed from
 * its filesystem (its source vanished): nothing a plugin call can give back.
 * Reads /proc/self/mountinfo (or `mountinfo`); never throws for a missing path.
 */
export async function sourceVanished(p: string, mountinfo = '/proc/self/mountinfo'): Promise<boolean> {
  const roots = mountRootsAt(await readFile(mountinfo, 'utf8'), await resolved(p));
  return roots.at(-1)?.endsWith('//deleted') ?? false;
}

/**
 * Lazily unmounts every layer at `p` (umount -l, top first). Resolves with
 * the number of layers detached; safe to repeat (0 when nothing is mounted).
 * Throws the umount failure.
 */
export async function unmountEveryLayer(p: string, mountinfo = '/proc/self/mountinfo'): Promise<number> {
  const real = await resolved(p);
  let layers = 0;
  for (; layers < MAX_LAYERS; layers++) {
    if (mountRootsAt(await readFile(mountinfo, 'utf8'), real).length === 0) break;
    await run('umount', ['-l', real], { env: { ...process.env, LC_ALL: 'C' } });
  }
  return layers;
}
