// The agent's own gauges on /v1/metrics, read at scrape time: the memory
// reclaimer's full GCs, and a node agent's allocations by client status.

import { Gauge, type Registry } from 'prom-client';
import type { Client } from '../client/index.js';
import type { MemoryReclaimer } from '../lib/index.js';

/** `berth_agent_memory_reclaims`: the full GCs the agent's memory reclaimer ran (read at scrape time). */
export function registerReclaimGauge(registry: Registry, reclaimer: MemoryReclaimer): void {
  new Gauge({
    name: 'berth_agent_memory_reclaims',
    help: 'Full, compacting GCs the agent ran to give back memory after a burst of work',
    registers: [registry],
    collect() {
      this.set(reclaimer.reclaims);
    },
  });
}

/** `berth_client_allocations{status}`, read from the client at scrape time. */
export function registerAllocationGauge(registry: Registry, client: () => Client | undefined): void {
  new Gauge({
    name: 'berth_client_allocations',
    help: 'Allocations this node agent runs, by client status',
    labelNames: ['status'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const c = client();
      if (!c) return;
      for (const id of c.allocIds()) {
        const status = c.runner(id)?.status().clientStatus ?? 'unknown';
        this.inc({ status });
      }
    },
  });
}
