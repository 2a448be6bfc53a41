// The UI's one time-series chart: an SVG line chart with a time x-axis, a
// y-axis whose ticks are in the series' unit (bytes in KiB/MiB/GiB, percent,
// MHz, count), and a legend when it draws more than one series. No library:
// the scales and ticks are computed in chart-scale.ts, the SVG is drawn at the box's real
// width (a ResizeObserver) so its labels stay legible on a phone.

import { useEffect, useRef, useState } from 'preact/hooks';
import { formatValue, timeLabel, timeTicks, valueTicks, type ChartUnit } from './chart-scale';

export type { ChartUnit } from './chart-scale';

export interface ChartPoint {
  /** Milliseconds since the epoch. */
  t: number;
  v: number;
}

export interface ChartSeries {
  name: string;
  points: ChartPoint[];
}

const COLORS = ['var(--accent)', '#d97706', '#16a34a', '#9333ea', '#dc2626', '#0891b2'];

/** The box's width in pixels, followed as it changes (`fallback` until it is measured). */
function useWidth(fallback: number): [{ current: HTMLDivElement | null }, number] {
  const ref = useRef<HTMLDivElement | null>(null);
  const [width, setWidth] = useState(fallback);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = (): void => {
      const w = Math.floor(el.clientWidth);
      if (w > 0) setWidth(w);
    };
    measure();
    if (typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, width];
}

/**
 * A line chart of `series` over time. The SVG carries `role="img"`,
 * `aria-label={label}`, `data-chart={label}`, `data-last` (the first
 * series' last value, formatted as displayed) and `data-points` (the first
 * series' number of points); each legend entry carries
 * `data-series` and its own `data-last`. Series with no points are listed in
 * the legend as "no data"; with no point at all the chart says so.
 */
export function TimeChart({ series, unit, label, height = 180 }: { series: ChartSeries[]; unit: ChartUnit; label: string; height?: number }) {
  const [boxRef, width] = useWidth(600);
  const drawn = series.map((s) => ({ ...s, points: [...s.points].filter((p) => Number.isFinite(p.t) && Number.isFinite(p.v)).sort((a, b) => a.t - b.t) }));
  const all = drawn.flatMap((s) => s.points);
  const lastOf = (s: ChartSeries): string | undefined => {
    const p = s.points[s.points.length - 1];
    return p ? formatValue(unit, p.v) : undefined;
  };
  const last = drawn[0] ? lastOf(drawn[0]) : undefined;

  let t0 = Math.min(...all.map((p) => p.t));
  let t1 = Math.max(...all.map((p) => p.t));
  if (all.length === 0) t0 = t1 = Date.now();
  // Under two seconds no two whole seconds need fall within: widen to a minute.
  if (t1 - t0 < 2000) {
    t0 -= 30_000;
    t1 += 30_000;
  }
  const vMin = Math.min(0, ...all.map((p) => p.v));
  const vMax = Math.max(unit === 'percent' && all.length === 0 ? 100 : 0, ...all.map((p) => p.v));
  const yTicks = valueTicks(unit, vMin, vMax);
  const yLo = yTicks[0]!;
  const yHi = yTicks[yTicks.length - 1]!;
  const xTicks = timeTicks(t0, t1, Math.max(2, Math.floor(width / 110)));
  const yLabels = yTicks.map((v) => formatValue(unit, v));

  const left = Math.max(...yLabels.map((l) => l.length)) * 7 + 12;
  const right = 12;
  const top = 8;
  const bottom = 24;
  const plotW = Math.max(10, width - left - right);
  const plotH = Math.max(10, height - top - bottom);
  const x = (t: number): number => left + ((t - t0) / (t1 - t0)) * plotW;
  const y = (v: number): number => top + plotH - ((v - yLo) / Math.max(1e-9, yHi - yLo)) * plotH;
  const span = t1 - t0;

  return (
    <figure class="chart">
      <div class="chart-box" ref={boxRef}>
        <svg
          width={width}
          height={height}
          viewBox={`0 0 ${width} ${height}`}
          role="img"
          aria-label={label}
          data-chart={label}
          data-last={last ?? ''}
          data-points={drawn[0]?.points.length ?? 0}
        >
          <g class="grid-lines">
            {yTicks.map((v, i) => (
              <g>
                <line x1={left} x2={left + plotW} y1={y(v)} y2={y(v)} />
                <text class="tick y" x={left - 6} y={y(v)} dy="0.32em" text-anchor="end">
                  {yLabels[i]}
                </text>
              </g>
            ))}
          </g>
          <g class="axis">
            <line x1={left} x2={left} y1={top} y2={top + plotH} />
            <line x1={left} x2={left + plotW} y1={top + plotH} y2={top + plotH} />
            {xTicks.map((t) => (
              <g>
                <line x1={x(t)} x2={x(t)} y1={top + plotH} y2={top + plotH + 4} />
                <text class="tick x" x={x(t)} y={top + plotH + 16} text-anchor="middle">
                  {timeLabel(t, span)}
                </text>
              </g>
            ))}
          </g>
          {drawn.map((s, i) =>
            s.points.length === 1 ? (
              <circle cx={x(s.points[0]!.t)} cy={y(s.points[0]!.v)} r={3} fill={COLORS[i % COLORS.length]} />
            ) : (
              <polyline
                points={s.points.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ')}
                fill="none"
                stroke={COLORS[i % COLORS.length]}
                stroke-width="2"
                stroke-linejoin="round"
              />
            ),
          )}
          {all.length === 0 ? (
            <text class="chart-empty" x={left + plotW / 2} y={top + plotH / 2} text-anchor="middle">
              No data yet
            </text>
          ) : null}
        </svg>
      </div>
      {drawn.length > 1 ? (
        <ul class="legend" aria-label={`${label}: legend`}>
          {drawn.map((s, i) => (
            <li data-series={s.name} data-last={lastOf(s) ?? ''}>
              <span class="swatch" style={{ background: COLORS[i % COLORS.length] }} aria-hidden="true" />
              {s.name}: {lastOf(s) ?? 'no data'}
            </li>
          ))}
        </ul>
      ) : (
        <figcaption>
          {last !== undefined ? `${label}: ${last} now` : `${label}: no data yet`}
          {all.length > 1 ? `, ${all.length} samples since ${timeLabel(t0, span)}` : ''}
        </figcaption>
      )}
    </figure>
  );
}
