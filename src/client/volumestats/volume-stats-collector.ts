// The node agent's volume stats: for every volume published on this node
// whose node plugin advertises GET_VOLUME_STATS, NodeGetVolumeStats on an
// interval (jittered, one call in flight per volume, each with a deadline),
// and the usage and condition it answers go to the server in batches. A
// change of condition also goes to the allocations using the volume, as a
// task event (`onCondition`).

import { AbortedError, anySignal, describeError, IntervalLoop, silentLogger, systemClock, type Clock, type LifecycleState, type Logger } from '../../lib/index.js';
import type { NodeCapability, VolumeStats } from '../../csi/index.js';
import type { UsageFigures, VolumeConditionReport, VolumeStatsReport } from '../../structs/index.js';
import type { RecordedPublication, RecordedVolumes } from '../volumes/index.js';

/** What the collector needs of the CSI manager (CsiManager has it). */
export interface StatsPluginSource {
  /** The node capabilities of the serving instance of node plugin `pluginId` ([] before its fingerprint). */
  nodeCapabilities(pluginId: string): readonly NodeCapability[];
  /** The volume manager of node plugin `pluginId`; throws while no healthy instance serves it. */
  volumeManagerFor(pluginId: string): {
    stats(volume: RecordedPublication['volume'], allocId: string, usage: RecordedPublication['usage'], opts?: { signal?: AbortSignal }): Promise<VolumeStats>;
  };
}

export interface VolumeStatsCollectorOptions {
  recorded: Pick<RecordedVolumes, 'publications'>;
  csi: StatsPluginSource;
  /** Sends one batch of reports to the server; rejects when it could not (the batch is kept for the next try). */
  send: (reports: VolumeStatsReport[], signal: AbortSignal) => Promise<void>;
  /** A volume's condition changed (first abnormal report, a new message, or normal again). Must not throw. */
  onCondition?: (report: VolumeStatsReport, previous: VolumeConditionReport | undefined) => void;
  clock?: Clock;
  logger?: Logger;
  /** Time between two calls for one volume. Default 60 s. */
  intervalMs?: number;
  /** Each interval is moved by up to this fraction either way, so volumes spread out. Default 0.1. */
  jitter?: number;
  /** Deadline of one NodeGetVolumeStats. Default 10 s. */
  callTimeoutMs?: number;
  /** How often the records are read for new and gone publications. Default 5 s, at most the interval. */
  scanIntervalMs?: number;
  /** Reports wait this long for others before a batch goes, so one POST carries many volumes. Default 1 s. */
  batchDelayMs?: number;
  /** Default Math.random. */
  random?: () => number;
}

interface Tracked {
  key: string;
  pub: RecordedPublication;
  allocIds: string[];
  dueAt: number;
  inFlight: boolean;
  condition?: VolumeConditionReport;
}

/** Reports kept while the server cannot be reached; the oldest go first when more pile up. */
const MAX_PENDING = 10_000;

function figures(stats: VolumeStats, unit: 'BYTES' | 'INODES'): UsageFigures | undefined {
  const u = stats.usage.find((x) => x.unit === unit);
  return u ? { available: u.available, total: u.total, used: u.used } : undefined;
}

/**
 * Lifecycle (lib IntervalLoop): start() returns once the loop runs; stop() is
 * safe twice, aborts the calls in flight and waits for them. `counts` says
 * how many calls, failures and batches were made (bench and tests).
 */
export class VolumeStatsCollector {
  readonly #o: VolumeStatsCollectorOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #loop: IntervalLoop;
  readonly #intervalMs: number;
  readonly #jitter: number;
  readonly #scanMs: number;
  readonly #random: () => number;
  readonly #tracked = new Map<string, Tracked>();
  #pending: VolumeStatsReport[] = [];
  /** When the oldest pending report may go (clock ms); undefined when none is pending. */
  #sendAt: number | undefined;
  readonly #batchDelayMs: number;
  #sending = false;
  /** When the records are read next (clock ms). */
  #nextScan = 0;
  readonly counts = { calls: 0, failures: 0, batches: 0, reports: 0 };

  constructor(opts: VolumeStatsCollectorOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'volume-stats' });
    this.#intervalMs = Math.max(1, opts.intervalMs ?? 60_000);
    this.#jitter = Math.min(0.5, Math.max(0, opts.jitter ?? 0.1));
    this.#scanMs = Math.min(this.#intervalMs, opts.scanIntervalMs ?? 5000);
    this.#random = opts.random ?? Math.random;
    this.#batchDelayMs = Math.max(0, opts.batchDelayMs ?? 1000);
    // The first round at once; each round says how long until the next thing is due.
    this.#loop = new IntervalLoop({ clock: this.#clock, logger: this.#log, intervalMs: this.#scanMs, firstDelayMs: 0, step: (signal) => this.#round(signal) });
  }

  get state(): LifecycleState {
    return this.#loop.state;
  }

  /** The volumes followed now (one per plugin, namespace and volume). */
  get followed(): number {
    return this.#tracked.size;
  }

  start(): Promise<void> {
    return this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** One round: the scan when due, the calls due, a batch when due. Returns the wait until the next of them (a finished call wakes the loop sooner). */
  #round(signal: AbortSignal): number {
    const now = this.#clock.now();
    if (now >= this.#nextScan) {
      this.#scan(now);
      this.#nextScan = now + this.#scanMs;
    }
    for (const t of this.#tracked.values()) {
      if (!t.inFlight && t.dueAt <= now) this.#collect(t, signal);
    }
    if (this.#sendAt !== undefined && this.#sendAt <= now && !this.#sending) void this.#loop.track(this.#flush(signal));
    const due = Math.min(this.#nextScan, this.#sending ? Infinity : (this.#sendAt ?? Infinity), ...[...this.#tracked.values()].filter((t) => !t.inFlight).map((t) => t.dueAt));
    return Math.max(1, due - this.#clock.now());
  }

  /** Follows the publications recorded now: one per volume (any of its allocations' targets will do). */
  #scan(now: number): void {
    const seen = new Map<string, { pub: RecordedPublication; allocIds: string[] }>();
    for (const pub of this.#o.recorded.publications()) {
      if (pub.state !== 'done') continue;
      const key = JSON.stringify([pub.pluginId, pub.volume.namespace ?? 'default', pub.volume.id]);
      const entry = seen.get(key);
      if (entry) entry.allocIds.push(pub.allocId);
      else seen.set(key, { pub, allocIds: [pub.allocId] });
    }
    for (const key of this.#tracked.keys()) if (!seen.has(key)) this.#tracked.delete(key);
    for (const [key, { pub, allocIds }] of seen) {
      const t = this.#tracked.get(key);
      if (t) {
        // The allocation whose target is asked may have gone: keep a live one.
        if (!allocIds.includes(t.pub.allocId)) t.pub = pub;
        t.allocIds = allocIds;
        continue;
      }
      // The first call comes soon, spread over a tenth of the interval.
      this.#tracked.set(key, { key, pub, allocIds, dueAt: now + Math.floor(this.#random() * Math.min(this.#intervalMs / 10, 5000)), inFlight: false });
    }
  }

  #collect(t: Tracked, signal: AbortSignal): void {
    const spread = 1 + (this.#random() * 2 - 1) * this.#jitter;
    t.dueAt = this.#clock.now() + Math.round(this.#intervalMs * spread);
    if (!this.#o.csi.nodeCapabilities(t.pub.pluginId).includes('GET_VOLUME_STATS')) return;
    t.inFlight = true;
    void this.#loop.track(
      (async () => {
        const { pub } = t;
        const namespace = pub.volume.namespace ?? 'default';
        try {
          this.counts.calls++;
          const deadline = anySignal([signal, AbortSignal.timeout(this.#o.callTimeoutMs ?? 10_000)]);
          const stats = await this.#o.csi.volumeManagerFor(pub.pluginId).stats(pub.volume, pub.allocId, pub.usage, { signal: deadline });
          const bytes = figures(stats, 'BYTES');
          const inodes = figures(stats, 'INODES');
          const report: VolumeStatsReport = {
            namespace,
            volumeId: pub.volume.id,
            pluginId: pub.pluginId,
            ...(bytes ? { bytes } : {}),
            ...(inodes ? { inodes } : {}),
            ...(stats.condition ? { condition: { abnormal: stats.condition.abnormal, message: stats.condition.message } } : {}),
            allocIds: [...t.allocIds],
            reportedAt: this.#clock.now(),
          };
          this.#queue(report);
          const before = t.condition;
          if (report.condition && (before?.abnormal !== report.condition.abnormal || (report.condition.abnormal && before?.message !== report.condition.message))) {
            t.condition = report.condition;
            // A first normal report is no news; a first abnormal one is.
            if (before || report.condition.abnormal) this.#o.onCondition?.(report, before);
          }
        } catch (err) {
          if (signal.aborted || err instanceof AbortedError) return;
          this.counts.failures++;
          this.#log.debug({ pluginId: pub.pluginId, volumeId: pub.volume.id, err: describeError(err) }, 'NodeGetVolumeStats failed');
        } finally {
          t.inFlight = false;
          this.#loop.wake();
        }
      })(),
    );
  }

  #queue(report: VolumeStatsReport): void {
    this.#sendAt ??= this.#clock.now() + this.#batchDelayMs;
    this.#pending.push(report);
    if (this.#pending.length > MAX_PENDING) this.#pending.splice(0, this.#pending.length - MAX_PENDING);
  }

  /** Sends what is pending, one batch at a time; a failed batch is put back for the next round. */
  async #flush(signal: AbortSignal): Promise<void> {
    this.#sending = true;
    try {
      while (this.#pending.length > 0 && !signal.aborted) {
        const batch = this.#pending;
        this.#pending = [];
        this.#sendAt = undefined;
        try {
          await this.#o.send(batch, signal);
          this.counts.batches++;
          this.counts.reports += batch.length;
        } catch (err) {
          if (signal.aborted) return;
          // Newer reports of the same volume supersede these; keep the batch only for volumes without one.
          const newer = new Set(this.#pending.map((r) => `${r.namespace}\u0000${r.volumeId}`));
          this.#pending.unshift(...batch.filter((r) => !newer.has(`${r.namespace}\u0000${r.volumeId}`)));
          this.#sendAt = this.#clock.now() + Math.max(this.#batchDelayMs, 1000);
          this.#log.info({ reports: batch.length, err: describeError(err) }, 'could not send volume stats; trying again with the next ones');
          return;
        }
      }
    } finally {
      this.#sending = false;
      this.#loop.wake();
    }
  }
}
