// The nodes' and services' part of the public API, as the node, topology
// and services pages read it: nodes and allocations with their resources,
// drain and eligibility (Nomad's node writes), the native service catalog
// (`/v1/services`, `/v1/service/:name`) and allocations' check results.
// Pure helpers sum what an allocation holds and what a node can give.

import type {
  AllocCheckStatus,
  AllocCheckStatuses,
  NodeDrainUpdateResponse,
  ServiceRegistration,
  ServiceRegistrationListStub,
} from '../../src/api/index.js';
import { getJson, sendJson, type Allocation, type AllocStub, type Node, type NodeStub } from './api';

const enc = encodeURIComponent;

export type CheckStatus = AllocCheckStatus;
export type ServiceInstance = ServiceRegistration;
export type ServiceList = ServiceRegistrationListStub;

/** What an allocation's resources read: a list row's (`?resources=true`) or a full allocation's. */
type HoldsResources = { AllocatedResources?: { Tasks: Record<string, { Cpu: { CpuShares: number }; Memory: { MemoryMB: number } }> | null } | null };
/** What a node's capacity reads: a list row's (`?resources=true`) or a full node's. */
type GivesResources = {
  NodeResources?: { Cpu: { CpuShares: number }; Memory: { MemoryMB: number } } | null;
  ReservedResources?: { Cpu: { CpuShares: number }; Memory: { MemoryMB: number } } | null;
};

/** What an allocation holds, or a node can give: CPU in MHz, memory in MB. */
export interface Amount {
  cpu: number;
  mem: number;
}

export const nodesApi = {
  /** Every node with its NodeResources and ReservedResources (Nomad's `?resources=true`). */
  nodes: () => getJson<NodeStub[]>('/v1/nodes?resources=true'),
  /** Every allocation with its AllocatedResources, without task states. */
  allocations: () => getJson<AllocStub[]>('/v1/allocations?namespace=*&resources=true&task_states=false'),
  node: (id: string) => getJson<Node>(`/v1/node/${enc(id)}`),
  nodeAllocations: (id: string) => getJson<Allocation[]>(`/v1/node/${enc(id)}/allocations`),
};

export const nodeActions = {
  /**
   * Starts a drain: `deadlineNs` 0 for none, negative to force (Nomad's
   * DrainSpec). `meta` travels with it (Nomad's CLI puts `-m` in `message`).
   */
  drain: (id: string, spec: { deadlineNs: number; ignoreSystemJobs: boolean }, meta?: Record<string, string>) =>
    sendJson<NodeDrainUpdateResponse>('PUT', `/v1/node/${enc(id)}/drain`, {
      NodeID: id,
      DrainSpec: { Deadline: spec.deadlineNs, IgnoreSystemJobs: spec.ignoreSystemJobs },
      ...(meta ? { Meta: meta } : {}),
    }),
  /** Cancels the node's drain; the node stays ineligible unless `markEligible`. */
  cancelDrain: (id: string, markEligible: boolean) =>
    sendJson<NodeDrainUpdateResponse>('PUT', `/v1/node/${enc(id)}/drain`, { NodeID: id, DrainSpec: null, MarkEligible: markEligible }),
  eligibility: (id: string, eligible: boolean) =>
    sendJson<NodeDrainUpdateResponse>('PUT', `/v1/node/${enc(id)}/eligibility`, { NodeID: id, Eligibility: eligible ? 'eligible' : 'ineligible' }),
};

export const servicesApi = {
  /** Every namespace's services, those without a healthy instance too. */
  list: () => getJson<ServiceList[]>('/v1/services?namespace=*&include_unhealthy=true'),
  /** The service's instances: every one with `all`, else those Berth serves as healthy (checks passing). */
  instances: (ns: string, name: string, all: boolean) =>
    getJson<ServiceInstance[]>(`/v1/service/${enc(name)}?namespace=${enc(ns)}${all ? '&include_unhealthy=true' : ''}`),
  /** The latest result of each of the allocation's checks. */
  checks: (allocId: string) => getJson<AllocCheckStatuses>(`/v1/allocation/${enc(allocId)}/checks`),
};

/** Whether an allocation holds its node's resources: it is placed to run and has not finished. */
export function holdsResources(a: Pick<AllocStub, 'ClientStatus' | 'DesiredStatus'>): boolean {
  return a.DesiredStatus === 'run' && (a.ClientStatus === 'pending' || a.ClientStatus === 'running');
}

/** The CPU and memory the allocation's tasks reserve (0 when the list left its resources out). */
export function allocated(a: HoldsResources): Amount {
  let cpu = 0;
  let mem = 0;
  for (const t of Object.values(a.AllocatedResources?.Tasks ?? {})) {
    cpu += t.Cpu.CpuShares;
    mem += t.Memory.MemoryMB;
  }
  return { cpu, mem };
}

/** What the node can give allocations: its resources less what it keeps back. */
export function capacity(n: GivesResources): Amount {
  const r = n.NodeResources;
  const k = n.ReservedResources;
  return {
    cpu: Math.max(0, (r?.Cpu.CpuShares ?? 0) - (k?.Cpu.CpuShares ?? 0)),
    mem: Math.max(0, (r?.Memory.MemoryMB ?? 0) - (k?.Memory.MemoryMB ?? 0)),
  };
}

/** The sum of what the allocations hold. */
export function sumAllocated(allocs: readonly HoldsResources[]): Amount {
  return allocs.reduce<Amount>((s, a) => {
    const r = allocated(a);
    return { cpu: s.cpu + r.cpu, mem: s.mem + r.mem };
  }, { cpu: 0, mem: 0 });
}

const UNIT_NS: Record<string, number> = { h: 3600e9, m: 60e9, s: 1e9, ms: 1e6 };

/**
 * A Go duration as an operator types it (`1h`, `90s`, `1h30m`) in
 * nanoseconds; undefined when it is not one or is not positive.
 */
export function parseDuration(text: string): number | undefined {
  const s = text.trim();
  if (!/^(\d+(\.\d+)?(h|ms|m|s))+$/.test(s)) return undefined;
  let ns = 0;
  for (const m of s.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s)/g)) ns += Number(m[1]) * UNIT_NS[m[2] as string]!;
  return ns > 0 ? Math.round(ns) : undefined;
}

/** Milliseconds as a short duration: `1h 5m`, `42s`. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** Megabytes in words (MiB, GiB), as Nomad's memory figures are. */
export function megabytes(mb: number): string {
  return mb >= 1024 ? `${(mb / 1024).toFixed(mb % 1024 === 0 ? 0 : 1)} GiB` : `${mb} MiB`;
}
