// Small pieces the pages share: formatting, tables, badges, the usage bar,
// and the action button that shows its progress (charts: chart.tsx).

import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, type VolumeUsage } from './api';

export function short(id: string | undefined): string {
  return id ? id.slice(0, 8) : '-';
}

export function bytes(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 100 || i === 0 || Number.isInteger(v) ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

export function ago(ms: number | undefined): string {
  if (!ms) return '-';
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < 0) return 'just now';
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

export function time(ms: number | undefined): string {
  return ms ? new Date(ms).toLocaleString() : '-';
}

const GOOD = new Set(['running', 'ready', 'complete', 'healthy', 'taken', 'published', 'live', 'true', 'mounted', 'run']);
const BAD = new Set(['failed', 'lost', 'down', 'unhealthy', 'abnormal', 'refused', 'blocked', 'false', 'drift']);

/**
 * A coloured word: green for good states, red for bad, grey otherwise. A
 * `dead` job is grey: it ended (its allocations say whether well); `failed`
 * is red.
 */
export function Badge({ value, label }: { value: string; label?: string }) {
  const tone = GOOD.has(value) ? 'good' : BAD.has(value) ? 'bad' : 'neutral';
  return <span class={`badge ${tone}`}>{label ?? value}</span>;
}

export function Healthy({ healthy }: { healthy: boolean }) {
  return <Badge value={healthy ? 'healthy' : 'unhealthy'} />;
}

export function Section({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section class="card" aria-labelledby={id ? `${id}-h` : undefined} data-section={id}>
      <h2 id={id ? `${id}-h` : undefined}>{title}</h2>
      {children}
    </section>
  );
}

/**
 * A table that scrolls sideways within its own box on a narrow screen, or
 * with `cards` turns into one card per row there (each cell labelled with
 * its column). `empty` shows when there are no rows; `rowClass` names a
 * row's class (e.g. `flag` for a row that needs a look).
 */
export function Table({ head, rows, empty, label, cards, rowClass }: {
  head: string[];
  rows: ComponentChildren[][];
  empty: string;
  label: string;
  cards?: boolean;
  rowClass?: (index: number) => string | undefined;
}) {
  if (rows.length === 0) return <p class="empty">{empty}</p>;
  return (
    <div class={cards ? 'table-wrap cards' : 'table-wrap'} tabIndex={0} role="region" aria-label={label}>
      <table>
        <thead>
          <tr>
            {head.map((h) => (
              <th scope="col">{h}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr class={rowClass?.(i)}>
              {r.map((c, j) => (
                <td data-label={head[j]}>{c}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Label/value pairs. */
export function Facts({ items }: { items: Array<[string, ComponentChildren]> }) {
  return (
    <dl class="facts">
      {items.map(([k, v]) => (
        <div>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

export function Loading({ error }: { error: Error | undefined }) {
  if (error) return <p class="error" role="alert">{error.message}</p>;
  return <p class="loading">Loading…</p>;
}

/** How full a volume is, as a bar and words. */
export function UsageBar({ usage }: { usage: VolumeUsage }) {
  const total = usage.bytesTotal ?? 0;
  const used = usage.bytesUsed ?? (total && usage.bytesAvailable !== undefined ? total - usage.bytesAvailable : undefined);
  const pct = total && used !== undefined ? Math.min(100, (used / total) * 100) : undefined;
  return (
    <div class="usage">
      <div class="bar" role="meter" aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct ?? 0} aria-label="bytes used">
        <span style={{ width: `${pct ?? 0}%` }} class={pct !== undefined && pct > 90 ? 'full' : ''} />
      </div>
      <span data-usage-bytes={used ?? ''} data-usage-total={total}>
        {bytes(used)} used of {bytes(total)}
        {pct !== undefined ? ` (${pct.toFixed(1)}%)` : ''}
        {usage.inodesTotal ? `, ${usage.inodesUsed ?? 0} of ${usage.inodesTotal} inodes` : ''}
        {usage.node ? ` on node ${short(usage.node)}` : ''}
        {usage.reportedAt ? `, reported ${ago(usage.reportedAt)}` : ''}
      </span>
    </div>
  );
}

/**
 * A button for a change: asks to confirm, shows what `run` reports while it
 * works (a long action reports each step it sees on the event stream), then
 * its last word, or the API's refusal in words.
 */
export function ActionButton(props: {
  label: string;
  confirm: string;
  run: (progress: (message: string) => void) => Promise<string>;
  danger?: boolean;
  /** Why the action cannot be taken now (the button stays, with its last progress). */
  disabledReason?: string;
}) {
  const [state, setState] = useState<{ busy: boolean; message?: string; error?: string }>({ busy: false });
  const click = async (): Promise<void> => {
    if (!window.confirm(props.confirm)) return;
    setState({ busy: true, message: `${props.label}…` });
    try {
      const done = await props.run((message) => setState({ busy: true, message }));
      setState({ busy: false, message: done });
    } catch (err) {
      const msg = err instanceof ApiError ? `${err.message} (${err.code})` : (err as Error).message;
      setState({ busy: false, error: msg });
    }
  };
  return (
    <span class="action">
      <button type="button" class={props.danger ? 'danger' : ''} disabled={state.busy || !!props.disabledReason}
        title={props.disabledReason}
        aria-busy={state.busy}
        onClick={() => void click()}>
        {state.busy ? `${props.label}…` : props.label}
      </button>
      {state.message && !state.error ? (
        <span class="progress" role="status" aria-live="polite">
          {state.message}
        </span>
      ) : null}
      {state.error ? (
        <span class="error" role="alert">
          {state.error}
        </span>
      ) : null}
    </span>
  );
}
