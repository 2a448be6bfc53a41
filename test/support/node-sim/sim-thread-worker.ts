// One shard of a threaded fleet (sim-threads.ts): a SimFleet of its own
// nodes in a worker thread, which reports what the main thread mirrors every
// 100 ms (the nodes' flags, the heartbeat round trips, the allocations
// started and finished since the last report, the sync counts, its own
// event-loop use) and stops when told.

import { parentPort, workerData } from 'node:worker_threads';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { CsiClient } from '../../../src/csi/index.js';
import { createLogger } from '../../../src/lib/index.js';
import { SimFleet } from './sim-fleet.js';
import { threadCpuWaitMs } from './sim-node.js';
import type { ShardInit, ShardReport } from './sim-threads.js';

const init = workerData as ShardInit;
const port = parentPort;
if (!port) throw new Error('sim-thread-worker runs in a worker thread');

const controller = init.csi && init.first < (init.csi.controllers ?? 1) ? new CsiClient({ endpoint: init.csi.endpoint }) : undefined;
// What the fleet recorded since the last report.
let started: Array<[string, string]> = [];
let finished: Array<[string, string]> = [];
// The nodes' warnings (a heartbeat or registration that failed, and why), counted by message and error: what a node saw when the leader marked it down.
let warnings = new Map<string, number>();
const logger = createLogger({
  level: 'warn',
  destination: {
    write(line: string): void {
      try {
        const l = JSON.parse(line) as { msg?: string; err?: unknown };
        const why = typeof l.err === 'string' ? l.err.replace(/[0-9a-f-]{36}/g, 'ID').replace(/\d+/g, 'N').slice(0, 90) : '';
        const key = `${l.msg ?? '?'}: ${why}`;
        warnings.set(key, (warnings.get(key) ?? 0) + 1);
      } catch {
        // Not a log line.
      }
    },
  },
});
const fleet = new SimFleet({
  logger,
  tap: { heartbeat: () => undefined, started: (a, n) => started.push([a, n]), finished: (a, n) => finished.push([a, n]) },
  servers: init.servers,
  token: init.token,
  count: init.count,
  first: init.first,
  ...(init.taskRunMs !== undefined ? { taskRunMs: init.taskRunMs } : {}),
  ...(init.heartbeatIntervalMs !== undefined ? { heartbeatIntervalMs: init.heartbeatIntervalMs } : {}),
  ...(init.startPerSecond ? { startPerSecond: init.startPerSecond } : {}),
  ...(init.csi
    ? { csi: { pluginId: init.csi.pluginId, fingerprint: init.csi.fingerprint, controller: controller as CsiClient, ...(init.csi.controllers !== undefined ? { controllers: init.csi.controllers - init.first } : {}) } }
    : {}),
});

let elu = performance.eventLoopUtilization();
// This thread's event-loop delay: a heartbeat's answer that arrives while the loop is busy waits that long before it is timed.
const delay = monitorEventLoopDelay({ resolution: 5 });
delay.enable();

// The per-node counts go every tenth report, or at the next one when the main thread asks ('full').
let reports = 0;
let fullAsked = false;

function report(): ShardReport {
  const serverIndex = new Int8Array(fleet.nodes.length);
  const flags = new Uint8Array(fleet.nodes.length);
  fleet.nodes.forEach((n, i) => {
    flags[i] = (n.registration.registered ? 1 : 0) | (n.connection.connected ? 2 : 0);
    serverIndex[i] = n.connection.server === undefined ? -1 : init.servers.indexOf(n.connection.server);
  });
  const full = fullAsked || reports++ % 10 === 0;
  fullAsked = false;
  const now = performance.eventLoopUtilization();
  const busy = performance.eventLoopUtilization(now, elu);
  elu = now;
  const out = {
    flags,
    serverIndex,
    ...(full ? { heartbeatCounts: fleet.heartbeatCounts(), sync: fleet.syncCounts() } : {}),
    heartbeats: fleet.takeHeartbeats(),
    started,
    finished,
    loop: { idle: busy.idle, active: busy.active, maxDelayMs: delay.max / 1e6, cpuWaitMs: threadCpuWaitMs() },
    warnings: [...warnings],
  };
  warnings = new Map();
  delay.reset();
  started = [];
  finished = [];
  return out;
}

const timer = setInterval(() => port.postMessage(report()), 100);
port.on('message', (msg: 'stop' | 'full') => {
  if (msg === 'full') fullAsked = true;
  if (msg !== 'stop') return;
  clearInterval(timer);
  void fleet.stop().finally(() => {
    controller?.close();
    fullAsked = true;
    port.postMessage({ ...report(), stopped: true });
  });
});
fleet.start();
