// Real mounts for the hostpath plugin: bind mounts made by util-linux
// `mount`/`umount` child processes, and the kernel's own account of what is
// mounted where, read from /proc/self/mountinfo. Nothing here is mocked.

import { execFile } from 'node:child_process';
import { readFile, realpath, stat } from 'node:fs/promises';
import { anySignal, BerthError } from '../../lib/index.js';

/** How long one mount/umount child may run before it is killed. */
const MOUNT_TIMEOUT_MS = 30_000;

/** One line of /proc/self/mountinfo, with the octal escapes decoded. */
export interface MountInfoEntry {
  readonly id: number;
  readonly parentId: number;
  /** major:minor of the filesystem. */
  readonly device: string;
  /** The directory of the filesystem that is mounted here (a bind mount's source, relative to its filesystem). */
  readonly root: string;
  readonly mountPoint: string;
  /** Per-mount options, e.g. ['rw', 'relatime'] or ['ro', ...]. */
  readonly options: readonly string[];
  readonly fsType: string;
  readonly source: string;
}

/** Decodes the `\ooo` escapes the kernel uses for space, tab, newline and backslash. */
export function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/**
 * Parses the text of a mountinfo file (proc(5)). Lines it cannot read are
 * skipped rather than guessed at. Pure; never throws.
 */
export function parseMountInfo(text: string): MountInfoEntry[] {
  const entries: MountInfoEntry[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const fields = line.split(' ');
    const sep = fields.indexOf('-', 6);
    if (fields.length < 10 || sep < 0 || fields.length < sep + 3) continue;
    const [id, parentId, device, root, mountPoint, options] = fields as [string, string, string, string, string, string];
    entries.push({
      id: Number(id),
      parentId: Number(parentId),
      device,
      root: unescapeMountField(root),
      mountPoint: unescapeMountField(mountPoint),
      options: options.split(','),
      fsType: unescapeMountField(fields[sep + 1] ?? ''),
      source: unescapeMountField(fields[sep + 2] ?? ''),
    });
  }
  return entries;
}

/** The mounts this process sees now, in mount order (later entries stack on earlier ones). */
export async function readMountInfo(file = '/proc/self/mountinfo'): Promise<MountInfoEntry[]> {
  return parseMountInfo(await readFile(file, 'utf8'));
}

/** The mounts stacked at exactly `mountPoint` (a real path), bottom first. */
export async function mountsAt(mountPoint: string): Promise<MountInfoEntry[]> {
  return (await readMountInfo()).filter((m) => m.mountPoint === mountPoint);
}

/** `realpath(p)`, or undefined when `p` does not exist. Other errors are thrown. */
export async function realpathOrUndefined(p: string): Promise<string | undefined> {
  try {
    return await realpath(p);
  } catch (err) {
    if (isErrno(err, 'ENOENT') || isErrno(err, 'ENOTDIR')) return undefined;
    throw err;
  }
}

/** What is mounted at a path, as far as a given volume directory is concerned. */
export type MountState =
  | { readonly kind: 'none' }
  | { readonly kind: 'ours'; readonly readonly: boolean; readonly depth: number }
  | { readonly kind: 'other' };

/**
 * Tells whether `p` is a mount point whose top mount shows `volumeDir` (same
 * device and inode, which is what a bind mount of it looks like). A path
 * that does not exist, or is not a mount point, is 'none'. Does not block on
 * anything but the filesystem.
 */
export async function mountStateOf(p: string, volumeDir: string): Promise<MountState> {
  const real = await realpathOrUndefined(p);
  if (real === undefined) return { kind: 'none' };
  const stack = await mountsAt(real);
  const top = stack[stack.length - 1];
  if (!top) return { kind: 'none' };
  const [here, volume] = await Promise.all([stat(real, { bigint: true }), statOrUndefined(volumeDir)]);
  if (volume && here.dev === volume.dev && here.ino === volume.ino) {
    return { kind: 'ours', readonly: top.options.includes('ro'), depth: stack.length };
  }
  // The volume directory was removed while mounted (a disk pulled, an admin's rm -rf): the
  // kernel still shows the bind's source, marked deleted, and the mounted directory has no
  // links. Still this volume's mount, so an unpublish or unstage can undo it (CSI: a target
  // whose volume is gone is unmounted, and the call succeeds).
  if (!volume && here.nlink === 0n && isVanishedSourceOf(top.root, volumeDir)) {
    return { kind: 'ours', readonly: top.options.includes('ro'), depth: stack.length };
  }
  return { kind: 'other' };
}

/**
 * True when a mountinfo `root` is `volumeDir` after its removal: the kernel
 * appends `//deleted`, and shows the path relative to its filesystem, so the
 * tail is compared (the directory name is a plugin-generated UUID). Pure.
 */
export function isVanishedSourceOf(root: string, volumeDir: string): boolean {
  const suffix = '//deleted';
  if (!root.endsWith(suffix)) return false;
  const was = root.slice(0, -suffix.length);
  const name = volumeDir.split('/').filter(Boolean).pop() ?? '';
  return name !== '' && (was === volumeDir || was.endsWith(`/${name}`));
}

async function statOrUndefined(p: string): Promise<Awaited<ReturnType<typeof stat>> | undefined> {
  try {
    return await stat(p, { bigint: true });
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw err;
  }
}

/** Bind-mounts directory `source` onto directory `target`. Throws BerthError('HOSTPATH_MOUNT_FAILED'). */
export async function bindMount(source: string, target: string, signal?: AbortSignal): Promise<void> {
  await run('mount', ['--bind', source, target], signal);
}

/** Makes the bind mount at `target` read-only (a bind mount cannot be made ro in one step). */
export async function remountReadOnly(target: string, signal?: AbortSignal): Promise<void> {
  await run('mount', ['-o', 'remount,bind,ro', target], signal);
}

/**
 * Unmounts the top mount at `target`. `lazy` detaches it even while busy
 * (umount -l), for cleanup paths only. Throws BerthError('HOSTPATH_MOUNT_FAILED').
 */
export async function unmount(target: string, opts: { lazy?: boolean; signal?: AbortSignal } = {}): Promise<void> {
  await run('umount', opts.lazy ? ['-l', target] : [target], opts.signal);
}

/**
 * Lazily unmounts every mount at or below `root`, deepest first. For test
 * and crash cleanup: it does not ask whose mounts they are. Safe to repeat.
 */
export async function unmountAllUnder(root: string): Promise<number> {
  const real = (await realpathOrUndefined(root)) ?? root;
  let count = 0;
  // A stack of mounts at one point needs one umount per layer; bound the loop.
  for (let round = 0; round < 64; round++) {
    const under = (await readMountInfo())
      .filter((m) => m.mountPoint === real || m.mountPoint.startsWith(real + '/'))
      .sort((a, b) => b.mountPoint.length - a.mountPoint.length || b.id - a.id);
    const first = under[0];
    if (!first) break;
    await unmount(first.mountPoint, { lazy: true });
    count++;
  }
  return count;
}

function run(cmd: string, args: string[], signal?: AbortSignal): Promise<void> {
  const timeout = AbortSignal.timeout(MOUNT_TIMEOUT_MS);
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { signal: signal ? anySignal([signal, timeout]) : timeout, env: { ...process.env, LC_ALL: 'C' } },
      (err, _stdout, stderr) => {
        if (!err) {
          resolve();
          return;
        }
        // The arguments are paths and fixed options, never the CO's mount flags, so they may be shown.
        const detail = String(stderr).trim() || err.message;
        reject(new BerthError('HOSTPATH_MOUNT_FAILED', `${cmd} ${args.join(' ')} failed: ${detail}`, { cause: err }));
      },
    );
  });
}

/** True when `err` is a Node system error with this errno code. */
export function isErrno(err: unknown, code: string): boolean {
  return err instanceof Error && (err as NodeJS.ErrnoException).code === code;
}
