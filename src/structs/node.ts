// A client node as the server knows it: what it runs and what it can take.

import type { CsiPluginReport } from './csi-plugin-report.js';
import type { NodeHostVolume } from './host-volume.js';

export type NodeStatus = 'initializing' | 'ready' | 'down';

/** A group network mode: `host`, `none`, `bridge`, or a CNI network `cni/<name>`. */
export type NetworkMode = 'host' | 'none' | 'bridge' | `cni/${string}`;

/** Whether `mode` is a network mode a group may ask for. */
export function isNetworkMode(mode: string): mode is NetworkMode {
  return mode === 'host' || mode === 'none' || mode === 'bridge' || /^cni\/[A-Za-z0-9_.-]+$/.test(mode);
}

/** Whether a driver offering `modes` (where 'cni/*' stands for every CNI network) can run a group in `mode`. */
export function supportsNetworkMode(modes: readonly string[], mode: string): boolean {
  return modes.includes(mode) || (mode.startsWith('cni/') && modes.includes('cni/*'));
}

/** What a task driver on the node reported about itself. */
export interface DriverInfo {
  detected: boolean;
  healthy: boolean;
  healthReason: string;
  /** Network modes the driver's tasks can run in ('host', 'none', 'bridge', 'cni/*'), which the scheduler checks (supportsNetworkMode). */
  networkModes: string[];
  /** The driver makes the group's network namespace itself (Nomad's MustInitiateNetwork). */
  mustInitiateNetwork?: boolean;
  /** The cgroup hierarchy the driver puts tasks in; 'none' (or absent, from older agents) means limits are not enforced. */
  cgroups?: 'v1' | 'v2' | 'none';
  /** True for a driver served by an external plugin (Nomad's driver plugin protocol). */
  external?: boolean;
  /** What the driver's fingerprint reported (`driver.<name>.*`), as strings. */
  attributes?: Record<string, string>;
  /** An external driver's TaskConfigSchema (Nomad's hclspec tree as JSON): what job validation checks a task's `config {}` against. */
  taskConfigSchema?: Record<string, unknown>;
}

/** Resources in the units jobs ask for them. */
export interface Resources {
  cpuMhz: number;
  memoryMb: number;
}

/** A client `host_network`: where its address comes from and the address found. */
export interface HostNetwork {
  cidr?: string;
  interface?: string;
  /** The address ports on this network are bound to ('' when none was found: ports asked on it cannot be placed here). */
  address: string;
  /** Host ports reserved on this network only. */
  reservedPorts?: number[];
}

/** What a node sends when it registers and on every heartbeat. */
export interface NodeFingerprint {
  name: string;
  datacenter: string;
  /** Address the node's agent serves on, for logs/exec proxies; may be empty. */
  httpAddr: string;
  drivers: Record<string, DriverInfo>;
  resources: Resources;
  attributes: Record<string, string>;
  /** The client's `node_class` (constraints read it as ${node.class}); absent: no class. */
  nodeClass?: string;
  /** The client's `meta {}` merged with the dynamic meta of `node meta apply` (${meta.<key>}). */
  meta?: Record<string, string>;
  /** CSI controller plugin instances on the node, by plugin ID. */
  csiControllerPlugins: Record<string, CsiPluginReport>;
  /** CSI node plugin instances on the node, by plugin ID. */
  csiNodePlugins: Record<string, CsiPluginReport>;
  /**
   * Host volumes on the node, by name (Nomad's Node.HostVolumes): its static
   * `host_volume` blocks (id '') and the dynamic host volumes its plugins
   * made or it registered. Absent (an older agent): the scheduler does not
   * check static host volumes on it.
   */
  hostVolumes?: Record<string, NodeHostVolume>;
  /**
   * The client's `stop_after_server_disconnect` in milliseconds: once it has
   * reached no server for this long, the node stops (SIGTERM, then SIGKILL
   * after the kill timeout) every task of a group with a single-writer CSI
   * volume, even with its agent dead or frozen (the task's executor does
   * it), and does not restart them. A server may hand such a volume's claim
   * held by a silent node to a replacement only after its last heartbeat
   * plus this plus the kill timeout plus a margin. Absent: the node does
   * not fence (a dev agent, whose server shares its process; an older agent).
   */
  stopAfterDisconnectMs?: number;
  /** The node's IP on its default network (client network_interface, else the default route's; loopback on a dev agent). */
  networkAddress?: string;
  /** Host ports no allocation may get (client reserved { reserved_ports }), on every address. */
  reservedPorts?: number[];
  /** The range dynamic ports are picked from (client min/max_dynamic_port); absent: 20000-32000. */
  minDynamicPort?: number;
  maxDynamicPort?: number;
  /** The client's named host networks (host_network "name"), with the address fingerprinted for each. */
  hostNetworks?: Record<string, HostNetwork>;
  /**
   * The group network modes the node can set up (Nomad's NodeResources
   * networks): host, none, bridge (when the CNI plugins it needs are in
   * cni_path), cni/<name> (each network in cni_config_dir). Absent: an
   * older agent that does not say; the scheduler then does not check.
   */
  networkModes?: string[];
  /** How long (ms) the agent gives a task between its stop signal and SIGKILL; absent: 5 s (the client default). */
  killTimeoutMs?: number;
}

/** Whether the scheduler may place new allocations on a node. */
export type SchedulingEligibility = 'eligible' | 'ineligible';

/**
 * A drain in progress (Nomad's DrainStrategy). `deadlineMs` is the
 * operator's deadline: 0 for none, -1 for a forced drain (everything at
 * once); `forceDeadline` is the clock time (ms since the epoch) it falls at,
 * 0 when there is none.
 */
export interface DrainStrategy {
  deadlineMs: number;
  forceDeadline: number;
  ignoreSystemJobs: boolean;
  /** Milliseconds since the epoch. */
  startedAt: number;
}

/** How the node's latest drain went, for `node status` and the event stream. */
export interface DrainMetadata {
  status: 'draining' | 'complete' | 'canceled';
  startedAt: number;
  updatedAt: number;
  /** What the drainer last did or waits for, in the operator's words. */
  message: string;
  /** What the operator sent with the drain (`node drain -m`, `-meta`; Nomad's DrainMetadata.Meta). */
  meta?: Record<string, string>;
}

/**
 * A change of the node as the servers saw it (Nomad's NodeEvent): it
 * registered, missed its heartbeats, came back, was drained or marked
 * (in)eligible. A node keeps its last MAX_NODE_EVENTS.
 */
export interface NodeHistoryEvent {
  /** Milliseconds since the epoch (server clock). */
  at: number;
  /** Nomad's subsystems: `Cluster`, `Drain`, `Driver`, `Heartbeat`, `Scheduler`, `Storage`. */
  subsystem: string;
  message: string;
  details?: Record<string, string>;
  /** The store index of the write that recorded it. */
  createIndex: number;
}

/** How many events a node keeps (Nomad keeps 10). */
export const MAX_NODE_EVENTS = 10;

/** The node with `event` recorded at `index` (its oldest events dropped past MAX_NODE_EVENTS). Pure. */
export function withNodeEvent<T extends Pick<Node, 'events'>>(node: T, event: Omit<NodeHistoryEvent, 'createIndex'>, index: number): T {
  const events = [...(node.events ?? []), { ...event, createIndex: index }];
  return { ...node, events: events.slice(-MAX_NODE_EVENTS) };
}

export interface Node extends NodeFingerprint {
  id: string;
  status: NodeStatus;
  statusDescription: string;
  /** Milliseconds since the epoch (server clock) of the last status change; absent on nodes stored before it existed. */
  statusUpdatedAt?: number;
  /** Milliseconds since the epoch (server clock) of the last heartbeat. */
  lastHeartbeat: number;
  /**
   * The store index of the node's latest registration (its agent started).
   * A terminal allocation on the node created before it may be placed again.
   * Absent on nodes stored before it existed.
   */
  registerIndex?: number;
  /** Absent means eligible. A draining node is always ineligible. */
  schedulingEligibility?: SchedulingEligibility;
  /** Set while the node drains; null or absent otherwise. */
  drainStrategy?: DrainStrategy | null;
  lastDrain?: DrainMetadata;
  /** The node's last changes, oldest first (withNodeEvent). */
  events?: NodeHistoryEvent[];
  createIndex: number;
  modifyIndex: number;
}

/** True when the scheduler may place new allocations on the node. */
export function isEligible(node: Pick<Node, 'schedulingEligibility' | 'drainStrategy'>): boolean {
  return node.schedulingEligibility !== 'ineligible' && !node.drainStrategy;
}
