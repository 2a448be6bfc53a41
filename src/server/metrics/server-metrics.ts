// The server's Prometheus metrics: gauges computed from the state store at
// scrape time (so they can never drift from the state), on a registry owned
// by one Server (never prom-client's global registry, so that two servers in
// one process, as in tests, do not share or collide).

import { Gauge, Registry } from 'prom-client';
import type { AllocClientStatus, ClaimMode, ClaimState, NodeStatus } from '../../structs/index.js';
import type { StateStore } from '../state/index.js';

const CLIENT_STATUSES: readonly AllocClientStatus[] = ['pending', 'running', 'complete', 'failed', 'lost'];
const NODE_STATUSES: readonly NodeStatus[] = ['initializing', 'ready', 'down'];

export interface ServerMetricsOptions {
  store: StateStore;
}

/**
 * Owns a Registry with:
 * - `berth_plugin_controllers_healthy|expected{plugin}` and
 *   `berth_plugin_nodes_healthy|expected{plugin}`,
 * - `berth_volume_claims{namespace,volume,mode,state}` (claims not yet free),
 * - `berth_allocations{client_status}` and `berth_nodes{status}`.
 * Values are read from a store snapshot on every scrape. Other parts (the
 * agent's CSI call metrics) may register on `registry` too.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly #store: StateStore;

  constructor(opts: ServerMetricsOptions) {
    this.#store = opts.store;
    const store = this.#store;
    const reg = [this.registry];
    const pluginGauge = (name: string, help: string, pick: (p: { controllersHealthy: number; controllersExpected: number; nodesHealthy: number; nodesExpected: number }) => number): void => {
      new Gauge({
        name,
        help,
        labelNames: ['plugin'] as const,
        registers: reg,
        collect() {
          this.reset();
          for (const p of store.snapshot().list('plugins')) this.set({ plugin: p.id }, pick(p));
        },
      });
    };
    pluginGauge('berth_plugin_controllers_healthy', 'Healthy controller instances of each CSI plugin', (p) => p.controllersHealthy);
    pluginGauge('berth_plugin_controllers_expected', 'Controller instances each CSI plugin should have (from the jobs running it)', (p) => p.controllersExpected);
    pluginGauge('berth_plugin_nodes_healthy', 'Healthy node instances of each CSI plugin', (p) => p.nodesHealthy);
    pluginGauge('berth_plugin_nodes_expected', 'Node instances each CSI plugin should have (from the jobs running it)', (p) => p.nodesExpected);

    new Gauge({
      name: 'berth_volume_claims',
      help: 'Volume claims not yet released, by volume, claim mode and release state',
      labelNames: ['namespace', 'volume', 'mode', 'state'] as const,
      registers: reg,
      collect() {
        this.reset();
        const counts = new Map<string, { namespace: string; volume: string; mode: ClaimMode; state: ClaimState; n: number }>();
        for (const c of store.snapshot().list('claims')) {
          const key = JSON.stringify([c.namespace, c.volumeId, c.mode, c.state]);
          const entry = counts.get(key) ?? { namespace: c.namespace, volume: c.volumeId, mode: c.mode, state: c.state, n: 0 };
          entry.n += 1;
          counts.set(key, entry);
        }
        for (const { n, ...labels } of counts.values()) this.set(labels, n);
      },
    });

    new Gauge({
      name: 'berth_allocations',
      help: 'Allocations by client status',
      labelNames: ['client_status'] as const,
      registers: reg,
      collect() {
        const counts = new Map<string, number>(CLIENT_STATUSES.map((s) => [s, 0]));
        for (const a of store.snapshot().list('allocations')) counts.set(a.clientStatus, (counts.get(a.clientStatus) ?? 0) + 1);
        for (const [status, n] of counts) this.set({ client_status: status }, n);
      },
    });

    new Gauge({
      name: 'berth_nodes',
      help: 'Client nodes by status',
      labelNames: ['status'] as const,
      registers: reg,
      collect() {
        const counts = new Map<string, number>(NODE_STATUSES.map((s) => [s, 0]));
        for (const n of store.snapshot().list('nodes')) counts.set(n.status, (counts.get(n.status) ?? 0) + 1);
        for (const [status, n] of counts) this.set({ status }, n);
      },
    });
  }

  /** The exposition text and its content type. Reads the store; never throws on an empty store. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
