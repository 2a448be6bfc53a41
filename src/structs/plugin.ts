// CSI plugins as the server derives them from what nodes report and from the
// jobs that run them. Never written by users: recomputed whenever a node or
// an allocation changes.

import type { ControllerCapability, NodeCapability, Topology } from '../csi/index.js';

/**
 * One instance of a plugin on one node, as that node last reported it. The
 * plugin's full fingerprint stays on the node's row (`csiNodePlugins`,
 * `csiControllerPlugins`): a plugin row holds one instance per node, and a
 * thousand copies of it made every node write rewrite a row of nearly 1 MB.
 */
export interface CsiPluginInstance {
  nodeId: string;
  allocId: string;
  /** False when the node reported it unhealthy, or the node is down. */
  healthy: boolean;
  healthReason: string;
  provider: string;
  version: string;
  /** Node instances: the plugin's NodeGetInfo.node_id (what ControllerPublish must be sent). */
  externalNodeId: string;
  /** Node instances: NodeGetInfo.max_volumes_per_node; 0 = no limit. */
  maxVolumes: number;
  /** Node instances: NodeGetInfo.accessible_topology. */
  topology?: Topology;
  updatedAt: number;
}

/** An allocation that runs (part of) a plugin. */
export interface CsiPluginAllocation {
  allocId: string;
  nodeId: string;
  jobId: string;
  namespace: string;
  type: 'controller' | 'node' | 'monolith';
  desiredStatus: string;
  clientStatus: string;
}

/** A node on which the plugin recently said it can take no more volumes (RESOURCE_EXHAUSTED). */
export interface CsiPluginExhaustion {
  /** Milliseconds since the epoch (server clock). */
  at: number;
  reason: string;
}

export interface CsiPlugin {
  id: string;
  provider: string;
  version: string;
  /** True when a controller advertises PUBLISH_UNPUBLISH_VOLUME: claims need ControllerPublish. */
  controllerRequired: boolean;
  /** Union of the controller instances' capabilities. */
  controllerCapabilities: ControllerCapability[];
  /** Union of the node instances' capabilities. */
  nodeCapabilities: NodeCapability[];
  /** By Berth node ID. */
  controllers: Record<string, CsiPluginInstance>;
  nodes: Record<string, CsiPluginInstance>;
  controllersHealthy: number;
  /** From the desired counts of the jobs that run the plugin (system jobs: their live allocations). */
  controllersExpected: number;
  nodesHealthy: number;
  nodesExpected: number;
  allocations: CsiPluginAllocation[];
  /**
   * Nodes where ControllerPublish recently failed with RESOURCE_EXHAUSTED.
   * Placement treats them as full for this plugin until a claim there is
   * released or the node re-registers. Kept across recomputation.
   */
  exhaustedNodes: Record<string, CsiPluginExhaustion>;
  createIndex: number;
  modifyIndex: number;
}

/**
 * Whether a volume of `plugin` may be placed on `nodeId`, given how many of
 * the plugin's volumes that node already has claimed (`claimedOnNode`):
 * a healthy node instance, under max_volumes_per_node, not marked
 * exhausted. `reason` reads in placement's words ("lacked a healthy node
 * plugin for X"). Pure. docs/csi-rules.md scenario 10.
 */
export function csiNodeEligibility(
  plugin: CsiPlugin | undefined,
  nodeId: string,
  claimedOnNode: number,
): { eligible: true } | { eligible: false; reason: string } {
  if (!plugin) return { eligible: false, reason: 'lacked the CSI plugin' };
  const inst = plugin.nodes[nodeId];
  if (!inst || !inst.healthy) return { eligible: false, reason: `lacked a healthy node plugin for ${plugin.id}` };
  if (plugin.exhaustedNodes[nodeId]) return { eligible: false, reason: `reached the volume limit of ${plugin.id}` };
  if (inst.maxVolumes > 0 && claimedOnNode >= inst.maxVolumes) {
    return { eligible: false, reason: `reached max volumes (${inst.maxVolumes}) of ${plugin.id}` };
  }
  return { eligible: true };
}

/**
 * Whether volumes of the plugin can be used at all: a healthy node instance
 * exists, and a healthy controller when claims need ControllerPublish.
 */
export function pluginSchedulable(plugin: CsiPlugin | undefined): boolean {
  if (!plugin || plugin.nodesHealthy === 0) return false;
  return !plugin.controllerRequired || plugin.controllersHealthy > 0;
}
