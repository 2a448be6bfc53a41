// Which cgroup hierarchy this host offers, decided once at agent start.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CgroupV1 } from './cgroup-v1.js';
import { CgroupV2 } from './cgroup-v2.js';
import type { Cgroups } from './cgroups.js';

export interface DetectCgroupsOptions {
  /** Where cgroupfs is mounted, default /sys/fs/cgroup. */
  root?: string;
  /** The Berth parent group's name, default `berth`. */
  parent?: string;
}

/**
 * The backend to use: v2 when the unified hierarchy is mounted at `root`; v1
 * when v1 controllers are (a hybrid host's empty `root/unified` is ignored);
 * v2 at `root/unified` when that offers the memory controller; otherwise
 * null (no cgroups: a container without them, or no permission to write
 * there, which is probed by making the parent group). Never throws.
 */
export function detectCgroups(opts: DetectCgroupsOptions = {}): Cgroups | null {
  const root = opts.root ?? '/sys/fs/cgroup';
  const parent = opts.parent ?? 'berth';
  const candidates: Array<() => Cgroups> = [];
  if (existsSync(join(root, 'cgroup.controllers'))) candidates.push(() => new CgroupV2({ mount: root, parent }));
  if (existsSync(join(root, 'memory', 'cgroup.procs'))) candidates.push(() => new CgroupV1({ root, parent }));
  if (existsSync(join(root, 'unified', 'cgroup.controllers'))) {
    candidates.push(() => {
      const v2 = new CgroupV2({ mount: join(root, 'unified'), parent });
      if (!v2.controllers.memory) throw new Error('no memory controller');
      return v2;
    });
  }
  for (const make of candidates) {
    try {
      const cg = make();
      // Making and removing a group proves we may write here.
      cg.probe();
      return cg;
    } catch {
      // try the next
    }
  }
  return null;
}

