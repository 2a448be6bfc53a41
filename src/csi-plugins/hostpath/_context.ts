// What the hostpath Controller and Node services share: options, the data
// directory layout, the records, the per-volume locks and the logger.

import path from 'node:path';
import { statfs } from 'node:fs/promises';
import { Status } from 'nice-grpc';
import type { Logger } from '../../lib/index.js';
import { KeyedLocks, LockBusyError } from './_lock.js';
import type { StateStore } from './_state.js';
import { grpcError, isWithin } from './_wire.js';

/** Directory names are plugin-generated UUIDs; anything else is a bug, never a path. */
const KEY_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface HostpathContext {
  readonly nodeId: string;
  readonly maxVolumesPerNode: number;
  /** Pretend total capacity; undefined means the free space of the data directory. */
  readonly capacityBytes: number | undefined;
  readonly publishUnpublish: boolean;
  readonly layout: Layout;
  readonly store: StateStore;
  readonly locks: KeyedLocks;
  /** Bytes promised to creations and expansions still in progress, so concurrent ones cannot overbook. */
  readonly reservations: { bytes: number };
  readonly logger: Logger;
}

/** Where things live under the (real, absolute) data directory. */
export class Layout {
  readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  get volumesDir(): string {
    return path.join(this.root, 'volumes');
  }

  get snapshotsDir(): string {
    return path.join(this.root, 'snapshots');
  }

  /** Work in progress (copies being made); emptied at start. */
  get tmpDir(): string {
    return path.join(this.root, 'tmp');
  }

  volumeDir(key: string): string {
    return this.#inside(this.volumesDir, key);
  }

  snapshotDir(key: string): string {
    return this.#inside(this.snapshotsDir, key);
  }

  tmpPath(key: string): string {
    return this.#inside(this.tmpDir, key);
  }

  /** True when `p` (absolute, normalised or real) lies in the data directory. */
  contains(p: string): boolean {
    return isWithin(p, this.root);
  }

  #inside(parent: string, key: string): string {
    // Keys come from our own records; this is a second line of defence.
    if (!KEY_PATTERN.test(key)) throw new Error(`refusing a directory key that the plugin did not generate: ${JSON.stringify(key)}`);
    return path.join(parent, key);
  }
}

/** Takes the locks or answers ABORTED at once. */
export function lockOrAbort(locks: KeyedLocks, ...keys: string[]): () => void {
  try {
    return locks.tryAcquire(...keys);
  } catch (err) {
    if (err instanceof LockBusyError) throw grpcError(Status.ABORTED, err.message);
    throw err;
  }
}

/** Total capacity the plugin offers: the configured figure, or the free space of the data directory. */
export async function totalCapacity(ctx: HostpathContext): Promise<number> {
  if (ctx.capacityBytes !== undefined) return ctx.capacityBytes;
  const s = await statfs(ctx.layout.root);
  return s.bavail * s.bsize;
}

/** Capacity not yet promised to a volume. */
export async function availableCapacity(ctx: HostpathContext): Promise<number> {
  let allocated = ctx.reservations.bytes;
  for (const v of ctx.store.volumes.values()) allocated += v.capacityBytes;
  return Math.max(0, (await totalCapacity(ctx)) - allocated);
}

export { KeyedLocks };
