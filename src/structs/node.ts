// A client node as the server knows it: what it runs and what it can take.

import type { CsiPluginReport } from './csi-plugin-report.js';

export type NodeStatus = 'initializing' | 'ready' | 'down';

/** What a task driver on the node reported about itself. */
export interface DriverInfo {
  detected: boolean;
  healthy: boolean;
  healthReason: string;
  /** Capabilities the scheduler checks, e.g. network modes ['host', 'none']. */
  networkModes: Array<'host' | 'none'>;
  /** The cgroup hierarchy the driver puts tasks in; 'none' (or absent, from older agents) means limits are not enforced. */
  cgroups?: 'v1' | 'v2' | 'none';
}

/** Resources in the units jobs ask for them. */
export interface Resources {
  cpuMhz: number;
  memoryMb: number;
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
  /** CSI controller plugin instances on the node, by plugin ID. */
  csiControllerPlugins: Record<string, CsiPluginReport>;
  /** CSI node plugin instances on the node, by plugin ID. */
  csiNodePlugins: Record<string, CsiPluginReport>;
  /**
   * How long (ms) the node's agent keeps running tasks that use single-writer
   * volumes once it cannot reach a server (Nomad's stop_after_client_disconnect);
   * it then stops them and unpublishes their volumes. The server waits this long
   * (plus the task's kill_timeout and a margin) after it last heard from a
   * silent node before handing such a volume's write claim to a replacement.
   * Absent: the node does not fence (an older agent, a dev agent), so there
   * is nothing to wait for: the server releases the claims of the node when it
   * marks it down, as before.
   */
  stopAfterDisconnectMs?: number;
  /** How long (ms) the agent gives a task between its stop signal and SIGKILL; absent: 5 s (the client default). */
  killTimeoutMs?: number;
}

export interface Node extends NodeFingerprint {
  id: string;
  status: NodeStatus;
  statusDescription: string;
  /** Milliseconds since the epoch (server clock) of the last heartbeat. */
  lastHeartbeat: number;
  /**
   * The store index of the node's latest registration (its agent started).
   * A terminal allocation on the node created before it may be placed again.
   * Absent on nodes stored before it existed.
   */
  registerIndex?: number;
  createIndex: number;
  modifyIndex: number;
}
