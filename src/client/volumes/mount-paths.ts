// Where the volume manager puts a volume on the node, and how those paths
// look to the plugin. Volume IDs, namespaces and allocation IDs come from
// users and plugins: they may hold `/`, `..`, NUL or be hundreds of bytes
// long (docs/csi-rules.md scenario 17), so none of them ever becomes a path
// component as it is. Each is turned into a key that is a single, safe
// directory name, and different inputs always give different keys.

import { createHash } from 'node:crypto';
import path from 'node:path';
import type { AccessMode, AttachmentMode } from '../../csi/index.js';
import { ClientVolumeError } from './client-volume-error.js';

/** Longest escaped key kept readable; longer ones are hashed (NAME_MAX is 255 bytes). */
const MAX_READABLE_KEY_BYTES = 100;

const SAFE_CHAR = /[A-Za-z0-9_.-]/;

/**
 * A directory name for any non-empty string, unique per input. Readable IDs
 * stay readable: every byte outside `[A-Za-z0-9_.-]` becomes `%XX`, and so
 * does a leading dot (so `.` and `..` cannot name a directory). A result
 * longer than 100 bytes is replaced by `%h` and the SHA-256 of the input:
 * escaping never writes `%h`, so the two forms cannot collide. Pure; throws
 * ClientVolumeError (CLIENT_VOLUME_BAD_REQUEST) for an empty string.
 */
export function pathKey(id: string, what = 'id'): string {
  if (id === '') throw new ClientVolumeError('CLIENT_VOLUME_BAD_REQUEST', `${what} must not be empty`);
  let out = '';
  for (const byte of Buffer.from(id, 'utf8')) {
    const ch = String.fromCharCode(byte);
    const safe = byte < 0x80 && SAFE_CHAR.test(ch) && !(out === '' && ch === '.');
    out += safe ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    if (out.length > MAX_READABLE_KEY_BYTES) break;
  }
  if (out.length > MAX_READABLE_KEY_BYTES) return `%h${createHash('sha256').update(id, 'utf8').digest('hex')}`;
  return out;
}

/** How an allocation uses a volume: the CSI manager's "usage options". */
export interface VolumeUsage {
  /** The task sees the volume read-only (sent as NodePublish `readonly`). */
  readOnly: boolean;
  attachmentMode: AttachmentMode;
  accessMode: AccessMode;
  /** File-system mounts only. `mountFlags` may hold credentials: never logged, never recorded. */
  mountOptions?: {
    fsType?: string;
    mountFlags?: readonly string[];
    volumeMountGroup?: string;
  };
}

/**
 * The directory name for a usage: `ro|rw-<attachment>-<access>`, plus a
 * short hash of the file-system type and mount group when set. Mount flags
 * are left out on purpose (they may hold secrets, and a hash of a password
 * is still a clue), as Nomad leaves them out of its usage paths.
 */
export function usageKey(usage: VolumeUsage): string {
  const base = `${usage.readOnly ? 'ro' : 'rw'}-${usage.attachmentMode}-${usage.accessMode}`;
  const fsType = usage.mountOptions?.fsType ?? '';
  const group = usage.mountOptions?.volumeMountGroup ?? '';
  if (fsType === '' && group === '') return base;
  const digest = createHash('sha256').update(JSON.stringify([fsType, group])).digest('hex').slice(0, 12);
  return `${base}-${digest}`;
}

/** One path as the node (the agent) sees it and as the plugin sees it. */
export interface PluginPath {
  /** The path in the agent's mount namespace: what the agent creates, checks and hands to tasks. */
  host: string;
  /** The same directory as the plugin sees it: what is sent in CSI calls. */
  plugin: string;
}

/**
 * The layout under one plugin's mount root:
 *   <root>/staging/<namespace key>/<volume key>/<usage key>
 *   <root>/per-alloc/<allocation key>/<volume key>/<usage key>
 * and the translation of those paths between the host and the plugin's view.
 */
export class MountPaths {
  /** Absolute host path of the mount root. */
  readonly root: string;
  /** Absolute path of the same directory inside the plugin. */
  readonly pluginRoot: string;

  /** Throws ClientVolumeError (CLIENT_VOLUME_BAD_REQUEST) when a root is not absolute. */
  constructor(root: string, pluginRoot: string = root) {
    if (!path.isAbsolute(root)) throw new ClientVolumeError('CLIENT_VOLUME_BAD_REQUEST', `mount root must be an absolute path, got ${JSON.stringify(root)}`);
    if (!path.isAbsolute(pluginRoot)) {
      throw new ClientVolumeError('CLIENT_VOLUME_BAD_REQUEST', `plugin mount root must be an absolute path, got ${JSON.stringify(pluginRoot)}`);
    }
    this.root = path.resolve(root);
    this.pluginRoot = path.resolve(pluginRoot);
  }

  get stagingRoot(): string {
    return path.join(this.root, 'staging');
  }

  get perAllocRoot(): string {
    return path.join(this.root, 'per-alloc');
  }

  /** The staging directory of a volume for one usage. The CO creates it. */
  staging(namespace: string, volumeId: string, usage: string): PluginPath {
    return this.#both(['staging', pathKey(namespace, 'namespace'), pathKey(volumeId, 'volume ID'), usage]);
  }

  /** The target of one allocation's publication. The CO creates its parent; the plugin creates the target. */
  target(allocId: string, volumeId: string, usage: string): PluginPath {
    return this.#both(['per-alloc', pathKey(allocId, 'allocation ID'), pathKey(volumeId, 'volume ID'), usage]);
  }

  /** The host path a plugin path stands for. Throws ClientVolumeError when it lies outside the plugin's root. */
  toHost(pluginPath: string): string {
    return this.#rebase(pluginPath, this.pluginRoot, this.root);
  }

  /** The plugin path a host path stands for. Throws ClientVolumeError when it lies outside the mount root. */
  toPlugin(hostPath: string): string {
    return this.#rebase(hostPath, this.root, this.pluginRoot);
  }

  /** True when `p` (host view) is strictly inside the mount root once resolved. */
  contains(p: string): boolean {
    const rel = path.relative(this.root, path.resolve(p));
    return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
  }

  #both(parts: string[]): PluginPath {
    for (const part of parts) {
      // Keys are built to be single safe names; this is the belt to that brace.
      if (part === '' || part === '.' || part === '..' || part.includes('/') || part.includes('\0')) {
        throw new ClientVolumeError('CLIENT_VOLUME_BAD_REQUEST', 'a path component is not a safe directory name');
      }
    }
    const host = path.join(this.root, ...parts);
    if (!this.contains(host)) throw new ClientVolumeError('CLIENT_VOLUME_BAD_REQUEST', 'a volume path would leave the mount root');
    return { host, plugin: path.join(this.pluginRoot, ...parts) };
  }

  #rebase(p: string, from: string, to: string): string {
    const rel = path.relative(from, path.resolve(p));
    if (rel.startsWith('..') || path.isAbsolute(rel)) {
      throw new ClientVolumeError('CLIENT_VOLUME_BAD_REQUEST', `path ${JSON.stringify(p)} is outside ${JSON.stringify(from)}`);
    }
    return path.join(to, rel);
  }
}
