// Prometheus wiring for CsiClient's call observer: a counter of CSI calls and
// a histogram of their latency, both by RPC and gRPC code, registered on the
// registry the caller owns (never prom-client's global one).

import { Counter, Histogram, type Registry } from 'prom-client';
import type { CsiCallObserver } from './client.js';

/** Latency buckets in seconds: CSI calls run from sub-millisecond probes to minute-long creates. */
export const CSI_CALL_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Registers `berth_csi_calls_total{plugin,rpc,code}` and
 * `berth_csi_call_duration_seconds{plugin,rpc,code}` on `registry` and returns
 * a factory of observers, one per plugin (pass to `new CsiClient({ observer })`).
 * Call once per registry: prom-client refuses a second registration of the
 * same metric name (throws).
 */
export function csiCallMetrics(registry: Registry): { observer(pluginId: string): CsiCallObserver } {
  const calls = new Counter({
    name: 'berth_csi_calls_total',
    help: 'CSI calls sent to plugins, by plugin, RPC and gRPC code (OK for success); each retry attempt counts',
    labelNames: ['plugin', 'rpc', 'code'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'berth_csi_call_duration_seconds',
    help: 'Duration of CSI calls, by plugin, RPC and gRPC code',
    labelNames: ['plugin', 'rpc', 'code'] as const,
    buckets: CSI_CALL_BUCKETS,
    registers: [registry],
  });
  return {
    observer(plugin) {
      return {
        onCall(rpc, code, seconds) {
          calls.inc({ plugin, rpc, code });
          latency.observe({ plugin, rpc, code }, seconds);
        },
      };
    },
  };
}
