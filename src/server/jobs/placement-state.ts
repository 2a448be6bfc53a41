// What the cluster looks like to placement, read inside an evaluation's
// write: what every node has in use (live allocations' resources and ports,
// volume claims still held) and the CSI volumes a job's groups ask for,
// with who holds them. evaluate.ts decides and writes; this reads.

import { pluginSchedulable, volumeIdFor, type Allocation, type Job, type VolumeClaim } from '../../structs/index.js';
import { emptyUsage, holdPorts, releasePorts, type NodeUsage, type PlacementVolume, type StopDecision } from '../scheduler/index.js';
import { keyPrefix, rowKey, type StateReader } from '../state/index.js';

/** What is used on every node, from `live` (every live allocation) and from claims still held. */
export function nodeUsage(reader: StateReader, live: readonly Allocation[]): Map<string, NodeUsage> {
  const usage = new Map<string, NodeUsage>();
  const of = (nodeId: string): NodeUsage => {
    let u = usage.get(nodeId);
    if (!u) usage.set(nodeId, (u = emptyUsage()));
    return u;
  };
  const addVolume = (u: NodeUsage, pluginId: string, volumeId: string): void => {
    let set = u.volumes.get(pluginId);
    if (!set) u.volumes.set(pluginId, (set = new Set()));
    set.add(volumeId);
  };
  for (const a of live) {
    const u = of(a.nodeId);
    u.cpuMhz += a.resources?.cpuMhz ?? 0;
    u.memoryMb += a.resources?.memoryMb ?? 0;
    u.jobAllocs.set(a.jobId, (u.jobAllocs.get(a.jobId) ?? 0) + 1);
    holdPorts(u.ports, a.ports);
    for (const v of a.csiVolumes ?? []) addVolume(u, v.pluginId, `${a.namespace}/${v.volumeId}`);
  }
  for (const c of reader.list('claims')) {
    const volume = reader.get('volumes', rowKey(c.namespace, c.volumeId));
    if (volume) addVolume(of(c.nodeId), volume.pluginId, `${c.namespace}/${c.volumeId}`);
  }
  return usage;
}

/** The CSI volumes a job's groups need, as placement sees them; missing volumes are left out. */
export function placementVolumes(reader: StateReader, job: Job, liveAllocs: readonly Allocation[]): Map<string, PlacementVolume> {
  const out = new Map<string, PlacementVolume>();
  // One pass over the claims and the live allocations, not one per volume: a job may name a thousand volumes.
  let claimsByVolume: Map<string, VolumeClaim[]> | undefined;
  let usersByVolume: Map<string, Allocation[]> | undefined;
  for (const group of job.groups) {
    for (const vol of Object.values(group.volumes)) {
      if (vol.type !== 'csi') continue;
      const count = job.type === 'system' ? 1 : Math.max(1, group.count);
      for (let i = 0; i < (vol.perAlloc ? count : 1); i++) {
        const id = volumeIdFor(vol, i);
        if (out.has(id)) continue;
        const volume = reader.get('volumes', rowKey(job.namespace, id));
        if (!volume) continue;
        claimsByVolume ??= groupBy(reader.list('claims', { prefix: keyPrefix(job.namespace) }), (c) => [c.volumeId]);
        usersByVolume ??= groupBy(
          liveAllocs.filter((a) => a.namespace === job.namespace),
          (a) => (a.csiVolumes ?? []).map((v) => v.volumeId),
        );
        const plugin = reader.get('plugins', rowKey(volume.pluginId));
        const claims = new Map<string, PlacementVolume['claims'][number]>();
        for (const c of claimsByVolume.get(id) ?? []) {
          claims.set(c.allocId, { allocId: c.allocId, nodeId: c.nodeId, mode: c.mode, accessMode: c.accessMode, attachmentMode: c.attachmentMode });
        }
        // Allocations placed but not yet claiming count as claims already, in the modes their jobs ask for.
        for (const a of usersByVolume.get(id) ?? []) {
          if (claims.has(a.id)) continue;
          const use = a.csiVolumes?.find((v) => v.volumeId === id);
          if (!use) continue;
          const asked = requestedModes(reader, a, id);
          claims.set(a.id, { allocId: a.id, nodeId: a.nodeId, mode: use.readOnly ? 'read' : 'write', ...asked });
        }
        out.set(id, {
          // Usage counts volumes by namespace/id; placement by the same key.
          id,
          pluginId: volume.pluginId,
          accessMode: vol.accessMode,
          attachmentMode: vol.attachmentMode,
          topologies: volume.accessibleTopology,
          schedulable: pluginSchedulable(plugin),
          exhaustedNodes: new Set(Object.keys(plugin?.exhaustedNodes ?? {})),
          claims: [...claims.values()],
        });
      }
    }
  }
  return out;
}

/** `rows` grouped under each of the keys `keys(row)` names. */
function groupBy<R>(rows: readonly R[], keys: (row: R) => readonly string[]): Map<string, R[]> {
  const out = new Map<string, R[]>();
  for (const r of rows) {
    for (const k of keys(r)) {
      const list = out.get(k);
      if (list) list.push(r);
      else out.set(k, [r]);
    }
  }
  return out;
}

/** The access and attachment modes `alloc`'s job asks for volume `volumeId` in (empty when its job is gone). */
function requestedModes(reader: StateReader, alloc: Allocation, volumeId: string): Pick<PlacementVolume, 'accessMode' | 'attachmentMode'> | object {
  const group = reader.get('jobs', rowKey(alloc.namespace, alloc.jobId))?.groups.find((g) => g.name === alloc.taskGroup);
  for (const vol of Object.values(group?.volumes ?? {})) {
    if (vol.type === 'csi' && volumeIdFor(vol, alloc.index ?? 0) === volumeId) return { accessMode: vol.accessMode, attachmentMode: vol.attachmentMode };
  }
  return {};
}

/** Node usage is keyed `namespace/volumeId`; placement volumes by their ID: align them. */
export function usageForNamespace(usage: Map<string, NodeUsage>, namespace: string): Map<string, NodeUsage> {
  const prefix = `${namespace}/`;
  const out = new Map<string, NodeUsage>();
  for (const [nodeId, u] of usage) {
    const volumes = new Map<string, Set<string>>();
    for (const [pluginId, set] of u.volumes) {
      volumes.set(pluginId, new Set([...set].map((v) => (v.startsWith(prefix) ? v.slice(prefix.length) : `\0${v}`))));
    }
    out.set(nodeId, { ...u, jobAllocs: new Map(u.jobAllocs), volumes });
  }
  return out;
}

/** Gives back the host ports of the allocations this evaluation stops, so that their replacements may take them. */
export function releaseStopped(usage: Map<string, NodeUsage>, stops: readonly StopDecision[], allocs: readonly Allocation[]): void {
  // Each part of a large plan stops nothing: no map of the job's ten thousand allocations for it.
  if (stops.length === 0) return;
  const byId = new Map(allocs.map((a) => [a.id, a]));
  for (const s of stops) {
    const a = byId.get(s.allocId);
    if (a?.ports?.length) releasePorts(usage.get(a.nodeId)?.ports ?? new Map(), a.ports);
  }
}
