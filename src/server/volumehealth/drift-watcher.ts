// The drift leader loop: runs the volume doctor (reporting only, never
// repairing) every few minutes and keeps its latest report as the `drift`
// row, so that drift is an event (topic `drift`), a metric
// (berth_volume_drift) and a badge any server can serve.

import { IntervalLoop, silentLogger, systemClock, type Clock, type LifecycleState, type Logger } from '../../lib/index.js';
import type { DriftReport } from '../../structs/index.js';
import type { StateStore } from '../state/index.js';
import type { VolumeDoctor } from './volume-doctor.js';

export const DRIFT_ROW_ID = 'latest';

export interface DriftWatcherOptions {
  store: StateStore;
  doctor: VolumeDoctor;
  clock?: Clock;
  logger?: Logger;
  /** How often the books are compared. Default 5 min. */
  intervalMs?: number;
  /** The first comparison after taking leadership. Default 30 s (nodes reconnect first). */
  firstDelayMs?: number;
}

/**
 * Lifecycle as IntervalLoop's: start() returns once the loop runs, stop()
 * is safe twice and waits for the comparison in flight; a failed comparison
 * is logged and tried again next interval. `checkNow()` runs one comparison
 * and stores it; rejects with the store's error when the write fails.
 */
export class DriftWatcher {
  readonly #o: DriftWatcherOptions;
  readonly #log: Logger;
  readonly #loop: IntervalLoop;

  constructor(opts: DriftWatcherOptions) {
    this.#o = opts;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'drift-watcher' });
    this.#loop = new IntervalLoop({
      clock: opts.clock ?? systemClock,
      logger: this.#log,
      intervalMs: opts.intervalMs ?? 5 * 60_000,
      firstDelayMs: opts.firstDelayMs ?? Math.min(30_000, opts.intervalMs ?? 30_000),
      step: async (signal) => void (await this.checkNow({ signal })),
    });
  }

  get state(): LifecycleState {
    return this.#loop.state;
  }

  start(): Promise<void> {
    return this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  async checkNow(opts: { signal?: AbortSignal } = {}): Promise<DriftReport> {
    const report = await this.#o.doctor.run(opts.signal ? { signal: opts.signal } : {});
    const before = this.#o.store.snapshot().get('drift', DRIFT_ROW_ID);
    await this.#o.store.write((txn) => txn.put('drift', { id: DRIFT_ROW_ID, ...report }));
    const key = (r: Pick<DriftReport, 'findings'>): string => JSON.stringify(r.findings.map((f) => [f.kind, f.volumeId, f.nodeId, f.path, f.allocId, f.externalVolumeId]));
    if (report.findings.length > 0 && (!before || key(before) !== key(report))) {
      this.#log.warn({ findings: report.findings.length, kinds: [...new Set(report.findings.map((f) => f.kind))] }, 'volume drift found: run berth volume doctor');
    } else if (report.findings.length === 0 && before && before.findings.length > 0) {
      this.#log.info('volume drift gone');
    }
    return report;
  }
}
