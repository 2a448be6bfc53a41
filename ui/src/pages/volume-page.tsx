// A volume: capabilities, capacity, usage and condition (a chart of usage
// over time with axes in bytes), claims with their release state, the claim
// history in words (claimed, published, release started, released, with the
// reason), topology, drift, and detaching (writers only).

import { useRoute } from 'preact-iso/router';
import { api, fromGoTime, HEALTH_FIELDS, usageHistory, volumeCondition, volumeDrift, volumeUsage, type Claim, type Volume, type VolumeUsage } from '../api';
import { TimeChart, type ChartSeries } from '../chart';
import { Badge, Facts, Loading, Section, Table, UsageBar, bytes, short, time } from '../components';
import { useLive } from '../live';
import { useCanWrite } from '../session';
import { FINDING_WORDS, claimHistory, claimOf } from '../storage-words';
import { DetachPanel } from './volume-detach';

/** Usage changes without an event on the stream: the volume pages read it again this often. */
export const USAGE_REFRESH_MS = 5_000;

/** A volume's condition as a badge: `normal`, or `abnormal: <the plugin's message>`. */
export function ConditionBadge({ abnormal, message }: { abnormal: boolean; message: string }) {
  return <Badge value={abnormal ? 'abnormal' : 'healthy'} label={abnormal ? `abnormal: ${message}` : 'normal'} />;
}

/** The usage history as chart series: bytes used per node (named by node when several report), and the capacity the nodes report. */
function usageSeries(samples: VolumeUsage[]): ChartSeries[] {
  const nodes = [...new Set(samples.map((s) => s.node ?? ''))];
  const used = nodes.map((n) => ({
    name: nodes.length > 1 ? `used on node ${short(n)}` : 'used',
    points: samples.filter((s) => (s.node ?? '') === n && s.reportedAt !== undefined && s.bytesUsed !== undefined).map((s) => ({ t: s.reportedAt!, v: s.bytesUsed! })),
  }));
  const capacity = samples.filter((s) => s.reportedAt !== undefined && s.bytesTotal).map((s) => ({ t: s.reportedAt!, v: s.bytesTotal! }));
  return capacity.length ? [...used, { name: 'capacity', points: capacity }] : used;
}

function ClaimTable({ v }: { v: Volume }) {
  return (
    <Table
      label="claims"
      cards
      head={['Allocation', 'Node', 'Mode', 'Access', 'State', 'Controller', 'Release', 'Claimed']}
      empty="No claims: no allocation uses this volume."
      rows={v.BerthClaims.map((c: Claim) => {
        const release = c.State === 'taken' ? '-' : `${c.ReleaseReason || 'releasing'}${c.ReleaseAttempts ? ` (attempt ${c.ReleaseAttempts})` : ''}${c.LastError ? `: ${c.LastError}` : ''}`;
        return [
          <a href={`/ui/allocations/${c.AllocationID}`} data-claim={c.AllocationID}>
            {short(c.AllocationID)}
          </a>,
          <a href={`/ui/nodes/${c.NodeID}`}>{short(c.NodeID)}</a>,
          c.Mode,
          `${c.AccessMode}, ${c.AttachmentMode}`,
          <Badge value={c.State} />,
          c.ControllerPublish,
          release,
          time(fromGoTime(c.ClaimTime)),
        ];
      })}
    />
  );
}

export function VolumePage() {
  const { params } = useRoute();
  const ns = params['ns'] ?? 'default';
  const id = params['id'] ?? '';
  const canWrite = useCanWrite();
  const { data, error } = useLive(`volume/${ns}/${id}`, ['CSIVolume', 'claim', 'CSIPlugin', ...HEALTH_FIELDS.topics], async () => {
    const [volume, history, usage, drift] = await Promise.all([
      api.volume(ns, id),
      api.history([`claim:${id}`], 0),
      usageHistory(ns, id),
      volumeDrift(ns, id),
    ]);
    return { volume, history: history.filter((e) => claimOf(e)?.VolumeID === id || e.Key.split('/').map(decodeURIComponent).includes(id)), usage, drift };
  }, { everyMs: USAGE_REFRESH_MS });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { volume: v, history, usage, drift } = data;
  const reports = volumeUsage(v);
  const condition = volumeCondition(v);
  return (
    <main id="main">
      <h1>
        Volume {v.Name || v.ID} {condition ? <ConditionBadge abnormal={condition.Abnormal} message={condition.Message} /> : null}{' '}
        {drift.length > 0 ? <Badge value="drift" label={`drift: ${drift.length}`} /> : null}
      </h1>
      <Facts
        items={[
          ['ID', v.ID],
          ['Namespace', v.Namespace],
          ['External ID', <code>{v.ExternalID}</code>],
          ['Plugin', <a href={`/ui/plugins/${encodeURIComponent(v.PluginID)}`}>{v.PluginID}</a>],
          ['Provider', v.Provider],
          ['Schedulable', v.Schedulable ? 'yes' : 'no'],
          ['Capacity', <span data-fact="capacity">{bytes(v.Capacity)}</span>],
          ['Requested', `${bytes(v.RequestedCapacityMin)} to ${bytes(v.RequestedCapacityMax)}`],
          ['Secrets', v.BerthSecretNames.length ? v.BerthSecretNames.map((s) => `${s} (hidden)`).join(', ') : 'none'],
        ]}
      />
      <Section title="Usage and condition" id="usage">
        {reports.length === 0 ? (
          <p class="muted" data-usage="none">
            No usage reported.
          </p>
        ) : (
          reports.map((u) => <UsageBar usage={u} />)
        )}
        {condition ? (
          <p data-condition={condition.Abnormal ? 'abnormal' : 'normal'}>
            Condition: <ConditionBadge abnormal={condition.Abnormal} message={condition.Message} />
          </p>
        ) : (
          <p class="muted">No condition reported.</p>
        )}
        {usage.length > 0 ? <TimeChart series={usageSeries(usage)} unit="bytes" label="bytes used" /> : null}
      </Section>
      <Section title={`Claims (${v.BerthClaims.length})`} id="claims">
        <ClaimTable v={v} />
      </Section>
      {canWrite ? <DetachPanel v={v} /> : null}
      {drift.length > 0 ? (
        <Section title="Drift" id="drift">
          <Table
            label="drift"
            cards
            head={['Difference', 'What', 'Node', 'Repair']}
            empty=""
            rows={drift.map((d) => [FINDING_WORDS[d.Kind] ?? d.Kind, d.Message, d.NodeID ? short(d.NodeID) : '-', d.Repair ? <code>{d.Repair}</code> : '-'])}
          />
          <p>
            <a href="/ui/volumes/doctor">Open the volume doctor</a> to check again and repair what is safe.
          </p>
        </Section>
      ) : null}
      <Section title="Capabilities" id="capabilities">
        <Table label="capabilities" head={['Access mode', 'Attachment']} empty="None." rows={(v.RequestedCapabilities ?? []).map((c) => [c.AccessMode, c.AttachmentMode])} />
      </Section>
      <Section title="Topology" id="topology">
        <Table
          label="topology"
          head={['Segment', 'Value']}
          empty="Accessible from every node."
          rows={(v.Topologies ?? []).flatMap((t) => Object.entries(t?.Segments ?? {}).map(([k, val]) => [k, val]))}
        />
      </Section>
      <Section title="Claim history" id="history">
        <Table
          label="claim history"
          cards
          head={['Index', 'What happened', 'Allocation', 'Node', 'Mode', 'Details']}
          empty="No claim has been taken yet."
          rows={claimHistory(history).map((r) => [
            String(r.index),
            <span data-change={r.change}>{r.change}</span>,
            <a href={`/ui/allocations/${r.allocId}`}>{short(r.allocId)}</a>,
            r.nodeId ? <a href={`/ui/nodes/${r.nodeId}`}>{short(r.nodeId)}</a> : '-',
            r.mode,
            r.detail,
          ])}
        />
      </Section>
    </main>
  );
}
