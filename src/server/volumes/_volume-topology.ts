import type { Topology } from '../../csi/index.js';
import type { Volume } from '../../structs/index.js';

/**
 * Where a volume lives, for choosing its controller: what the plugin said
 * when it created the volume, else the topology it was registered or asked
 * for. Empty means anywhere. Pure.
 */
export function whereItLives(v: Pick<Volume, 'accessibleTopology' | 'topologyRequest'>): Topology[] {
  if (v.accessibleTopology.length > 0) return v.accessibleTopology;
  return [...(v.topologyRequest?.required ?? []), ...(v.topologyRequest?.preferred ?? [])];
}
