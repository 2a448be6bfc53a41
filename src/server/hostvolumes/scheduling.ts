// What an evaluation needs of dynamic host volumes: the host volume checker
// of a group (from the store: the namespace's volumes, the host volume uses
// of the allocations that stay, the group's unmet sticky claims), and the
// sticky claims its new allocations make (Nomad's
// updateStickyVolumeClaimsFromAlloc). Both run inside the evaluation's write.

import { createHash } from 'node:crypto';
import { HostVolumeChecker, type HostVolumeUse } from '../scheduler/index.js';
import { keyPrefix, rowKey, type RowInput, type StateReader, type WriteTxn } from '../state/index.js';
import { isClientTerminal, type Allocation, type HostVolume, type Job, type Node, type TaskGroup } from '../../structs/index.js';

/**
 * The checker for `group` of `job`, or undefined when the group asks for no
 * host volume. `live`: the allocations that stay after this evaluation's
 * stops (every job's). Pure read of `reader`.
 */
export function hostVolumeCheckerFor(reader: StateReader, job: Job, group: TaskGroup, live: readonly Allocation[], nodes: ReadonlyMap<string, Node>): HostVolumeChecker | undefined {
  if (!Object.values(group.volumes).some((v) => v.type === 'host')) return undefined;
  const volumes = new Map<string, HostVolume>();
  for (const v of reader.list('hostVolumes', { prefix: keyPrefix(job.namespace) })) volumes.set(v.id, v);
  const names = new Set(Object.values(group.volumes).filter((v) => v.type === 'host').map((v) => v.source));
  const uses: HostVolumeUse[] = [];
  const jobs = new Map<string, Job | undefined>();
  for (const a of live) {
    const key = rowKey(a.namespace, a.jobId);
    if (!jobs.has(key)) jobs.set(key, reader.get('jobs', key));
    const g = jobs.get(key)?.groups.find((x) => x.name === a.taskGroup);
    for (const v of Object.values(g?.volumes ?? {})) {
      if (v.type === 'host' && names.has(v.source)) uses.push({ nodeId: a.nodeId, source: v.source, readOnly: v.readOnly });
    }
  }
  const unmet = new Set<string>();
  const claims = reader.list('hostVolumeClaims', { prefix: keyPrefix(job.namespace, job.id, group.name) });
  for (const c of claims) {
    const owner = reader.get('allocations', rowKey(c.allocId));
    const vol = volumes.get(c.volumeId);
    if (!owner || !vol) continue;
    const met = live.some((a) => a.jobId === job.id && a.namespace === job.namespace && a.taskGroup === group.name && a.nodeId === vol.nodeId);
    if (!met) unmet.add(c.volumeId);
  }
  return new HostVolumeChecker({ group, volumes, nodes, uses, unmetStickyVolumes: unmet });
}

/**
 * Writes the sticky claims `alloc` makes: for each sticky host volume
 * request of its group, the dynamic host volume of that name on its node.
 * An existing claim of the group on that volume is taken over only when its
 * allocation is gone or terminal (Nomad's claimToUpsertForAlloc).
 */
export function recordStickyClaims(txn: WriteTxn, job: Job, alloc: Pick<Allocation, 'id' | 'nodeId' | 'taskGroup'>): void {
  const group = job.groups.find((g) => g.name === alloc.taskGroup);
  const sticky = Object.values(group?.volumes ?? {}).filter((v) => v.type === 'host' && v.sticky);
  if (sticky.length === 0) return;
  const node = txn.get('nodes', rowKey(alloc.nodeId));
  for (const req of sticky) {
    const volumeId = node?.hostVolumes?.[req.source]?.id;
    if (!volumeId) continue;
    const existing = txn.get('hostVolumeClaims', rowKey(job.namespace, job.id, alloc.taskGroup, volumeId));
    if (existing) {
      if (existing.allocId === alloc.id) continue;
      const holder = txn.get('allocations', rowKey(existing.allocId));
      if (holder && !isClientTerminal(holder.clientStatus) && holder.desiredStatus === 'run') continue;
    }
    const claim: RowInput<'hostVolumeClaims'> = {
      id: existing?.id ?? claimId(job.namespace, job.id, alloc.taskGroup, volumeId),
      namespace: job.namespace,
      jobId: job.id,
      taskGroup: alloc.taskGroup,
      allocId: alloc.id,
      volumeId,
      volumeName: req.source,
    };
    txn.put('hostVolumeClaims', claim);
  }
}

/** A claim's ID from its key: the same in every run of a write that is retried. */
function claimId(...parts: string[]): string {
  const h = createHash('sha256').update(parts.join('\0')).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
