// The latest usage every node reported for each volume, and a short history
// of it for the UI's chart. Kept in the memory of the server that receives
// the nodes' reports (the leader: nodes' writes are forwarded to it), never
// in the state store: usage changes every minute for every volume, and a
// store write (an event, an index) for each would drown the history that
// the event stream and blocking reads depend on. A new leader starts empty
// and is filled again within one stats interval.

import type { NodeVolumeUsage, VolumeStatsReport, VolumeUsageSample } from '../../structs/index.js';
import { rowKey } from '../state/index.js';

/** Samples kept per volume (all nodes together), oldest dropped first. */
export const DEFAULT_USAGE_HISTORY = 60;

interface VolumeEntry {
  pluginId: string;
  byNode: Map<string, NodeVolumeUsage>;
  /** A ring: `next` is where the next sample goes once it is full. */
  samples: VolumeUsageSample[];
  next: number;
}

/**
 * Latest usage per (volume, node) and a bounded ring of samples per volume.
 * Synchronous, never blocks, never throws. Memory is bounded by the volumes
 * reported: `retain` drops the ones that no longer exist.
 */
export class VolumeUsageBook {
  readonly #historySize: number;
  readonly #volumes = new Map<string, VolumeEntry>();

  constructor(opts: { historySize?: number } = {}) {
    this.#historySize = Math.max(1, opts.historySize ?? DEFAULT_USAGE_HISTORY);
  }

  /**
   * Records one node's report. A report without usage figures (the plugin
   * answered, but could measure nothing: a volume whose directory vanished
   * reports only its abnormal condition) forgets that node's last figures,
   * so the gauges and `volume status` stop showing values that are no longer
   * true; the history keeps what was measured.
   */
  record(nodeId: string, r: VolumeStatsReport): void {
    if (!r.bytes && !r.inodes) {
      this.forgetNode(r.namespace, r.volumeId, nodeId);
      return;
    }
    const key = rowKey(r.namespace, r.volumeId);
    let entry = this.#volumes.get(key);
    if (!entry) {
      entry = { pluginId: r.pluginId, byNode: new Map(), samples: [], next: 0 };
      this.#volumes.set(key, entry);
    }
    entry.pluginId = r.pluginId;
    const usage: NodeVolumeUsage = { nodeId, reportedAt: r.reportedAt, ...(r.bytes ? { bytes: r.bytes } : {}), ...(r.inodes ? { inodes: r.inodes } : {}) };
    entry.byNode.set(nodeId, usage);
    const sample: VolumeUsageSample = {
      at: r.reportedAt,
      nodeId,
      ...(r.bytes ? { bytesUsed: r.bytes.used, bytesTotal: r.bytes.total } : {}),
      ...(r.inodes ? { inodesUsed: r.inodes.used, inodesTotal: r.inodes.total } : {}),
    };
    if (entry.samples.length < this.#historySize) entry.samples.push(sample);
    else {
      entry.samples[entry.next] = sample;
      entry.next = (entry.next + 1) % this.#historySize;
    }
  }

  /** The latest usage on each node that reported the volume, by node ID. */
  latest(namespace: string, volumeId: string): NodeVolumeUsage[] {
    const entry = this.#volumes.get(rowKey(namespace, volumeId));
    return entry ? [...entry.byNode.values()].sort((a, b) => a.nodeId.localeCompare(b.nodeId)) : [];
  }

  /** The kept samples of the volume, oldest first. */
  history(namespace: string, volumeId: string): VolumeUsageSample[] {
    const entry = this.#volumes.get(rowKey(namespace, volumeId));
    if (!entry) return [];
    return [...entry.samples.slice(entry.next), ...entry.samples.slice(0, entry.next)];
  }

  /** Forgets one node's usage of a volume (it no longer has it published). */
  forgetNode(namespace: string, volumeId: string, nodeId: string): void {
    this.#volumes.get(rowKey(namespace, volumeId))?.byNode.delete(nodeId);
  }

  /** Drops the volumes for which `exists` is false. */
  retain(exists: (namespace: string, volumeId: string) => boolean): void {
    for (const key of this.#volumes.keys()) {
      const [namespace, volumeId] = key.split('/').map(decodeURIComponent) as [string, string];
      if (!exists(namespace, volumeId)) this.#volumes.delete(key);
    }
  }

  /** Every volume's latest usage per node, for the metrics. */
  *entries(): Generator<{ namespace: string; volumeId: string; pluginId: string; usage: NodeVolumeUsage[] }> {
    for (const [key, entry] of this.#volumes) {
      const [namespace, volumeId] = key.split('/').map(decodeURIComponent) as [string, string];
      yield { namespace, volumeId, pluginId: entry.pluginId, usage: [...entry.byNode.values()] };
    }
  }
}
