// CSI plugins as the server derives them from what nodes report and from the
// jobs that run them. Never written by users: recomputed whenever a node or
// an allocation changes.

import type { ControllerCapability, NodeCapability, Topology } from '../csi/index.js';
import type { CsiPluginReport } from './csi-plugin-report.js';
import type { Node } from './node.js';

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
  /** By Berth node ID. Not stored: derived from the node rows when read (see CsiPluginRow). */
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
 * A plugin as the state store keeps it: everything but its node instances.
 * Those are derived from the node rows when read (csiPluginInstance), so
 * that a node's registration writes a row of constant size (the counts),
 * not one that lists every node: with the node map stored, 5,000 nodes
 * registering wrote O(n²) bytes and the row passed etcd's request limit
 * near 4,400 nodes. Controllers are few and stay in the row.
 */
export type CsiPluginRow = Omit<CsiPlugin, 'nodes'>;

/**
 * The instance of plugin `pluginId` that `node` runs (`kind`), as the
 * plugin row would list it, or undefined when the node does not report
 * it. Pure; cheap.
 */
export function csiPluginInstance(node: Node | undefined, pluginId: string, kind: 'controller' | 'node'): CsiPluginInstance | undefined {
  const rep = kind === 'node' ? node?.csiNodePlugins[pluginId] : node?.csiControllerPlugins[pluginId];
  return node && rep ? instanceOf(node, rep, kind) : undefined;
}

/** A node's report of a plugin -> the instance the plugin lists (unhealthy while the node is down). Pure. */
export function instanceOf(node: Pick<Node, 'id' | 'status'>, rep: CsiPluginReport, kind: 'controller' | 'node'): CsiPluginInstance {
  const nodeDown = node.status === 'down';
  const info = rep.fingerprint?.node?.info;
  return {
    nodeId: node.id,
    allocId: rep.allocId,
    healthy: rep.healthy && !nodeDown,
    healthReason: nodeDown ? `node ${node.id} is down` : rep.healthReason,
    provider: rep.provider,
    version: rep.version,
    externalNodeId: kind === 'node' ? (info?.nodeId ?? '') : '',
    maxVolumes: kind === 'node' ? (info?.maxVolumesPerNode ?? 0) : 0,
    ...(kind === 'node' && info?.accessibleTopology ? { topology: info.accessibleTopology } : {}),
    updatedAt: rep.updatedAt,
  };
}

/**
 * The stored row with its node instances, from `nodes` (every node row, in
 * any order; listed by node ID). O(nodes): for reads that show the whole
 * plugin, not for placement.
 */
export function withNodeInstances(row: CsiPluginRow, nodes: Iterable<Node>): CsiPlugin {
  const found: CsiPluginInstance[] = [];
  for (const n of nodes) {
    const rep = n.csiNodePlugins[row.id];
    if (rep) found.push(instanceOf(n, rep, 'node'));
  }
  found.sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
  const { createIndex, modifyIndex, ...rest } = row;
  return { ...rest, nodes: Object.fromEntries(found.map((i) => [i.nodeId, i])), createIndex, modifyIndex };
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
export function pluginSchedulable(plugin: CsiPluginRow | undefined): boolean {
  if (!plugin || plugin.nodesHealthy === 0) return false;
  return !plugin.controllerRequired || plugin.controllersHealthy > 0;
}
