// The volumes: every CSI volume with its claims, capacity, usage, condition
// and drift at a glance (one read of the list: its rows carry Berth's
// extras), abnormal and drifting volumes flagged first; then the dynamic
// host volumes. A volume's own page is volume-page.tsx.

import { api, volumeUsage } from '../api';
import { rowTrouble, storageApi, type VolumeRow } from '../api-storage';
import { Badge, Loading, Section, Table, bytes, short } from '../components';
import { useLive } from '../live';
import { ConditionBadge, USAGE_REFRESH_MS } from './volume-page';

export { VolumePage } from './volume-page';

/** Topics whose changes may change a row: the volume, its claims, its plugin, its condition, the drift check. */
const LIST_TOPICS = ['CSIVolume', 'claim', 'CSIPlugin', 'volume-condition', 'drift'];

function plural(n: number, one: string): string {
  return `${n} ${one}${n === 1 ? '' : 's'}`;
}

/** Claims in words: "1 writer", "2 readers, 1 releasing", "none". */
function claimsCell(v: VolumeRow) {
  const parts = [
    v.CurrentWriters ? plural(v.CurrentWriters, 'writer') : '',
    v.CurrentReaders ? plural(v.CurrentReaders, 'reader') : '',
    v.BerthClaimsReleasing ? `${v.BerthClaimsReleasing} releasing` : '',
  ].filter(Boolean);
  return <span data-claims={v.ID} data-count={v.CurrentWriters + v.CurrentReaders + v.BerthClaimsReleasing}>{parts.join(', ') || 'none'}</span>;
}

/** The latest usage, summed over the nodes that report it, as a small bar and words. */
function usageCell(v: VolumeRow) {
  const reports = volumeUsage(v).filter((u) => u.bytesUsed !== undefined);
  if (reports.length === 0) return <span class="muted" data-usage-bytes="">not reported</span>;
  const used = Math.max(...reports.map((u) => u.bytesUsed!));
  const total = Math.max(...reports.map((u) => u.bytesTotal ?? 0)) || v.BerthCapacity;
  const pct = total ? Math.min(100, (used / total) * 100) : undefined;
  return (
    <span class="mini-usage" data-usage-bytes={used} data-usage-total={total}>
      <span class="bar mini" aria-hidden="true">
        <span style={{ width: `${pct ?? 0}%` }} class={pct !== undefined && pct > 90 ? 'full' : ''} />
      </span>
      {bytes(used)}
      {total ? ` of ${bytes(total)} (${pct!.toFixed(0)}%)` : ''}
    </span>
  );
}

function conditionCell(v: VolumeRow) {
  const c = v.BerthCondition;
  if (!c) return <span class="muted" data-condition="none">not reported</span>;
  return (
    <span data-condition={c.Abnormal ? 'abnormal' : 'normal'}>
      <ConditionBadge abnormal={c.Abnormal} message={c.Message} />
    </span>
  );
}

function driftCell(v: VolumeRow) {
  if (v.BerthDriftFindings === 0) return <span class="muted" data-drift="0">none</span>;
  return (
    <a href="/ui/volumes/doctor" data-drift={v.BerthDriftFindings}>
      <Badge value="drift" label={plural(v.BerthDriftFindings, 'difference')} />
    </a>
  );
}

/** Dynamic host volumes beside the CSI ones (their changes are not on the event stream: read again with the usage). */
function HostVolumesSection() {
  const { data } = useLive('host-volumes', ['Node', 'Allocation'], () => api.hostVolumes(), { everyMs: USAGE_REFRESH_MS });
  if (!data?.length) return null;
  return (
    <Section title="Dynamic host volumes" id="host-volumes">
      <Table
        label="host volumes"
        cards
        empty="No dynamic host volume. Create one with a volume file of type host."
        head={['Volume', 'Type', 'ID', 'Namespace', 'Plugin', 'Node', 'State']}
        rows={data.map((v) => [
          v.Name,
          'host',
          short(v.ID),
          v.Namespace,
          v.PluginID || '-',
          <a href={`/ui/nodes/${encodeURIComponent(v.NodeID)}`}>{short(v.NodeID)}</a>,
          <Badge value={v.State === 'ready' ? 'healthy' : v.State === 'pending' ? 'pending' : 'abnormal'} label={v.State} />,
        ])}
      />
    </Section>
  );
}

const volumeHref = (v: { Namespace: string; ID: string }): string => `/ui/volumes/${encodeURIComponent(v.Namespace)}/${encodeURIComponent(v.ID)}`;

export function VolumesPage() {
  const { data, error } = useLive('volumes', LIST_TOPICS, async () => (await storageApi.volumeList()).body, { everyMs: USAGE_REFRESH_MS });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  // Volumes that need a look come first, in the list's order otherwise.
  const rows = [...data].sort((a, b) => Number(rowTrouble(b).length > 0) - Number(rowTrouble(a).length > 0));
  const flagged = rows.filter((v) => rowTrouble(v).length > 0);
  const claimed = data.filter((v) => v.CurrentReaders + v.CurrentWriters > 0).length;
  return (
    <main id="main">
      <h1>Volumes</h1>
      <p class="summary" data-summary="volumes">
        {plural(data.length, 'CSI volume')}, {claimed} claimed.{' '}
        {flagged.length === 0 ? (
          <span class="ok">None abnormal or drifting.</span>
        ) : (
          <strong class="error">{plural(flagged.length, 'volume')} need a look.</strong>
        )}{' '}
        <a href="/ui/volumes/doctor">Volume doctor</a>
      </p>
      {flagged.length > 0 ? (
        <ul class="trouble" aria-label="volumes that need a look">
          {flagged.map((v) => (
            <li data-flagged={v.ID}>
              <a href={volumeHref(v)}>{v.ID}</a>: {rowTrouble(v).join('; ')}
            </li>
          ))}
        </ul>
      ) : null}
      <Table
        label="volumes"
        cards
        rowClass={(i) => (rowTrouble(rows[i]!).length > 0 ? 'flag' : undefined)}
        head={['Volume', 'Namespace', 'Plugin', 'Schedulable', 'Claims', 'Capacity', 'Usage', 'Condition', 'Drift']}
        empty="No CSI volume registered. Create one with berth volume create <file>."
        rows={rows.map((v) => [
          <a href={volumeHref(v)}>{v.ID}</a>,
          v.Namespace,
          <a href={`/ui/plugins/${encodeURIComponent(v.PluginID)}`}>{v.PluginID}</a>,
          v.Schedulable ? 'yes' : 'no',
          claimsCell(v),
          bytes(v.BerthCapacity),
          usageCell(v),
          conditionCell(v),
          driftCell(v),
        ])}
      />
      <HostVolumesSection />
    </main>
  );
}
