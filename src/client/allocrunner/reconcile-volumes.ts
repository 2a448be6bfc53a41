// After an agent restart, once the server's allocation list is known: bring
// each node plugin's mounts in line with the live allocations (docs/csi-rules.md scenarios 12,
// 13, 19), then let each live runner mount its volumes again from its records
// (intact steps send nothing).

import { describeError, silentLogger, systemClock, type Logger } from '../../lib/index.js';
import type { CsiManager } from '../csimanager/index.js';
import type { ReconcileReport } from '../volumes/index.js';
import type { AllocRunner } from './alloc-runner.js';

export interface ReconcileVolumesOptions {
  csiManager: CsiManager;
  /** Every runner still live on the node (restored and updated with the server's list). */
  runners: Iterable<AllocRunner>;
  /** Node plugins to reconcile even if no live runner uses them (e.g. every registered csi-node plugin). */
  extraPlugins?: Iterable<string>;
  signal?: AbortSignal;
  logger?: Logger;
}

/**
 * For each node plugin: waits until its volume manager can serve, calls
 * reconcile with the (volume, allocation) pairs the live runners want
 * (mounts of allocations no longer live are torn down), then has each live
 * runner remount its volumes. Do not call before the server's allocation
 * list has been received. Failures are logged and reported, not thrown;
 * AbortedError when `signal` fires.
 */
export async function reconcileCsiVolumes(opts: ReconcileVolumesOptions): Promise<{ reports: Map<string, ReconcileReport>; failed: string[] }> {
  const logger = (opts.logger ?? silentLogger()).child({ component: 'volume-reconcile' });
  const runners = [...opts.runners];
  const byPlugin = new Map<string, Array<{ volumeId: string; allocId: string }>>();
  for (const p of opts.extraPlugins ?? []) byPlugin.set(p, []);
  for (const w of runners.flatMap((r) => r.wanted())) {
    const list = byPlugin.get(w.pluginId) ?? [];
    list.push({ volumeId: w.volumeId, allocId: w.allocId });
    byPlugin.set(w.pluginId, list);
  }
  const reports = new Map<string, ReconcileReport>();
  const failed: string[] = [];
  for (const [pluginId, wanted] of byPlugin) {
    const signal = opts.signal;
    for (;;) {
      await opts.csiManager.managerForPlugin(pluginId, signal ? { signal } : {});
      try {
        reports.set(pluginId, await opts.csiManager.volumeManagerFor(pluginId).reconcile(wanted, signal ? { signal } : {}));
        break;
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code !== 'CSI_PLUGIN_UNHEALTHY' && code !== 'CSI_PLUGIN_NOT_FOUND') {
          logger.error({ plugin: pluginId, err: describeError(err) }, 'reconcile failed');
          failed.push(pluginId);
          break;
        }
        await systemClock.sleep(100, signal);
      }
    }
  }
  // Pairs whose redone step needs secrets or mount flags: their runner asks the server for them.
  const awaiting = new Set([...reports.values()].flatMap((rep) => rep.awaitingMount.map((p) => `${p.allocId}\0${p.volumeId}`)));
  for (const r of runners) {
    if (!r.wanted().length) continue;
    try {
      const reclaim = (volumeId: string): boolean => awaiting.has(`${r.id}\0${volumeId}`);
      await r.remountVolumes({ reclaim, ...(opts.signal ? { signal: opts.signal } : {}) });
    } catch (err) {
      logger.error({ allocId: r.id, err: describeError(err) }, 'remount failed');
      failed.push(r.id);
    }
  }
  return { reports, failed };
}
