// Valid rows of the server's tables for volume and claim tests: every
// required field set, overridable. Test and benchmark use only.

import type { AccessMode, AttachmentMode } from '../../src/csi/index.js';
import type { Allocation, CsiPlugin, CsiPluginInstance, Node, Volume, VolumeClaim } from '../../src/structs/index.js';
import type { RowInput } from '../../src/server/state/index.js';

/** Volume `data` of plugin `fake` (external ID `ext-data`), offering one capability. */
export function testVolume(accessMode: AccessMode = 'single-node-writer', attachmentMode: AttachmentMode = 'file-system', extra: Partial<Volume> = {}): Volume {
  return {
    id: 'data',
    namespace: 'default',
    name: 'data',
    externalId: 'ext-data',
    pluginId: 'fake',
    provider: 'fake.csi',
    capacityMinBytes: 0,
    capacityMaxBytes: 0,
    capacityBytes: 0,
    capabilities: [{ accessMode, attachmentMode }],
    mountOptions: { fsType: '', mountFlags: [] },
    secrets: {},
    parameters: {},
    context: {},
    accessibleTopology: [],
    createIndex: 1,
    modifyIndex: 1,
    ...extra,
  };
}

/** A running allocation of job `job`, group `g`, on `nodeId`. */
export function testAllocation(id: string, nodeId: string, extra: Partial<Allocation> = {}): Allocation {
  return {
    id,
    namespace: 'default',
    jobId: 'job',
    jobVersion: 1,
    taskGroup: 'g',
    nodeId,
    desiredStatus: 'run',
    desiredDescription: '',
    clientStatus: 'running',
    clientDescription: '',
    taskStates: {},
    rescheduleAttempts: 0,
    createIndex: 1,
    modifyIndex: 1,
    createTime: 0,
    modifyTime: 0,
    ...extra,
  };
}

function instance(nodeId: string, extra: Partial<CsiPluginInstance> = {}): CsiPluginInstance {
  return { nodeId, allocId: `plugin-${nodeId}`, healthy: true, healthReason: '', provider: 'fake.csi', version: '1', externalNodeId: `ext-${nodeId}`, maxVolumes: 0, updatedAt: 0, ...extra };
}

/**
 * Plugin `fake` with a healthy node instance on each of `nodes` (default n1
 * and n2; external node IDs `ext-<node>`); `controller: true` adds a healthy
 * controller on c1 and makes claims need ControllerPublish.
 */
export function testPlugin(opts: { controller?: boolean; nodes?: Record<string, Partial<CsiPluginInstance>>; extra?: Partial<CsiPlugin> } = {}): CsiPlugin {
  const nodes = Object.fromEntries(Object.entries(opts.nodes ?? { n1: {}, n2: {} }).map(([id, extra]) => [id, instance(id, extra)]));
  const controllers: Record<string, CsiPluginInstance> = opts.controller ? { c1: instance('c1') } : {};
  return {
    id: 'fake',
    provider: 'fake.csi',
    version: '1',
    controllerRequired: opts.controller === true,
    controllerCapabilities: opts.controller ? ['PUBLISH_UNPUBLISH_VOLUME'] : [],
    nodeCapabilities: [],
    controllers,
    nodes,
    controllersHealthy: Object.keys(controllers).length,
    controllersExpected: Object.keys(controllers).length,
    nodesHealthy: Object.values(nodes).filter((n) => n.healthy).length,
    nodesExpected: Object.keys(nodes).length,
    allocations: [],
    exhaustedNodes: {},
    createIndex: 1,
    modifyIndex: 1,
    ...opts.extra,
  };
}

/** A taken write claim of volume `data` (plugin `fake`) by `allocId` on `nodeId`, as the server writes it. */
export function testClaim(allocId: string, nodeId: string, extra: Partial<VolumeClaim> = {}): VolumeClaim {
  return {
    namespace: 'default',
    volumeId: 'data',
    allocId,
    pluginId: 'fake',
    externalVolumeId: 'ext-data',
    nodeId,
    externalNodeId: `ext-${nodeId}`,
    mode: 'write',
    accessMode: 'single-node-writer',
    attachmentMode: 'file-system',
    state: 'taken',
    controllerPublish: 'none',
    publishContext: {},
    releaseReason: '',
    releaseAttempts: 0,
    lastError: '',
    claimTime: 0,
    createIndex: 1,
    modifyIndex: 1,
    ...extra,
  };
}

/** A node fingerprint (what a node registers with) with the exec driver and, optionally, CSI plugin reports. */
export function testFingerprint(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    datacenter: 'dc1',
    httpAddr: '',
    drivers: { exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host', 'none'] } },
    resources: { cpuMhz: 4000, memoryMb: 4096 },
    attributes: {},
    csiControllerPlugins: {},
    csiNodePlugins: {},
    ...extra,
  };
}

/** A node row as a store takes it (no indexes): ready, no drivers, no plugins, no attributes; `extra` over it. */
export function testNodeRow(id: string, extra: Partial<RowInput<'nodes'>> = {}): RowInput<'nodes'> {
  return {
    id,
    name: id,
    datacenter: 'dc1',
    httpAddr: '',
    drivers: {},
    resources: { cpuMhz: 1000, memoryMb: 1024 },
    attributes: {},
    csiControllerPlugins: {},
    csiNodePlugins: {},
    status: 'ready',
    statusDescription: '',
    lastHeartbeat: 0,
    ...extra,
  } satisfies Omit<Node, 'createIndex' | 'modifyIndex'>;
}
