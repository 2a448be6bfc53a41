// Test fixtures for the scheduler's tests and the placement benchmark: nodes as a fingerprint makes them, and dynamic host volumes.
import type { HostVolume, Node } from '../../src/structs/index.js';

/** A ready node with the exec driver (host and none networks), 1000 MHz / 1000 MB, and optionally a CSI node plugin. */
export function testNode(id: string, opts: Partial<Node> & { plugin?: { id: string; healthy?: boolean; max?: number; zone?: string } } = {}): Node {
  const { plugin, ...rest } = opts;
  const csiNodePlugins: Node['csiNodePlugins'] = {};
  if (plugin) {
    csiNodePlugins[plugin.id] = {
      pluginId: plugin.id,
      type: 'csi-node',
      allocId: 'plugin-alloc',
      healthy: plugin.healthy ?? true,
      healthReason: '',
      provider: 'hostpath.csi.berth.dev',
      version: '1',
      updatedAt: 0,
      fingerprint: {
        info: { name: 'hostpath.csi.berth.dev', vendorVersion: '1', manifest: {} },
        capabilities: { services: [], volumeExpansion: [] },
        node: {
          capabilities: [],
          info: { nodeId: `ext-${id}`, maxVolumesPerNode: plugin.max ?? 0, accessibleTopology: { zone: plugin.zone ?? 'z1' } },
        },
      },
    };
  }
  return {
    id,
    name: id,
    datacenter: 'dc1',
    httpAddr: '',
    drivers: { exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host', 'none'] } },
    resources: { cpuMhz: 1000, memoryMb: 1000 },
    attributes: {},
    csiControllerPlugins: {},
    csiNodePlugins,
    status: 'ready',
    statusDescription: '',
    lastHeartbeat: 0,
    createIndex: 1,
    modifyIndex: 1,
    ...rest,
  };
}

/** A ready dynamic host volume named `data` on `nodeId`, as the scheduler tests place against. */
export function testHostVolume(id: string, nodeId: string, accessMode: HostVolume['requestedCapabilities'][number]['accessMode'] = 'single-node-writer'): HostVolume {
  return {
    namespace: 'default',
    id,
    name: 'data',
    pluginId: 'mkdir',
    nodeId,
    nodePool: 'default',
    constraints: [],
    requestedCapacityMinBytes: 0,
    requestedCapacityMaxBytes: 0,
    capacityBytes: 0,
    requestedCapabilities: [{ accessMode, attachmentMode: 'file-system' }],
    parameters: {},
    hostPath: `/v/${id}`,
    state: 'ready',
    createTime: 0,
    modifyTime: 0,
    createIndex: 1,
    modifyIndex: 1,
  };
}
