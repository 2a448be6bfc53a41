// A Prometheus registry as Nomad's JSON metrics summary (api.MetricsSummary,
// what `GET /v1/metrics` answers without `format=prometheus`): gauges as
// Gauges, counters as Counters, histograms and summaries as Samples (their
// count and sum per label set).

import type { Registry } from 'prom-client';
import type { GaugeValue, MetricsSummary, SampledValue } from '../../api/index.js';

type Labels = Record<string, string>;

function labelsOf(raw: Record<string, unknown> | undefined, drop?: string): Labels {
  const out: Labels = {};
  for (const [k, v] of Object.entries(raw ?? {})) if (k !== drop) out[k] = String(v);
  return out;
}

function sample(name: string, count: number, sum: number, labels: Labels): SampledValue {
  return { Name: name, Count: count, Rate: 0, Sum: sum, Min: 0, Max: 0, Mean: count ? sum / count : 0, Stddev: 0, Labels: labels };
}

/** Go's time.String() of `at` in UTC (`2026-01-02 15:04:05 +0000 UTC`), as Nomad's summary stamps it. */
export function goTimeString(at: Date): string {
  return `${at.toISOString().slice(0, 19).replace('T', ' ')} +0000 UTC`;
}

/**
 * Collects the registry (running its gauges' collect functions, as a scrape
 * does) and converts it. Resolves with the summary; rejects when a
 * collector throws.
 */
export async function metricsSummary(registry: Registry, at = new Date()): Promise<MetricsSummary> {
  const gauges: GaugeValue[] = [];
  const counters: SampledValue[] = [];
  const samples: SampledValue[] = [];
  for (const m of await registry.getMetricsAsJSON()) {
    // prom-client's types call `type` an enum; at run time it is the Prometheus word ('gauge', 'counter', ...).
    const type = String(m.type);
    const values = m.values as Array<{ value: number; labels?: Record<string, unknown>; metricName?: string }>;
    if (type === 'gauge') {
      for (const v of values) gauges.push({ Name: m.name, Value: v.value, Labels: labelsOf(v.labels) });
    } else if (type === 'counter') {
      for (const v of values) counters.push(sample(m.name, 1, v.value, labelsOf(v.labels)));
    } else {
      // Histograms and summaries: one sample per label set, from its _count and _sum series.
      const sets = new Map<string, { labels: Labels; count: number; sum: number }>();
      for (const v of values) {
        const which = v.metricName === `${m.name}_count` ? 'count' : v.metricName === `${m.name}_sum` ? 'sum' : undefined;
        if (!which) continue;
        const labels = labelsOf(v.labels);
        const key = JSON.stringify(labels);
        const set = sets.get(key) ?? { labels, count: 0, sum: 0 };
        set[which] = v.value;
        sets.set(key, set);
      }
      for (const s of sets.values()) samples.push(sample(m.name, s.count, s.sum, s.labels));
    }
  }
  return { Timestamp: goTimeString(at), Gauges: gauges, Points: [], Counters: counters, Samples: samples };
}
