// What the rest of the client needs of the CSI manager to use volumes, named
// as Nomad's client/pluginmanager/csimanager Manager interface names it:
// wait for a node plugin, then get its volume manager. CsiManager has both;
// callers depend on this, so a fake can stand in.

import type { MountableVolume, MountVolumeOptions, UnmountReport, VolumeUsage } from '../volumes/index.js';

/** What an allocation needs of a node plugin's volume manager (Nomad's csimanager.VolumeManager). */
export interface VolumeMounter {
  /** See VolumeManager.mountVolume. */
  mountVolume(volume: MountableVolume, allocId: string, usage: VolumeUsage, opts?: MountVolumeOptions): Promise<{ source: string }>;
  /** See VolumeManager.unmountVolume. */
  unmountVolume(volume: MountableVolume, allocId: string, usage: VolumeUsage, opts?: { signal?: AbortSignal; force?: boolean }): Promise<UnmountReport>;
}

export interface PluginWaitOptions {
  signal?: AbortSignal;
  /**
   * Called once, synchronously from waitForPlugin, when the plugin is not
   * ready at the time of the call and the wait begins; never when it is
   * ready at once. Must not throw.
   */
  onWaiting?: () => void;
}

/** The node plugins' volume managers, by plugin ID (Nomad's csimanager.Manager). */
export interface VolumeManagers {
  /**
   * Resolves once node plugin `pluginId` has an instance that fingerprinted
   * (Nomad's WaitForPlugin); waits for a plugin not registered yet too.
   * Rejects with AbortedError when `signal` fires, CsiManagerError
   * CSI_MANAGER_STOPPED when the manager stops. The plugin may be unhealthy
   * again by the time it is used.
   */
  waitForPlugin(pluginId: string, opts?: PluginWaitOptions): Promise<void>;
  /**
   * The volume manager of node plugin `pluginId` when it can serve now
   * (Nomad's ManagerForPlugin). Does not block. Throws CsiManagerError
   * CSI_PLUGIN_NOT_FOUND, CSI_PLUGIN_UNHEALTHY (also while its records are
   * still loading), CSI_PLUGIN_MISCONFIGURED.
   */
  volumeManagerFor(pluginId: string): VolumeMounter;
}
