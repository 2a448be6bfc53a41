// docs/reference/metrics.md: every metric Berth registers, from the
// registries themselves: a server's (and a dev agent's) and a client
// agent's, filled by the same functions the agent calls. Metrics are read
// with getMetricsAsArray(), which collects nothing: no value is computed.

import { Registry } from 'prom-client';
import { registerAllocationGauge, registerReclaimGauge, registerTaskMetrics } from '../../src/agent/index.js';
import { csiCallMetrics } from '../../src/csi/index.js';
import { ServerMetrics } from '../../src/server/index.js';
import { cell, code, generatedNote, table } from './markdown.js';

interface Row {
  name: string;
  type: string;
  labels: string[];
  help: string;
  where: Set<string>;
}

/** The Markdown of docs/reference/metrics.md. */
export async function metricsReference(): Promise<string> {
  const never = {} as never;
  // A server agent: what the server registers, and the agent's reclaim gauge (as Agent does).
  const server = new ServerMetrics({ store: never, health: never });
  registerReclaimGauge(server.registry, never);
  // A dev agent: a server's, and its client's on the same registry.
  const dev = new ServerMetrics({ store: never, health: never });
  registerReclaimGauge(dev.registry, never);
  csiCallMetrics(dev.registry);
  registerTaskMetrics(dev.registry, () => undefined, new Map());
  // A client agent: its own registry.
  const client = new Registry();
  csiCallMetrics(client);
  registerAllocationGauge(client, () => undefined);
  registerTaskMetrics(client, () => undefined, new Map());
  registerReclaimGauge(client, never);

  const rows = new Map<string, Row>();
  const add = (registry: Registry, where: string): void => {
    for (const m of registry.getMetricsAsArray() as unknown as { name: string; help: string; type: string; labelNames?: readonly string[] }[]) {
      // prom-client's own process and Node.js metrics are listed apart, by prefix.
      if (!m.name.startsWith('berth_')) continue;
      const row = rows.get(m.name) ?? { name: m.name, type: String(m.type), labels: [...(m.labelNames ?? [])], help: m.help, where: new Set<string>() };
      row.where.add(where);
      rows.set(m.name, row);
    }
  };
  add(server.registry, 'server');
  add(dev.registry, 'dev');
  add(client, 'client');
  const defaults = [...new Set(server.registry.getMetricsAsArray().map((m) => m.name).filter((n) => !n.startsWith('berth_')).map((n) => `${n.split('_')[0]}_*`))].sort();

  const sorted = [...rows.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  return [
    generatedNote('the metrics registries (ServerMetrics, csiCallMetrics and the agent\'s gauges)'),
    '# Metrics reference\n',
    "Every metric Berth exports, at `GET /v1/metrics` (JSON, Nomad's shape) and `GET /v1/metrics?format=prometheus` (Prometheus text), with a read token. **agent**: where it is exported: `server` a server agent's listener, `dev` a dev agent's (server and client in one), `client` a client agent's own listener. Values are read at each scrape.\n",
    table(
      ['name', 'type', 'labels', 'agent', 'help'],
      sorted.map((r) => [code(r.name), r.type, r.labels.map(code).join(', '), ['server', 'dev', 'client'].filter((w) => r.where.has(w)).join(', '), cell(r.help)]),
    ),
    `Server and dev agents also export prom-client's process and Node.js metrics (${defaults.map(code).join(', ')}: memory, CPU, event loop delay, heap, GC).\n`,
  ].join('\n');
}
