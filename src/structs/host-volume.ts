// Nomad's dynamic host volumes (Nomad 1.10): node-local volumes a host
// volume plugin on the node creates (`volume create`) or an operator points
// at an existing path (`volume register`). The server keeps one row per
// volume; the node reports the ones it holds in its fingerprint, as it
// reports its static `host_volume` blocks, so the scheduler sees both.

/** Nomad's HostVolumeAccessModes: how allocations on the volume's node may share it. */
export const HOST_VOLUME_ACCESS_MODES = ['single-node-reader-only', 'single-node-writer', 'single-node-single-writer', 'single-node-multi-writer'] as const;
export type HostVolumeAccessMode = (typeof HOST_VOLUME_ACCESS_MODES)[number];

/** Nomad's HostVolumeAttachmentModes. */
export const HOST_VOLUME_ATTACHMENT_MODES = ['file-system', 'block-device'] as const;
export type HostVolumeAttachmentMode = (typeof HOST_VOLUME_ATTACHMENT_MODES)[number];

/** The plugin built into every node: a directory under the node's host volumes dir (Nomad's `mkdir`). */
export const MKDIR_PLUGIN_ID = 'mkdir';
/** The version the built-in `mkdir` plugin reports, as Nomad's does. */
export const MKDIR_PLUGIN_VERSION = '0.0.1';

/** The node attribute a host volume plugin's fingerprint sets (Nomad's `plugins.host_volume.<id>.version`). */
export const hostVolumePluginAttribute = (pluginId: string): string => `plugins.host_volume.${pluginId}.version`;

export interface HostVolumeCapability {
  accessMode: HostVolumeAccessMode;
  attachmentMode: HostVolumeAttachmentMode;
}

/** Nomad's HostVolumeState; `unavailable`: its node no longer reports it (a failed restore) or is down. */
export type HostVolumeState = 'pending' | 'ready' | 'unavailable';

/** A placement constraint, as jobs write them (`${attr.x}`, `=`, `value`). */
export interface HostVolumeConstraint {
  attribute: string;
  operator: string;
  value: string;
}

/** A dynamic host volume as the server stores it (Nomad's structs.HostVolume). */
export interface HostVolume {
  namespace: string;
  /** A UUID the server generates. */
  id: string;
  /** What a group's `volume { type = "host" source = "<name>" }` names; unique per node. */
  name: string;
  /** The plugin that made it (`mkdir` or an external plugin); '' for a registered volume. */
  pluginId: string;
  nodeId: string;
  nodePool: string;
  constraints: HostVolumeConstraint[];
  requestedCapacityMinBytes: number;
  requestedCapacityMaxBytes: number;
  /** What the plugin answered (`bytes`); 0 for `mkdir`. */
  capacityBytes: number;
  requestedCapabilities: HostVolumeCapability[];
  parameters: Record<string, string>;
  /** The path on the node (the plugin's `path`, or the registered one). */
  hostPath: string;
  /** As last written: pending until its node first reported it, then ready (see hostVolumeState for now). */
  state: HostVolumeState;
  /** Nanoseconds since the epoch, as Nomad's. */
  createTime: number;
  modifyTime: number;
  createIndex: number;
  modifyIndex: number;
}

/**
 * A sticky claim (Nomad's TaskGroupHostVolumeClaim): the first allocation of
 * a group with `sticky = true` on a dynamic host volume binds the group to
 * that volume; later placements of the group go only where it is.
 */
export interface HostVolumeClaim {
  /** namespace + job + group + volume make it unique. */
  id: string;
  namespace: string;
  jobId: string;
  taskGroup: string;
  allocId: string;
  volumeId: string;
  volumeName: string;
  createIndex: number;
  modifyIndex: number;
}

/** A host volume a node reports: its static `host_volume` blocks (id '') and its dynamic ones. */
export interface NodeHostVolume {
  path: string;
  readOnly: boolean;
  /** The dynamic host volume's ID; '' for a static one. */
  id: string;
}

/**
 * The volume's state as its node shows it now (Nomad's upsertHostVolumeForNode,
 * worked out at read time from the stored state): ready while the node is up
 * and reports the volume with this ID, pending until it first does,
 * unavailable once it stopped reporting it (a failed restore) or went down.
 * Pure.
 */
export function hostVolumeState(vol: Pick<HostVolume, 'id' | 'name' | 'state'>, node: { status: string; hostVolumes?: Record<string, NodeHostVolume> | undefined } | undefined): HostVolumeState {
  const reported = node?.hostVolumes?.[vol.name]?.id === vol.id;
  if (!node || node.status === 'down') return vol.state === 'pending' && !reported ? 'pending' : 'unavailable';
  if (reported) return node.status === 'ready' ? 'ready' : vol.state;
  return vol.state === 'pending' ? 'pending' : 'unavailable';
}

/**
 * The access mode a group's request asks of a host volume: its own, or (left
 * at the job default) reader-only for a read-only request and writer
 * otherwise, as Nomad's scheduler picks it.
 */
export function requestedHostAccess(accessMode: string | undefined, readOnly: boolean): string {
  if (!accessMode || (accessMode === 'single-node-writer' && readOnly)) return readOnly ? 'single-node-reader-only' : 'single-node-writer';
  return accessMode;
}
