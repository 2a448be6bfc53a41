// The rows a volume operation starts from, each with the refusal its caller
// sees when it is missing or cannot serve: the volume (NOT_FOUND), its plugin
// (INVALID: no node runs it) and a controller of the plugin that can do what
// is asked. Shared by the volume registry (volume-registry.ts) and the
// plugin's snapshots (plugin-snapshots.ts). Private to src/server/volumes.

import type { CsiPluginRow, Volume } from '../../structs/index.js';
import { rowKey, type StateStore } from '../state/index.js';
import { VolumeError } from './errors.js';

/** The volume's row; NOT_FOUND when it does not exist. */
export function volumeRow(store: StateStore, namespace: string, id: string): Volume {
  const v = store.snapshot().get('volumes', rowKey(namespace, id));
  if (!v) throw new VolumeError('NOT_FOUND', `volume ${id} does not exist in namespace ${namespace}`);
  return v;
}

/** The plugin's row; INVALID (naming `pluginId`) when no node runs it. */
export function pluginRow(store: StateStore, pluginId: string): CsiPluginRow {
  const plugin = store.snapshot().get('plugins', rowKey(pluginId));
  if (!plugin) throw new VolumeError('INVALID', `unknown plugin "${pluginId}": no node runs it`, { field: 'pluginId' });
  return plugin;
}

/**
 * Throws unless the plugin's controller can do `what`: UNAVAILABLE
 * (retryable) when no controller instance of it runs at all (there is
 * nobody to ask which capabilities it has), INVALID when its controller
 * does not advertise `capability`.
 */
export function needController(plugin: CsiPluginRow, capability: string, what: string): void {
  if (Object.keys(plugin.controllers).length === 0) {
    throw new VolumeError('UNAVAILABLE', `plugin ${plugin.id} has no running controller; it cannot ${what} until one runs`, { retryable: true, field: 'pluginId' });
  }
  if (!plugin.controllerCapabilities.includes(capability as never)) {
    throw new VolumeError('INVALID', `plugin ${plugin.id} cannot ${what} (its controller does not advertise ${capability})`, { field: 'pluginId' });
  }
}
