// The volume manager's durable records, in the client state store. A record
// of a step is written before the plugin is called (state `pending`), and
// replaced by `done` or `uncertain`, or removed, once the plugin answered.
// After a crash the records alone say what may be mounted and what Berth
// owes the plugin (an Unpublish, an Unstage). Usage counts are the records
// themselves: the users of a staging are the publication records that name
// it, so a count can never drift from what is recorded.
//
// Nothing secret is ever written: no secrets (only whether there were any),
// no mount flags (only how many), no volume_context value under a key that
// looks like a credential.

import { looksSecret } from '../../lib/index.js';
import type { AccessMode, AttachmentMode } from '../../csi/index.js';
import type { NodeMountRecord } from '../../structs/index.js';
import type { Bucket, ClientStateStore } from '../state/index.js';
import { pathKey, type VolumeUsage } from './mount-paths.js';
import type { MountableVolume } from './volume-types.js';

/** Where a step stands. `pending`: written before the call, outcome not yet known. */
export type StepState = 'pending' | 'done' | 'uncertain';

/** The capability of a step, without the mount flags (which may hold credentials). */
export interface RecordedCapability {
  accessMode: AccessMode;
  attachmentMode: AttachmentMode;
  fsType: string;
  volumeMountGroup: string;
  mountFlagCount: number;
}

interface StepRecordBase {
  pluginId: string;
  namespace: string;
  /** Berth's volume ID: names the paths and what `reconcile` is told. */
  volumeId: string;
  /** The plugin's volume_id, sent in every call. */
  externalId: string;
  usageKey: string;
  readOnly: boolean;
  capability: RecordedCapability;
  publishContext: Record<string, string>;
  /** volume_context without the values of credential-looking keys. */
  volumeContext: Record<string, string>;
  /**
   * True when the step can be sent again from this record alone: it had no
   * secrets, no mount flags and no credential-looking context. Otherwise
   * only the caller (mountVolume) can redo it.
   */
  replayable: boolean;
  /** The step in progress or last done. */
  op: 'stage' | 'unstage' | 'publish' | 'unpublish';
  state: StepState;
  /** clock.now() of the last write. */
  updatedAt: number;
}

/** A staging of one volume for one usage on this node. */
export interface StageRecord extends StepRecordBase {
  op: 'stage' | 'unstage';
  stagingPath: string;
  pluginStagingPath: string;
}

/** A publication of one volume to one allocation. */
export interface PublishRecord extends StepRecordBase {
  op: 'publish' | 'unpublish';
  allocId: string;
  targetPath: string;
  pluginTargetPath: string;
  /** The key of the staging record it uses; absent when the plugin does not stage. */
  stageKey?: string;
}

/** The store buckets of the records. Private to this folder: others ask RecordedVolumes. */
export const STAGE_BUCKET = 'volume-stages';
export const PUBLISH_BUCKET = 'volume-publications';

/** Keeps only the context entries that may be written down, and says whether any was dropped. */
export function recordableContext(context: Record<string, string>): { context: Record<string, string>; dropped: boolean } {
  const kept: Record<string, string> = {};
  let dropped = false;
  for (const [k, v] of Object.entries(context)) {
    if (looksSecret(k)) dropped = true;
    else kept[k] = v;
  }
  return { context: kept, dropped };
}

/**
 * One plugin's records in the two buckets. Keys start with the plugin's
 * key, so several volume managers share one store without seeing each
 * other's records. Every write is durable when it returns (the store's
 * contract).
 */
export class VolumeRecords {
  readonly #stages: Bucket<StageRecord>;
  readonly #publications: Bucket<PublishRecord>;
  readonly #prefix: string;

  constructor(store: ClientStateStore, pluginId: string) {
    this.#stages = store.bucket<StageRecord>(STAGE_BUCKET);
    this.#publications = store.bucket<PublishRecord>(PUBLISH_BUCKET);
    this.#prefix = `${pathKey(pluginId, 'plugin ID')}/`;
  }

  stageKey(namespace: string, volumeId: string, usage: string): string {
    return `${this.#prefix}${pathKey(namespace, 'namespace')}/${pathKey(volumeId, 'volume ID')}/${usage}`;
  }

  /**
   * A publication's key starts with its staging's key, so the users of a
   * staging are one prefix scan away (`usersOf`).
   */
  publishKey(allocId: string, namespace: string, volumeId: string, usage: string): string {
    return `${this.stageKey(namespace, volumeId, usage)}/${pathKey(allocId, 'allocation ID')}`;
  }

  /** How many publications (in any state) use the staging under `stageKey`: its usage count. */
  usersOf(stageKey: string): number {
    return this.#publications.listPrefix(`${stageKey}/`).length;
  }

  getStage(key: string): StageRecord | undefined {
    return this.#stages.get(key);
  }

  getPublication(key: string): PublishRecord | undefined {
    return this.#publications.get(key);
  }

  putStage(key: string, rec: StageRecord): void {
    this.#stages.put(key, rec);
  }

  putPublication(key: string, rec: PublishRecord): void {
    this.#publications.put(key, rec);
  }

  deleteStage(key: string): void {
    this.#stages.delete(key);
  }

  deletePublication(key: string): void {
    this.#publications.delete(key);
  }

  stages(): Array<{ key: string; value: StageRecord }> {
    return this.#stages.listPrefix(this.#prefix);
  }

  publications(): Array<{ key: string; value: PublishRecord }> {
    return this.#publications.listPrefix(this.#prefix);
  }
}

/** The volume a record is about, in the terms mountVolume and unmountVolume take. */
export function volumeOfRecord(rec: PublishRecord | StageRecord): MountableVolume {
  return { id: rec.volumeId, namespace: rec.namespace, externalId: rec.externalId, volumeContext: rec.volumeContext };
}

/**
 * The usage a step was made with, rebuilt from its record: the same usage
 * key, hence the same paths. Without mount flags (never recorded).
 */
export function usageOfRecord(rec: PublishRecord | StageRecord): VolumeUsage {
  const { fsType, volumeMountGroup } = rec.capability;
  return {
    readOnly: rec.readOnly,
    accessMode: rec.capability.accessMode,
    attachmentMode: rec.capability.attachmentMode,
    ...(fsType || volumeMountGroup ? { mountOptions: { ...(fsType ? { fsType } : {}), ...(volumeMountGroup ? { volumeMountGroup } : {}) } } : {}),
  };
}

/** Which records a query is about; every field given must match. */
export interface RecordFilter {
  pluginId?: string;
  namespace?: string;
  /** Berth's volume ID. */
  volumeId?: string;
  /** Publications only. */
  allocId?: string;
}

/** A staging recorded on this node, as unmountVolume takes it. */
export interface RecordedStaging {
  pluginId: string;
  volume: MountableVolume;
  usage: VolumeUsage;
  /** Where its last step stands: `uncertain` (or `pending`) means a negation call may be owed. */
  state: StepState;
}

/** A publication recorded on this node, as unmountVolume and expand take it. */
export interface RecordedPublication extends RecordedStaging {
  allocId: string;
}

/**
 * Read-only questions about every volume manager's records on this node,
 * of any plugin, whether its volume manager runs or not (after a restart
 * the records are known before the plugins are). Answers what is durable at
 * the moment of the call; does not block, does not throw but what the store
 * throws. The record format stays private to this folder.
 */
export class RecordedVolumes {
  readonly #stages: Bucket<StageRecord>;
  readonly #publications: Bucket<PublishRecord>;

  constructor(store: ClientStateStore) {
    this.#stages = store.bucket<StageRecord>(STAGE_BUCKET);
    this.#publications = store.bucket<PublishRecord>(PUBLISH_BUCKET);
  }

  /** The plugins that have at least one publication recorded here: they owe a reconcile. */
  pluginsWithRecords(): Set<string> {
    return new Set(this.#publications.list().map((r) => r.value.pluginId));
  }

  /** The recorded publications that match `filter`, ordered by record key. */
  publications(filter: RecordFilter = {}): RecordedPublication[] {
    return this.#publications
      .list()
      .map((r) => r.value)
      .filter((r) => matches(r, filter) && (filter.allocId === undefined || r.allocId === filter.allocId))
      .map((r) => ({ ...recorded(r), allocId: r.allocId }));
  }

  /** The recorded stagings that match `filter` (`allocId` is ignored), ordered by record key. */
  stagings(filter: RecordFilter = {}): RecordedStaging[] {
    return this.#stages
      .list()
      .filter((r) => matches(r.value, filter))
      .map((r) => recorded(r.value));
  }

  /** Every staging and publication record with its host path. */
  mounts(): RecordedMount[] {
    const base = (r: PublishRecord | StageRecord) => ({ pluginId: r.pluginId, namespace: r.namespace, volumeId: r.volumeId, externalId: r.externalId, state: r.state, op: r.op });
    return [
      ...this.#stages.list().map(({ value: r }): RecordedMount => ({ kind: 'stage', ...base(r), path: r.stagingPath })),
      ...this.#publications.list().map(({ value: r }): RecordedMount => ({ kind: 'publish', ...base(r), allocId: r.allocId, path: r.targetPath })),
    ];
  }

  /**
   * The recorded stagings that match `filter` and that no publication uses
   * any more: an unstage is owed, or in flight. `filter.allocId` is ignored.
   */
  unusedStagings(filter: RecordFilter = {}): RecordedStaging[] {
    const used = new Set(
      this.#publications
        .list()
        .map((r) => r.value.stageKey)
        .filter((k): k is string => k !== undefined),
    );
    return this.#stages
      .list()
      .filter((r) => !used.has(r.key) && matches(r.value, filter))
      .map((r) => recorded(r.value));
  }
}

/** One record with its host path, for the node's mount inventory (src/client/volumes/mount-inventory.ts). */
export type RecordedMount = Omit<NodeMountRecord, 'mounted' | 'state'> & {
  state: StepState;
  /** The step in progress or last done (a record of an unpublish or unstage is on its way out). */
  op: string;
};

function recorded(rec: PublishRecord | StageRecord): RecordedStaging {
  return { pluginId: rec.pluginId, volume: volumeOfRecord(rec), usage: usageOfRecord(rec), state: rec.state };
}

function matches(rec: PublishRecord | StageRecord, f: RecordFilter): boolean {
  return (
    (f.pluginId === undefined || rec.pluginId === f.pluginId) &&
    (f.namespace === undefined || rec.namespace === f.namespace) &&
    (f.volumeId === undefined || rec.volumeId === f.volumeId)
  );
}
