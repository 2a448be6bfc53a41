// The server's Prometheus metrics, computed from the state at scrape time.
export { ServerMetrics, type ServerMetricsOptions } from './server-metrics.js';
