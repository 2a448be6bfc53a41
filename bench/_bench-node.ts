// The node both claim benchmarks register: one healthy node plugin "bench"
// with STAGE_UNSTAGE_VOLUME and no controller.
import type { NodeFingerprint } from '../src/structs/index.js';

export function benchNodeFingerprint(): NodeFingerprint {
  return {
    name: 'bench-node',
    datacenter: 'dc1',
    httpAddr: '',
    drivers: {},
    resources: { cpuMhz: 4000, memoryMb: 8192 },
    attributes: {},
    csiControllerPlugins: {},
    csiNodePlugins: {
      bench: {
        pluginId: 'bench',
        type: 'csi-node',
        allocId: 'plugin-alloc',
        healthy: true,
        healthReason: 'healthy',
        provider: 'bench.csi.berth.dev',
        version: '1.0.0',
        fingerprint: {
          info: { name: 'bench.csi.berth.dev', vendorVersion: '1.0.0', manifest: {} },
          capabilities: { services: [], volumeExpansion: [] },
          node: { capabilities: ['STAGE_UNSTAGE_VOLUME'], info: { nodeId: 'ext-bench', maxVolumesPerNode: 0 } },
        },
        updatedAt: 0,
      },
    },
  };
}
