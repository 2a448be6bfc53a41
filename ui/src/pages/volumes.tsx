// Volumes, and a volume: capabilities, capacity, usage and condition (with a
// chart of usage over time), claims with their release state, the claim
// history from the event stream, topology, drift, and detaching.

import { useRef } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { actions, api, fromGoTime, HEALTH_FIELDS, usageHistory, volumeCondition, volumeDrift, volumeUsage, type Claim, type ClaimEvent, type StreamEvent, type Volume } from '../api';
import { ActionButton, Badge, Facts, Loading, Section, Table, UsageBar, UsageChart, bytes, short, time } from '../components';
import { useLive, watchUntil } from '../live';
import { useCanWrite } from '../session';

function usageCell(v: Volume) {
  const u = volumeUsage(v)[0];
  if (!u) return <span class="muted">no usage reported</span>;
  return u.bytesTotal ? `${bytes(u.bytesUsed)} / ${bytes(u.bytesTotal)}` : bytes(u.bytesUsed);
}

function conditionBadge(v: Volume) {
  const c = volumeCondition(v);
  if (!c) return <span class="muted">-</span>;
  return <Badge value={c.Abnormal ? 'abnormal' : 'healthy'} label={c.Abnormal ? `abnormal: ${c.Message}` : 'normal'} />;
}

/** The claim an event of the claim topic carries (VolumeClaimListStub), if any; read defensively (fields may be missing). */
function claimOf(e: StreamEvent): Partial<ClaimEvent> | undefined {
  const c = e.Payload['Claim'];
  return c && typeof c === 'object' ? (c as Partial<ClaimEvent>) : undefined;
}

/**
 * A claim event's change in plain words: the allocation's first claim event
 * `claimed`, a later change of it `updated`, its removal (`ClaimDeleted`, or a
 * claim gone free) `released`.
 */
function claimChange(released: boolean, first: boolean): string {
  if (released) return 'released';
  return first ? 'claimed' : 'updated';
}

/** The claim history's rows, newest first (`history` is oldest first), each event with its change in plain words. */
function claimHistoryRows(history: readonly StreamEvent[]) {
  const seen = new Set<string>();
  return history
    .map((e) => {
      const c = claimOf(e) ?? {};
      const alloc = c.AllocationID ?? e.Key.split('/').pop() ?? '';
      const released = /delete|release/i.test(e.Type) || c.State === 'free';
      const first = !seen.has(alloc);
      seen.add(alloc);
      if (released) seen.delete(alloc);
      return [String(e.Index), claimChange(released, first), <a href={`/ui/allocations/${alloc}`}>{short(alloc)}</a>, c.Mode ?? '-', released ? 'released' : (c.State ?? '-'), c.ControllerPublish ?? '-'];
    })
    .reverse();
}

/** Usage changes without an event on the stream: the volume pages read it again this often. */
const USAGE_REFRESH_MS = 5_000;

/** Dynamic host volumes beside the CSI ones (their changes are not on the event stream: read again with the usage). */
function HostVolumesSection() {
  const { data } = useLive('host-volumes', ['Node', 'Allocation'], () => api.hostVolumes(), { everyMs: USAGE_REFRESH_MS });
  if (!data?.length) return null;
  return (
    <Section title="Dynamic host volumes" id="host-volumes">
      <Table
        label="host volumes"
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

export function VolumesPage() {
  const { data, error } = useLive('volumes', ['CSIVolume', 'claim', 'CSIPlugin', ...HEALTH_FIELDS.topics], () => api.volumesInFull(), { everyMs: USAGE_REFRESH_MS });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  return (
    <main id="main">
      <h1>Volumes</h1>
      <Table
        label="volumes"
        head={['Volume', 'Namespace', 'Plugin', 'Schedulable', 'Claims', 'Capacity', 'Usage', 'Condition']}
        empty="No CSI volume registered. Create one with berth volume create <file>."
        rows={data.map((v) => [
          <a href={`/ui/volumes/${encodeURIComponent(v.Namespace)}/${encodeURIComponent(v.ID)}`}>{v.ID}</a>,
          v.Namespace,
          <a href={`/ui/plugins/${encodeURIComponent(v.PluginID)}`}>{v.PluginID}</a>,
          v.Schedulable ? 'yes' : 'no',
          <span data-claims={v.ID}>{v.BerthClaims.length}</span>,
          bytes(v.Capacity),
          usageCell(v),
          conditionBadge(v),
        ])}
      />
      <HostVolumesSection />
    </main>
  );
}

/**
 * Detach (ControllerUnpublish and the node's unpublish/unstage of every claim
 * on the node); the API refuses while an allocation there uses the volume.
 * Force stops those allocations first. Progress follows the claims that were
 * there when it was asked until each is released (a replacement allocation
 * may claim the volume anew: that is a new claim).
 */
function DetachButton({ v, nodeId, force }: { v: Volume; nodeId: string; force: boolean }) {
  const run = async (progress: (m: string) => void): Promise<string> => {
    const before = new Set(v.BerthClaims.filter((c) => c.NodeID === nodeId).map((c) => c.AllocationID));
    progress(force ? `Stopping the allocations on node ${short(nodeId)}, then detaching…` : `Detaching from node ${short(nodeId)}…`);
    const out = await actions.detachVolume(v.Namespace, v.ID, nodeId, force);
    const detached = await watchUntil(['claim', 'volume'], async () => {
      const now = await api.volume(v.Namespace, v.ID);
      const left = now.BerthClaims.filter((c) => c.NodeID === nodeId && before.has(c.AllocationID));
      if (left.length === 0) return `Detached from node ${short(nodeId)}.`;
      progress(`Detaching: ${left.length} claim${left.length === 1 ? '' : 's'} on node ${short(nodeId)} still releasing (${left.map((c) => c.State).join(', ')})…`);
      return undefined;
    });
    const stoppedIds = out.StoppedAllocations ?? [];
    const stopped = stoppedIds.length ? ` Stopped allocation${stoppedIds.length === 1 ? '' : 's'} ${stoppedIds.map(short).join(', ')}.` : '';
    return `${detached}${stopped}${out.Warnings ? ` ${out.Warnings}` : ''}`;
  };
  return force ? (
    <ActionButton
      label="Force detach"
      danger
      confirm={`Stop every allocation on node ${short(nodeId)} that uses volume ${v.ID}, then detach it?`}
      run={run}
    />
  ) : (
    <ActionButton label="Detach" confirm={`Detach volume ${v.ID} from node ${short(nodeId)}? The API refuses while an allocation there uses it.`} run={run} />
  );
}

function ClaimTable({ v }: { v: Volume }) {
  return (
    <Table
      label="claims"
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

/**
 * Detach buttons per node. Every node that held a claim while the page was
 * open keeps its row, so a detach's progress and outcome stay in view after
 * its claims are gone.
 */
function DetachPanel({ v }: { v: Volume }) {
  const seen = useRef<string[]>([]);
  for (const c of v.BerthClaims) if (!seen.current.includes(c.NodeID)) seen.current.push(c.NodeID);
  if (seen.current.length === 0) return null;
  return (
    <Section title="Detach" id="detach">
      <Table
        label="detach from a node"
        head={['Node', 'Claims now', 'Action']}
        empty=""
        rows={seen.current.map((nodeId) => [
          <a href={`/ui/nodes/${nodeId}`}>{short(nodeId)}</a>,
          String(v.BerthClaims.filter((c) => c.NodeID === nodeId).length),
          <span class="action-group" data-detach={nodeId}>
            <DetachButton v={v} nodeId={nodeId} force={false} />
            <DetachButton v={v} nodeId={nodeId} force />
          </span>,
        ])}
      />
    </Section>
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
        Volume {v.Name || v.ID} {condition ? conditionBadge(v) : null}{' '}
        {drift && drift.length > 0 ? <Badge value="drift" label={`drift: ${drift.length}`} /> : null}
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
            Condition: {condition.Abnormal ? <Badge value="abnormal" label={`abnormal: ${condition.Message}`} /> : <Badge value="healthy" label="normal" />}
          </p>
        ) : (
          <p class="muted">No condition reported.</p>
        )}
        {usage ? <UsageChart points={usage} /> : null}
      </Section>
      <Section title={`Claims (${v.BerthClaims.length})`} id="claims">
        <ClaimTable v={v} />
      </Section>
      {canWrite ? <DetachPanel v={v} /> : null}
      {drift && drift.length > 0 ? (
        <Section title="Drift" id="drift">
          <Table
            label="drift"
            head={['Difference', 'Node', 'Repair']}
            empty=""
            rows={drift.map((d) => [d.Message || d.Kind, short(d.NodeID), d.Repair ? <code>{d.Repair}</code> : '-'])}
          />
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
          head={['Index', 'Change', 'Allocation', 'Mode', 'State', 'Controller']}
          empty="No claim has been taken yet."
          rows={claimHistoryRows(history)}
        />
      </Section>
    </main>
  );
}
