// `GET /v1/metrics` as Nomad's agents serve it: the metrics as Nomad's JSON
// summary, or with `?format=prometheus` the Prometheus text (what a
// Prometheus scrape of a Nomad agent asks: `metrics_path: /v1/metrics`,
// `params: { format: [prometheus] }`); any other format is JSON, as Nomad's.
// Registered by the server's API and by a client agent's own listener.

import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { MetricsSummary } from '../../api/index.js';
import { metricsSummary } from '../metrics/index.js';

/** Adds `GET /v1/metrics` for `registry`, for callers with `access` (read: management and read-only tokens). */
export function registerMetricsRoute(app: FastifyInstance, registry: Registry, access: 'read' = 'read'): void {
  app.get<{ Querystring: { format?: string } }>('/v1/metrics', { config: { access } }, async (req, reply) => {
    const format = req.query.format;
    if (format === 'prometheus') return reply.header('Content-Type', registry.contentType).send(await registry.metrics());
    const summary: MetricsSummary = await metricsSummary(registry);
    return summary;
  });
}
