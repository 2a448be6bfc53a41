// The server's Prometheus metrics: gauges computed from the state store at
// scrape time (so they can never drift from the state), on a registry owned
// by one Server (never prom-client's global registry, so that two servers in
// one process, as in tests, do not share or collide).

import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { DRIFT_KINDS, type AllocClientStatus, type ClaimMode, type ClaimState, type NodeStatus } from '../../structs/index.js';
import { rowKey, type StateStore } from '../state/index.js';
import { DRIFT_ROW_ID, type VolumeHealthService } from '../volumehealth/index.js';

const CLIENT_STATUSES: readonly AllocClientStatus[] = ['pending', 'running', 'complete', 'failed', 'lost'];
const NODE_STATUSES: readonly NodeStatus[] = ['initializing', 'ready', 'down'];

export interface ServerMetricsOptions {
  store: StateStore;
  /** When given: the volume usage gauges (from the nodes' latest reports). */
  health?: VolumeHealthService;
}

/**
 * Owns a Registry with:
 * - `berth_plugin_controllers_healthy|expected{plugin}` and
 *   `berth_plugin_nodes_healthy|expected{plugin}`,
 * - `berth_volume_claims{namespace,volume,mode,state}` (claims not yet free),
 * - `berth_allocations{client_status}` and `berth_nodes{status}`,
 * - `berth_volume_capacity_bytes`, `berth_volume_used_bytes`,
 *   `berth_volume_inodes_used` `{namespace,volume,plugin}` (the largest a
 *   node reported: nodes of a multi-node volume see the same storage), and
 *   `berth_volume_abnormal{namespace,volume,plugin}` (1 while the plugin
 *   reports the volume abnormal),
 * - `berth_volume_drift{kind}` (differences the drift loop last found),
 * - `berth_node_heartbeat_seconds`: how long this server took to answer a
 *   node's heartbeat, from the request read to the answer sent (the node's
 *   round trip less this is time spent in sockets and queued behind the
 *   server's event loop),
 * - prom-client's process and Node.js metrics (`process_resident_memory_bytes`,
 *   `nodejs_eventloop_lag_p99_seconds` and the other event loop delay
 *   percentiles since the previous scrape, heap, GC).
 * Values are read from a store snapshot on every scrape. Other parts (the
 * agent's CSI call metrics) may register on `registry` too.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  /** Observed by the heartbeat route: seconds from a heartbeat request read to its answer sent. */
  readonly heartbeatSeconds: Histogram;
  readonly #store: StateStore;

  constructor(opts: ServerMetricsOptions) {
    this.#store = opts.store;
    const store = this.#store;
    const reg = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.heartbeatSeconds = new Histogram({
      name: 'berth_node_heartbeat_seconds',
      help: "Time this server took to answer a node's heartbeat, from the request read to the answer sent",
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: reg,
    });
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

    this.#volumeGauges(opts.health);
  }

  #volumeGauges(health: VolumeHealthService | undefined): void {
    const store = this.#store;
    const reg = [this.registry];
    const labelNames = ['namespace', 'volume', 'plugin'] as const;
    const usageGauge = (name: string, help: string, pick: (u: { bytes?: { total: number; used: number }; inodes?: { used: number } }) => number | undefined): void => {
      if (!health) return;
      new Gauge({
        name,
        help,
        labelNames,
        registers: reg,
        collect() {
          this.reset();
          const snap = store.snapshot();
          for (const e of health.book.entries()) {
            if (!snap.get('volumes', rowKey(e.namespace, e.volumeId))) continue;
            const values = e.usage.map(pick).filter((x): x is number => x !== undefined);
            if (values.length) this.set({ namespace: e.namespace, volume: e.volumeId, plugin: e.pluginId }, Math.max(...values));
          }
        },
      });
    };
    usageGauge('berth_volume_capacity_bytes', 'Size of each volume in bytes, as its node plugin last reported it (NodeGetVolumeStats)', (u) => u.bytes?.total);
    usageGauge('berth_volume_used_bytes', 'Bytes used in each volume, as its node plugin last reported it', (u) => u.bytes?.used);
    usageGauge('berth_volume_inodes_used', 'Inodes used in each volume, as its node plugin last reported it', (u) => u.inodes?.used);

    new Gauge({
      name: 'berth_volume_abnormal',
      help: 'Whether the plugin reports the volume abnormal (VOLUME_CONDITION): 1 abnormal, 0 normal',
      labelNames,
      registers: reg,
      collect() {
        this.reset();
        const snap = store.snapshot();
        for (const c of snap.list('volumeConditions')) {
          if (snap.get('volumes', rowKey(c.namespace, c.volumeId))) this.set({ namespace: c.namespace, volume: c.volumeId, plugin: c.pluginId }, c.abnormal ? 1 : 0);
        }
      },
    });

    new Gauge({
      name: 'berth_volume_drift',
      help: 'Differences between Berth and its plugins and nodes that the drift loop last found, by kind (see berth volume doctor)',
      labelNames: ['kind'] as const,
      registers: reg,
      collect() {
        const counts = new Map<string, number>(DRIFT_KINDS.map((k) => [k, 0]));
        for (const f of store.snapshot().get('drift', DRIFT_ROW_ID)?.findings ?? []) counts.set(f.kind, (counts.get(f.kind) ?? 0) + 1);
        for (const [kind, n] of counts) this.set({ kind }, n);
      },
    });
  }

  /** The exposition text and its content type. Reads the store; never throws on an empty store. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
