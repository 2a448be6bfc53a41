// The UI's one time-series chart: an SVG line chart with a time x-axis, a
// y-axis whose ticks are in the series' unit (bytes in KiB/MiB/GiB, percent,
// MHz, count), and a legend when it draws more than one series. No library:
// the scales and ticks are computed here, the SVG is drawn at the box's real
// width (a ResizeObserver) so its labels stay legible on a phone.

import { useEffect, useRef, useState } from 'preact/hooks';

export type ChartUnit = 'bytes' | 'percent' | 'MHz' | 'count';

export interface ChartPoint {
  /** Milliseconds since the epoch. */
  t: number;
  v: number;
}

export interface ChartSeries {
  name: string;
  points: ChartPoint[];
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** A number with at most `digits` decimals, without trailing zeros. Pure. */
function trim(v: number, digits: number): string {
  return String(Number(v.toFixed(digits)));
}

/** `v` in `unit` as the chart shows it (ticks, legend, `data-last`): "1.5 MiB", "42%", "1.2 GHz", "7". Pure. */
export function formatValue(unit: ChartUnit, v: number): string {
  if (!Number.isFinite(v)) return '-';
  switch (unit) {
    case 'bytes': {
      let i = 0;
      let x = Math.abs(v);
      while (x >= 1024 && i < BYTE_UNITS.length - 1) {
        x /= 1024;
        i++;
      }
      return `${v < 0 ? '-' : ''}${trim(x, x >= 100 || i === 0 ? 0 : 1)} ${BYTE_UNITS[i]}`;
    }
    case 'percent':
      return `${trim(v, Math.abs(v) >= 10 ? 0 : 1)}%`;
    case 'MHz':
      return Math.abs(v) >= 1000 ? `${trim(v / 1000, 2)} GHz` : `${trim(v, Math.abs(v) >= 10 ? 0 : 1)} MHz`;
    case 'count':
      return trim(v, Math.abs(v) >= 10 ? 0 : 2);
  }
}

/** The smallest of 1, 2, 2.5, 5 (times a power of ten) that is at least `raw`. Pure. */
function niceStep(raw: number): number {
  if (raw <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
}

/**
 * Y-axis ticks from 0 (or below, for negative values) to at least `max`,
 * about `want` of them, at round values of the unit: bytes by powers of two
 * of KiB/MiB/GiB, counts by whole numbers. Pure.
 */
export function valueTicks(unit: ChartUnit, min: number, max: number, want = 4): number[] {
  const lo = Math.min(0, min);
  let hi = Math.max(max, lo);
  if (hi === lo) hi = lo + (unit === 'percent' ? 100 : unit === 'bytes' ? 1024 : 1);
  let scale = 1;
  if (unit === 'bytes') while (scale * 1024 <= (hi - lo) / 2) scale *= 1024;
  const raw = (hi - lo) / scale / want;
  // Bytes step by powers of two of their unit (512 KiB, 1 MiB, 2 MiB), so a tick lands on 1.5 MiB, not 1000 KiB.
  let step = unit === 'bytes' ? 2 ** Math.ceil(Math.log2(raw)) * scale : niceStep(raw) * scale;
  if (unit === 'count' || unit === 'bytes') step = Math.max(1, Math.ceil(step));
  const ticks: number[] = [];
  for (let v = Math.floor(lo / step) * step; ticks.length < 50; v += step) {
    ticks.push(v);
    if (v >= hi) break;
  }
  return ticks;
}

const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800].map((s) => s * 1000);

/**
 * X-axis ticks: round times (every 10 s, 1 min, 1 h...) within [t0, t1],
 * about `want` of them, and never fewer than two when the span holds two
 * whole seconds: a step that would leave one tick gives way to the next
 * smaller one. Pure.
 */
export function timeTicks(t0: number, t1: number, want = 5): number[] {
  const span = Math.max(1, t1 - t0);
  let i = TIME_STEPS.findIndex((s) => span / s <= want);
  if (i < 0) i = TIME_STEPS.length - 1;
  let ticks = ticksEvery(t0, t1, TIME_STEPS[i]!);
  while (ticks.length < 2 && i > 0) ticks = ticksEvery(t0, t1, TIME_STEPS[--i]!);
  return ticks;
}

/** The multiples of `step` within [t0, t1], at most 20; rounded in local time for steps of an hour or more. Pure. */
function ticksEvery(t0: number, t1: number, step: number): number[] {
  // A tick at 00:00 local time, not at the UTC offset.
  const offset = step >= 3_600_000 ? new Date(t0).getTimezoneOffset() * 60_000 : 0;
  const first = Math.ceil((t0 - offset) / step) * step + offset;
  const ticks: number[] = [];
  for (let t = first; t <= t1 && ticks.length < 20; t += step) ticks.push(t);
  return ticks;
}

function two(n: number): string {
  return String(n).padStart(2, '0');
}

/** A tick's time label, as precise as the span needs: "14:05:30", "14:05", or "29 Nov 14:00" beyond a day. */
function timeLabel(t: number, span: number): string {
  const d = new Date(t);
  const hm = `${two(d.getHours())}:${two(d.getMinutes())}`;
  if (span > 86_400_000) return `${d.getDate()} ${d.toLocaleString(undefined, { month: 'short' })} ${hm}`;
  return span < 600_000 ? `${hm}:${two(d.getSeconds())}` : hm;
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
