// The chart's scales, pure: values in the series' unit (bytes in
// KiB/MiB/GiB, percent, MHz, count), round y ticks, round time ticks and their
// labels. No DOM and no JSX, so the tests read it as it is.

export type ChartUnit = 'bytes' | 'percent' | 'MHz' | 'count';

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
export function timeLabel(t: number, span: number): string {
  const d = new Date(t);
  const hm = `${two(d.getHours())}:${two(d.getMinutes())}`;
  if (span > 86_400_000) return `${d.getDate()} ${d.toLocaleString(undefined, { month: 'short' })} ${hm}`;
  return span < 600_000 ? `${hm}:${two(d.getSeconds())}` : hm;
}
