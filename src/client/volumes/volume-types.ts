// The words the volume manager's callers use: the volume a call is about,
// the options of a mount, and what reconcile reports. Kept apart from the
// manager so the records, the step engine and reconcile share them without
// importing the manager.

import type { SecretMap } from '../../lib/index.js';
import type { AgentUnmount } from './agent-unmount.js';

/** The volume a call is about, as the node knows it. */
export interface MountableVolume {
  /** Berth's volume ID (unique in its namespace): names the paths and what reconcile is told. */
  id: string;
  /** Default 'default'. */
  namespace?: string;
  /** The plugin's volume_id (CSI "external ID"); default `id`. */
  externalId?: string;
  /** volume_context from CreateVolume or registration, passed to NodeStage and NodePublish. */
  volumeContext?: Record<string, string>;
}

export interface MountVolumeOptions {
  /** The publish_context ControllerPublish returned (opaque, kept and passed on). */
  publishContext?: Record<string, string>;
  /** Secrets for NodeStage and NodePublish. Never recorded or logged. */
  secrets?: SecretMap;
  signal?: AbortSignal;
}

/** One (volume, allocation) pair as reconcile reports it. */
export interface VolumeAllocPair {
  volumeId: string;
  allocId: string;
}

/** What reconcile did. */
export interface ReconcileReport {
  /** Wanted and intact: kept without calling the plugin. */
  kept: VolumeAllocPair[];
  /** Wanted and uncertain: published again from the records. */
  republished: VolumeAllocPair[];
  /**
   * Wanted and uncertain, but the step needs secrets or mount flags that are
   * never recorded: left in place for the caller's mountVolume to redo.
   */
  awaitingMount: VolumeAllocPair[];
  /** No longer wanted: unpublished (and unstaged when it was the last user). */
  tornDown: VolumeAllocPair[];
  /** Stagings without users that were unstaged. */
  unstaged: Array<{ volumeId: string; namespace: string }>;
  /** What failed (the record stays; a later reconcile or unmountVolume tries again). */
  failed: Array<{ volumeId: string; allocId?: string; code: string; message: string }>;
  /** Empty, unmounted directories left by earlier runs that were removed. */
  removedDirs: number;
}

/** What unmountVolume did beyond the plugin's calls: the paths the agent unmounted itself after the plugin refused (docs/csi-rules.md). */
export interface UnmountReport {
  unmountedByAgent: AgentUnmount[];
}
