// Volume health on the server: the usage and condition nodes report after
// NodeGetVolumeStats, and the condition controllers report through
// ControllerGetVolume. Usage lives in memory (VolumeUsageBook); a condition
// is a row of the `volumeConditions` table, written only when it changes,
// so that every change is one event on the stream (topic `volume-condition`)
// and every server of a cluster serves it.

import { silentLogger, systemClock, type Clock, type Logger } from '../../lib/index.js';
import type { NodeVolumeUsage, SourcedCondition, VolumeConditionReport, VolumeConditionRow, VolumeStatsReport, VolumeUsageSample } from '../../structs/index.js';
import { rowKey, type StateReader, type StateStore } from '../state/index.js';
import { VolumeUsageBook } from './usage-book.js';

export interface VolumeHealthServiceOptions {
  store: StateStore;
  clock?: Clock;
  logger?: Logger;
  /** Usage samples kept per volume for the history. Default 60. */
  historySize?: number;
}

/** What `GET /v1/volume/csi/:id` adds to a volume. */
export interface VolumeHealthView {
  /** The latest usage per node that has the volume published (empty until a node reports). */
  usage: NodeVolumeUsage[];
  /** The condition, when the plugin reports one (VOLUME_CONDITION); null otherwise. */
  condition: { abnormal: boolean; message: string; sources: SourcedCondition[] } | null;
}

/** A condition change, as the service tells its listeners (the log, tests). */
export interface ConditionChange {
  namespace: string;
  volumeId: string;
  pluginId: string;
  before: boolean | undefined;
  now: SourcedCondition;
}

/** Bounds of what a node may send in one report batch. */
const MAX_REPORTS = 10_000;

/**
 * Takes the nodes' and controllers' reports and answers the health of a
 * volume. `report` and `controllerCondition` write to the store only when a
 * condition changed (rejecting with the store's error when that write
 * fails); every read is synchronous.
 */
export class VolumeHealthService {
  readonly #store: StateStore;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly book: VolumeUsageBook;
  #lastRetain = 0;

  constructor(opts: VolumeHealthServiceOptions) {
    this.#store = opts.store;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'volume-health' });
    this.book = new VolumeUsageBook(opts.historySize !== undefined ? { historySize: opts.historySize } : {});
  }

  /**
   * A node's reports (one per published volume). Reports of volumes the
   * server does not know are ignored. Resolves with how many were taken.
   * Throws TypeError for a malformed batch (the route answers INVALID).
   */
  async report(nodeId: string, reports: readonly VolumeStatsReport[]): Promise<{ accepted: number }> {
    if (reports.length > MAX_REPORTS) throw new TypeError(`at most ${MAX_REPORTS} reports in one batch`);
    const snap = this.#store.snapshot();
    const known = reports.filter((r) => snap.get('volumes', rowKey(r.namespace, r.volumeId)) !== undefined);
    for (const r of known) this.book.record(nodeId, r);
    const changes = known
      .filter((r) => r.condition !== undefined)
      .map((r) => ({ r, c: { ...(r.condition as VolumeConditionReport), source: 'node' as const, nodeId, reportedAt: r.reportedAt } }));
    await this.#putConditions(changes.map(({ r, c }) => ({ namespace: r.namespace, volumeId: r.volumeId, pluginId: r.pluginId, sourceKey: `node:${nodeId}`, condition: c })));
    this.#retainNow(snap);
    return { accepted: known.length };
  }

  /** A controller's word on a volume (ControllerGetVolume's volume_condition), asked by the leader loop. */
  async controllerCondition(namespace: string, volumeId: string, pluginId: string, controllerNodeId: string, condition: VolumeConditionReport): Promise<void> {
    const c: SourcedCondition = { ...condition, source: 'controller', nodeId: controllerNodeId, reportedAt: this.#clock.now() };
    await this.#putConditions([{ namespace, volumeId, pluginId, sourceKey: 'controller', condition: c }]);
  }

  /** The usage and condition of a volume. Pure read. */
  view(namespace: string, volumeId: string, snap: StateReader = this.#store.snapshot()): VolumeHealthView {
    const row = snap.get('volumeConditions', rowKey(namespace, volumeId));
    return {
      usage: this.book.latest(namespace, volumeId),
      condition: row ? { abnormal: row.abnormal, message: row.message, sources: Object.values(row.sources) } : null,
    };
  }

  /** The kept usage samples of a volume, oldest first. */
  history(namespace: string, volumeId: string): VolumeUsageSample[] {
    return this.book.history(namespace, volumeId);
  }

  /**
   * Writes the conditions that change a row, in one store write; logs each
   * change. Nodes and the controller take turns: the controller is asked only
   * about volumes no node has, so a node's report replaces the controller's
   * word and the controller's replaces every node's.
   */
  async #putConditions(items: Array<{ namespace: string; volumeId: string; pluginId: string; sourceKey: string; condition: SourcedCondition }>): Promise<void> {
    const next = (old: VolumeConditionRow | undefined, sourceKey: string, condition: SourcedCondition): Record<string, SourcedCondition> => {
      const kept = Object.entries(old?.sources ?? {}).filter(([k]) => (sourceKey === 'controller' ? k === 'controller' : k !== 'controller'));
      return { ...Object.fromEntries(kept), [sourceKey]: condition };
    };
    const words = (sources: Record<string, SourcedCondition>): string =>
      JSON.stringify(Object.entries(sources).map(([k, c]) => [k, c.abnormal, c.message]).sort());
    const snap = this.#store.snapshot();
    const changed = items.filter(({ namespace, volumeId, sourceKey, condition }) => {
      const old = snap.get('volumeConditions', rowKey(namespace, volumeId));
      return !old || words(old.sources) !== words(next(old, sourceKey, condition));
    });
    if (changed.length === 0) return;
    const logged: ConditionChange[] = [];
    await this.#store.write((txn) => {
      logged.length = 0;
      for (const { namespace, volumeId, pluginId, sourceKey, condition } of changed) {
        if (!txn.get('volumes', rowKey(namespace, volumeId))) continue;
        const old = txn.get('volumeConditions', rowKey(namespace, volumeId));
        txn.put('volumeConditions', conditionRow(namespace, volumeId, pluginId, next(old, sourceKey, condition)));
        logged.push({ namespace, volumeId, pluginId, before: old?.sources[sourceKey]?.abnormal, now: condition });
      }
    });
    for (const ch of logged) {
      const fields = { namespace: ch.namespace, volumeId: ch.volumeId, pluginId: ch.pluginId, source: ch.now.source, nodeId: ch.now.nodeId, reason: ch.now.message };
      if (ch.now.abnormal) this.#log.warn(fields, 'volume condition abnormal');
      else if (ch.before) this.#log.info(fields, 'volume condition normal again');
    }
  }

  /** At most once a minute: forget the usage of volumes that were deregistered. */
  #retainNow(snap: StateReader): void {
    const now = this.#clock.now();
    if (now - this.#lastRetain < 60_000) return;
    this.#lastRetain = now;
    this.book.retain((ns, id) => snap.get('volumes', rowKey(ns, id)) !== undefined);
  }
}

/** The row for a volume's sources: abnormal when any source says so, with the first abnormal source's message. */
function conditionRow(namespace: string, volumeId: string, pluginId: string, sources: Record<string, SourcedCondition>): Omit<VolumeConditionRow, 'createIndex' | 'modifyIndex'> {
  const all = Object.entries(sources).sort(([a], [b]) => a.localeCompare(b));
  const bad = all.find(([, c]) => c.abnormal);
  const latest = [...all].sort(([, a], [, b]) => b.reportedAt - a.reportedAt)[0];
  return {
    namespace,
    volumeId,
    pluginId,
    abnormal: bad !== undefined,
    message: bad ? bad[1].message : (latest?.[1].message ?? ''),
    sources,
  };
}
