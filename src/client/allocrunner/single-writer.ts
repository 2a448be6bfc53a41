// Which allocations on this node hold a single-writer CSI volume that a new
// allocation needs: on one node, such a volume never has two live writers,
// not even while a replacement comes up (it mounts only once the allocation
// it replaces has stopped its tasks and unpublished the volume).

import { volumeIdFor, volumeIsReadOnly, type Allocation, type Job, type TaskGroup } from '../../structs/index.js';

/**
 * The CSI volumes (IDs) of the group that allow one writer only and that it
 * writes: every writable CSI volume but multi-node-multi-writer ones.
 */
export function singleWriterVolumes(group: TaskGroup, allocIndex: number): string[] {
  return Object.values(group.volumes)
    .filter((v) => v.type === 'csi' && !volumeIsReadOnly(v) && v.accessMode !== 'multi-node-multi-writer')
    .map((v) => volumeIdFor(v, allocIndex));
}

/** An allocation as the node knows it. */
export interface NodeAllocation {
  alloc: Allocation;
  job: Job;
  /** Whether it is leaving: stopped by the server, or its tasks ended. */
  leaving: boolean;
}

/**
 * The allocations `fresh` must wait for (their cleanup) before it mounts its
 * single-writer volumes: every other one that uses such a volume and either
 * writes it or is leaving. Pure.
 */
export function singleWriterHolders<T extends NodeAllocation>(fresh: Pick<NodeAllocation, 'alloc' | 'job'>, others: Iterable<T>): T[] {
  const groupOf = (a: Pick<NodeAllocation, 'alloc' | 'job'>): TaskGroup | undefined => a.job.groups.find((g) => g.name === a.alloc.taskGroup);
  const group = groupOf(fresh);
  const wanted = new Set(group ? singleWriterVolumes(group, fresh.alloc.index ?? 0) : []);
  if (wanted.size === 0) return [];
  const holders: T[] = [];
  for (const other of others) {
    if (other.alloc.id === fresh.alloc.id) continue;
    const g = groupOf(other);
    if (!g) continue;
    const index = other.alloc.index ?? 0;
    const uses = Object.values(g.volumes)
      .filter((v) => v.type === 'csi')
      .some((v) => wanted.has(volumeIdFor(v, index)));
    if (!uses) continue;
    const writes = singleWriterVolumes(g, index).some((id) => wanted.has(id));
    if (writes || other.leaving) holders.push(other);
  }
  return holders;
}
