// The node agent's volume stats collector, wired: reports go to the server
// through the ServerApi, condition changes become task events on the
// allocations using the volume. Private to src/client (Client uses it).

import type { Clock, Logger } from '../lib/index.js';
import type { AllocRunnerHandle, ClientOptions } from './_client-types.js';
import type { CsiManager } from './csimanager/index.js';
import type { ServerApi } from './serverconn/index.js';
import { TASK_EVENTS } from './taskrunner/index.js';
import type { ClientStateStore } from './state/index.js';
import { RecordedVolumes } from './volumes/index.js';
import { VolumeStatsCollector } from './volumestats/index.js';

/** Builds the collector (not started), or undefined when `opts.volumeStats.enabled` is false. */
export function volumeStatsCollector(deps: {
  opts: ClientOptions;
  store: ClientStateStore;
  csi: CsiManager;
  api: ServerApi;
  nodeId: string;
  runner: (allocId: string) => AllocRunnerHandle | undefined;
  clock: Clock;
  logger: Logger;
}): VolumeStatsCollector | undefined {
  const cfg = deps.opts.volumeStats ?? {};
  if (cfg.enabled === false) return undefined;
  return new VolumeStatsCollector({
    recorded: new RecordedVolumes(deps.store),
    csi: deps.csi,
    send: async (reports, signal) => {
      await deps.api.reportVolumeStats(deps.nodeId, reports, { signal });
    },
    onCondition: (report, previous) => {
      const c = report.condition;
      if (!c) return;
      const type = c.abnormal ? TASK_EVENTS.volumeAbnormal : TASK_EVENTS.volumeNormal;
      const message = c.abnormal
        ? `Volume ${report.volumeId} reported abnormal by plugin ${report.pluginId}: ${c.message}`
        : `Volume ${report.volumeId} normal again${previous?.message ? ` (was: ${previous.message})` : ''}`;
      for (const allocId of report.allocIds) deps.runner(allocId)?.volumeEvent?.(type, message, { volumeId: report.volumeId, pluginId: report.pluginId });
    },
    clock: deps.clock,
    logger: deps.logger,
    ...(cfg.intervalMs !== undefined ? { intervalMs: cfg.intervalMs } : {}),
    ...(cfg.callTimeoutMs !== undefined ? { callTimeoutMs: cfg.callTimeoutMs } : {}),
    ...(cfg.scanIntervalMs !== undefined ? { scanIntervalMs: cfg.scanIntervalMs } : {}),
  });
}
