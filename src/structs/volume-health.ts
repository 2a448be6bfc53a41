// Volume health and drift as client, server, API and UI share them: the
// usage and condition a node (NodeGetVolumeStats) or a controller
// (ControllerGetVolume) reports for a volume, and the differences `berth
// volume doctor` finds between Berth's books and what plugins and kernels say.

/** One unit's figures of NodeGetVolumeStats: bytes or inodes. */
export interface UsageFigures {
  available: number;
  total: number;
  used: number;
}

/** A volume's condition (CSI VOLUME_CONDITION): abnormal, and the plugin's words. */
export interface VolumeConditionReport {
  abnormal: boolean;
  message: string;
}

/**
 * What a node agent sends for one published volume after one
 * NodeGetVolumeStats: usage when the plugin gave it, condition when it has
 * VOLUME_CONDITION. `reportedAt` is the node's clock, ms since the epoch.
 */
export interface VolumeStatsReport {
  namespace: string;
  /** Berth's volume ID. */
  volumeId: string;
  pluginId: string;
  bytes?: UsageFigures;
  inodes?: UsageFigures;
  condition?: VolumeConditionReport;
  /** The allocations on the node using the volume (for the task events of an abnormal condition). */
  allocIds: string[];
  reportedAt: number;
}

/** The latest usage of a volume on one node, as `GET /v1/volume/csi/:id` carries it. */
export interface NodeVolumeUsage {
  nodeId: string;
  bytes?: UsageFigures;
  inodes?: UsageFigures;
  /** The node's clock, ms since the epoch. */
  reportedAt: number;
}

/** One point of a volume's usage history (`GET /v1/volume/csi/:id/usage`). */
export interface VolumeUsageSample {
  at: number;
  nodeId: string;
  bytesUsed?: number;
  bytesTotal?: number;
  inodesUsed?: number;
  inodesTotal?: number;
}

/** One source's last word on a volume's condition. */
export interface SourcedCondition extends VolumeConditionReport {
  source: 'node' | 'controller';
  /** The node that reported it (for a controller, the node running the controller instance). */
  nodeId: string;
  reportedAt: number;
}

/**
 * The `volumeConditions` table: a volume's condition as its plugin last
 * reported it, one row per volume, written only when it changes (so each
 * write is an event). `abnormal` is true when any source says so;
 * `message` is the first abnormal source's message (or the last normal one).
 */
export interface VolumeConditionRow {
  namespace: string;
  volumeId: string;
  pluginId: string;
  abnormal: boolean;
  message: string;
  /** By `node:<node ID>` or `controller`. */
  sources: Record<string, SourcedCondition>;
  createIndex: number;
  modifyIndex: number;
}

/** The kinds of difference `berth volume doctor` reports. */
export type DriftKind =
  /** A claim row whose allocation is gone or finished, and whose release has not finished. */
  | 'claim-without-allocation'
  /** The controller still reports the volume published to a node where Berth holds no claim. */
  | 'stale-controller-publication'
  /** A staging or publish mount under a node's CSI directory that no record of the node names. */
  | 'mount-without-record'
  /** A node's staging or publish record whose path is not mounted. */
  | 'record-without-mount'
  /** A volume the plugin's controller lists that no Berth volume registers. */
  | 'unknown-plugin-volume'
  /** A plugin the doctor could not ask (not running on a node that holds its volumes, or no controller): what it would have said was not checked. */
  | 'plugin-not-checked';

export const DRIFT_KINDS: readonly DriftKind[] = [
  'claim-without-allocation',
  'stale-controller-publication',
  'mount-without-record',
  'record-without-mount',
  'unknown-plugin-volume',
  'plugin-not-checked',
];

/** One difference between Berth's books and what a plugin or a node's kernel says. */
export interface DriftFinding {
  kind: DriftKind;
  pluginId: string;
  namespace?: string;
  /** Berth's volume ID, when the difference is about a known volume. */
  volumeId?: string;
  /** The plugin's volume ID. */
  externalVolumeId?: string;
  /** Berth's node ID. */
  nodeId?: string;
  /** The plugin's node ID (what ControllerPublish named). */
  externalNodeId?: string;
  allocId?: string;
  /** A host path on the node (mount or record). */
  path?: string;
  /** What is wrong, in an operator's words. */
  message: string;
  /** The command that repairs it. */
  repair: string;
  /** Whether `berth volume doctor --fix` repairs it (only what is safe). */
  fixable: boolean;
}

/** A source the doctor could not ask (a node not connected, a controller that failed). */
export interface DriftCheckError {
  /** `plugin <id>` or `node <id>`. */
  source: string;
  message: string;
}

/** What one run of the doctor found (and, with --fix, what it repaired). */
export interface DriftReport {
  /** Server clock, ms since the epoch. */
  checkedAt: number;
  /** Volume scope when the run was for one volume. */
  namespace?: string;
  volumeId?: string;
  findings: DriftFinding[];
  errors: DriftCheckError[];
  /** With --fix: the findings repaired, and those whose repair failed (with why). */
  fixed?: DriftFinding[];
  fixFailed?: Array<{ finding: DriftFinding; error: string }>;
}

/** The `drift` table: the leader loop's latest report, one row with id `latest`. */
export interface DriftRow extends DriftReport {
  id: string;
  createIndex: number;
  modifyIndex: number;
}

/** A record of a node's staging or publication, with whether its path is mounted (node RPC `csi.node.inventory`). */
export interface NodeMountRecord {
  kind: 'stage' | 'publish';
  pluginId: string;
  namespace: string;
  volumeId: string;
  externalId: string;
  allocId?: string;
  /** Host path. */
  path: string;
  /** The record's last step: done, pending or uncertain. */
  state: string;
  mounted: boolean;
}

/** What a node reports of its CSI mounts: its records, and mounts under its plugins' directories with no record. */
export interface NodeMountInventory {
  records: NodeMountRecord[];
  strayMounts: Array<{ pluginId: string; path: string }>;
}
