// The server's Prometheus metrics, computed from the state at scrape time,
// and Nomad's JSON summary of a registry.
export { ServerMetrics, type ServerMetricsOptions } from './server-metrics.js';
export { metricsSummary, goTimeString } from './metrics-summary.js';
