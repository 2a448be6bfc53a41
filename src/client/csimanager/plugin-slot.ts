// A slot of the CSI manager: the instance serving one (type, plugin name) on
// this node, and the one it replaces until the new one is healthy; and what
// the node is told of a slot, read from its instances: the plugin's report
// (for the node's fingerprint) and the details of its node events. Pure
// reads; the CSI manager (csi-manager.ts) keeps the table of slots, follows
// the registry and acts on changes.

import type { CsiPluginReport, CsiPluginType } from '../../structs/index.js';
import type { InstanceManager } from './instance-manager.js';

/** The instances of one (type, plugin name) on this node. */
export interface Slot {
  type: CsiPluginType;
  name: string;
  /** The instance of the serving registration. */
  current: InstanceManager;
  /** The instance it replaced, still serving until `current` is healthy. */
  previous: InstanceManager | undefined;
  /** The last report pushed, without its time, to push only changes. */
  lastReport: string;
}

/** A slot's key in the manager's table. */
export const slotKey = (type: CsiPluginType, name: string): string => `${type}/${name}`;

/** The instance that serves a slot now: the current one, unless only the one it replaces is healthy. */
export function servingInstance(slot: Slot): InstanceManager {
  if (!slot.current.healthy && slot.previous?.healthy) return slot.previous;
  return slot.current;
}

/** The plugin's report for the node's fingerprint, from the instance serving it now, stamped `now`. Pure. */
export function pluginReport(slot: Slot, now: number): CsiPluginReport {
  const instance = servingInstance(slot);
  const fp = instance.fingerprint;
  const report: CsiPluginReport = {
    pluginId: slot.name,
    type: slot.type,
    allocId: instance.plugin.allocId,
    healthy: instance.healthy,
    healthReason: instance.healthReason,
    provider: fp?.info.name ?? '',
    version: fp?.info.vendorVersion ?? '',
    updatedAt: now,
  };
  if (fp) report.fingerprint = fp;
  return report;
}

/** The fields of a node event about `instance` of the slot's plugin: its health, and its provider once fingerprinted. Pure. */
export function eventDetails(slot: Slot, instance: InstanceManager): Record<string, string> {
  const fp = instance.fingerprint;
  const details: Record<string, string> = {
    plugin: slot.name,
    type: slot.type,
    allocId: instance.plugin.allocId,
    healthy: String(instance.healthy),
    reason: instance.healthReason,
  };
  if (fp) {
    details['provider'] = fp.info.name;
    details['version'] = fp.info.vendorVersion;
  }
  return details;
}
