// Nomad's CLI layouts, for commands that print what Nomad's print: `key =
// value` blocks (formatKV) and aligned tables (formatList), each empty cell
// shown as `<none>` (columnize's Empty, so that awk finds every column),
// sizes as go-humanize's IBytes and times as Nomad's CLI words them.

/** `key = value` lines, the keys padded to one width; an empty value is `<none>`. Pure. */
export function formatKV(rows: ReadonlyArray<readonly [string, string | number | boolean]>): string[] {
  const width = Math.max(0, ...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)} = ${cell(v)}`);
}

// eslint-disable-next-line no-control-regex -- matching the terminal's colour codes is the point
const ANSI_SGR = /\x1b\[[0-9;]*m/g;
const visible = (c: string): number => c.replace(ANSI_SGR, '').length;

/** A table, header first, its columns two spaces apart (aligned by what is visible: cells may be coloured); an empty cell is `<none>`. Pure. */
export function formatList(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number | boolean>>): string[] {
  const all = [header.map(cell), ...rows.map((r) => r.map(cell))];
  const widths = header.map((_, i) => Math.max(...all.map((r) => visible(r[i] ?? ''))));
  return all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c + ' '.repeat(Math.max(0, (widths[i] ?? 0) - visible(c))))).join('  '));
}

function cell(v: string | number | boolean): string {
  const s = String(v);
  return s === '' ? '<none>' : s;
}

const IEC = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];

/** Bytes as go-humanize's IBytes: `512 B`, `1.5 KiB`, `256 MiB`. Pure. */
export function iBytes(bytes: number): string {
  if (bytes < 10) return `${Math.max(0, Math.round(bytes))} B`;
  const e = Math.min(Math.floor(Math.log(bytes) / Math.log(1024)), IEC.length - 1);
  const v = Math.floor((bytes / 1024 ** e) * 10 + 0.5) / 10;
  return `${v < 10 ? v.toFixed(1) : v.toFixed(0)} ${IEC[e]}`;
}

/** Nomad's formatTime: `2026-01-02T03:04:05Z`; '' for Go's zero time. Pure. */
export function formatTime(goTime: string): string {
  if (!goTime || goTime.startsWith('0001-01-01')) return '';
  const ms = Date.parse(goTime);
  return Number.isNaN(ms) ? goTime : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Nomad's prettyTimeDiff: the two largest non-zero units between `ms` and now (`3m10s ago`, `1h ago`, `2d4h from now`). Pure. */
export function prettyTimeDiff(ms: number, now = Date.now()): string {
  if (!ms) return '';
  const diff = Math.round(now / 1000) - Math.round(ms / 1000);
  const suffix = diff >= 0 ? 'ago' : 'from now';
  let u = Math.abs(diff);
  const parts: string[] = [];
  const take = (n: number, unit: string): void => {
    if (n > 0) parts.unshift(`${n}${unit}`);
  };
  take(u % 60, 's');
  u = Math.floor(u / 60);
  take(u % 60, 'm');
  u = Math.floor(u / 60);
  take(u % 24, 'h');
  u = Math.floor(u / 24);
  take(u % 30, 'd');
  u = Math.floor(u / 30);
  take(u % 12, 'mo');
  take(Math.floor(u / 12), 'y');
  return parts.length ? `${parts.slice(0, 2).join('')} ${suffix}` : `0s ${suffix}`;
}
