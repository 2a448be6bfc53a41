// An allocation: one placed instance of a job's task group on a node.

import type { CheckResult } from './service-spec.js';
import type { AllocMetric } from './placement-rules.js';

/** What the server wants of the allocation. */
export type AllocDesiredStatus = 'run' | 'stop' | 'evict';
/** What the client reports of the allocation. */
export type AllocClientStatus = 'pending' | 'running' | 'complete' | 'failed' | 'lost';

export interface TaskState {
  state: 'pending' | 'running' | 'dead';
  failed: boolean;
  restarts: number;
  /** Milliseconds since the epoch; 0 when not yet started/finished. */
  startedAt: number;
  finishedAt: number;
  events: Array<{ at: number; type: string; message: string; details: Record<string, string> }>;
}

/** An allocation's network as its client reports it (Allocation.network). */
export interface AllocNetworkStatus {
  mode: string;
  /** The allocation's own IP address (bridge, cni). */
  address?: string;
  /** The interface holding it inside the allocation's namespace. */
  interface?: string;
}

/** One port of an allocation (Nomad's AllocatedPortMapping). */
export interface AllocatedPort {
  label: string;
  /** The host port. */
  value: number;
  /** The port inside the allocation's network namespace; equal to `value` in host mode. */
  to: number;
  /** The host address the port is on (the node's address, or its host_network's). */
  hostIp: string;
}

export interface Allocation {
  id: string;
  namespace: string;
  jobId: string;
  /** The job version (its modifyIndex) this allocation runs. */
  jobVersion: number;
  taskGroup: string;
  /** `<job>.<group>[<index>]`, as Nomad names allocations; absent on allocations made before names existed. */
  name?: string;
  /** The allocation's index within its group (0..count-1); picks its per-allocation volumes. */
  index?: number;
  nodeId: string;
  /** What the allocation's tasks take from the node, summed (the scheduler counts it as used). */
  resources?: { cpuMhz: number; memoryMb: number };
  /**
   * The host ports the scheduler gave the allocation (its group's `network`
   * ports), fixed for its life: an in-place update keeps them, a replacement
   * gets its own. `value` is the host port on `hostIp`; `to` the port inside
   * the allocation's network namespace (= value in host mode). Absent on
   * allocations made before ports existed (none asked).
   */
  ports?: AllocatedPort[];
  /** The CSI volumes the allocation uses, with its plugin and whether it writes. */
  csiVolumes?: Array<{ volumeId: string; pluginId: string; readOnly: boolean }>;
  desiredStatus: AllocDesiredStatus;
  desiredDescription: string;
  clientStatus: AllocClientStatus;
  clientDescription: string;
  taskStates: Record<string, TaskState>;
  /**
   * What the server asks of a live allocation beyond its desired status
   * (Nomad's DesiredTransition): `migrate` (a drain or `alloc stop`) makes the
   * scheduler stop it and place a replacement elsewhere.
   */
  desiredTransition?: { migrate?: boolean; reschedule?: boolean; forceReschedule?: boolean };
  /** The allocation's network as its client reports it: mode, and in bridge/cni its own address and interface. */
  network?: AllocNetworkStatus;
  /** Why the scheduler chose the node (Nomad's AllocMetric): `alloc status --verbose`. */
  metrics?: AllocMetric;
  /** The evaluation that placed this allocation (absent on allocations placed before it was recorded). */
  evalId?: string;
  /** The deployment that placed this allocation (a rolling update of its job's version). */
  deploymentId?: string;
  /**
   * The allocation's health as its deployment judged it: `healthy` is unset
   * while undecided; `canary` marks an allocation placed as a canary.
   */
  deploymentStatus?: { healthy?: boolean; canary: boolean; timestamp: number };
  /** The allocation this one replaces (rescheduling), if any. */
  previousAllocation?: string;
  rescheduleAttempts: number;
  /** The latest result of each service check, by check ID, as the client reports it. */
  checks?: Record<string, CheckResult>;
  createIndex: number;
  modifyIndex: number;
  /** Milliseconds since the epoch. */
  createTime: number;
  modifyTime: number;
}

/** Whether the client has finished with the allocation: nothing of it runs any more. */
export function isClientTerminal(status: AllocClientStatus): boolean {
  return status === 'complete' || status === 'failed' || status === 'lost';
}
