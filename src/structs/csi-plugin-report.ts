// What a node agent tells the server about each CSI plugin instance it runs.
// Shared by the client (which produces reports) and the server (which derives
// plugin health and counts from them); they travel as JSON.

import type { PluginFingerprint } from '../csi/index.js';

/** A plugin registration's type; a monolith registers one of each. */
export type CsiPluginType = 'csi-controller' | 'csi-node';

/**
 * One plugin instance on one node, as last seen by that node's CSI manager.
 * `fingerprint` is absent until the first fingerprint succeeds.
 */
export interface CsiPluginReport {
  /** The plugin ID users name in jobs and volumes (the registration name). */
  pluginId: string;
  type: CsiPluginType;
  /** The allocation that runs the serving instance. */
  allocId: string;
  healthy: boolean;
  /** Why the plugin is (un)healthy, readable by a person: "probe failed: ...". */
  healthReason: string;
  /** GetPluginInfo name, e.g. `hostpath.csi.berth.dev`; empty before the first fingerprint. */
  provider: string;
  /** GetPluginInfo vendor_version; empty before the first fingerprint. */
  version: string;
  fingerprint?: PluginFingerprint;
  /** Milliseconds since the epoch of the node's clock when this was observed. */
  updatedAt: number;
}

/** A readable event about a node, such as a plugin becoming unhealthy. */
export interface NodeEvent {
  /** Milliseconds since the epoch. */
  at: number;
  subsystem: 'csi' | 'driver' | 'node';
  message: string;
  details: Record<string, string>;
}
