// Volumes, and a volume: capabilities, capacity, usage and condition (with a
// chart of usage over time), claims with their release state, the claim
// history from the event stream, topology, drift, and detaching.

import { useRef } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { actions, api, HEALTH_FIELDS, usageHistory, volumeCondition, volumeDrift, volumeUsage, type Claim, type StreamEvent, type Volume } from '../api';
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
  return <Badge value={c.abnormal ? 'abnormal' : 'healthy'} label={c.abnormal ? `abnormal: ${c.message}` : 'normal'} />;
}

/** Usage changes without an event on the stream: the volume pages read it again this often. */
const USAGE_REFRESH_MS = 5_000;

/** The claim a `claim` event carries (its payload's `Claim`). */
function claimOf(e: StreamEvent): Partial<Claim> & { volumeId?: string; allocId?: string } {
  return (e.Payload['Claim'] ?? {}) as Partial<Claim> & { volumeId?: string; allocId?: string };
}

export function VolumesPage() {
  const { data, error } = useLive('volumes', ['CSIVolume', 'claim', 'CSIPlugin', ...HEALTH_FIELDS.topics], () => api.volumes(), { everyMs: USAGE_REFRESH_MS });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  return (
    <main id="main">
      <h1>Volumes</h1>
      <Table
        label="volumes"
        head={['Volume', 'Namespace', 'Plugin', 'Schedulable', 'Claims', 'Capacity', 'Usage', 'Condition']}
        empty="No CSI volume registered. Create one with berth volume create <file>."
        rows={data.map((v) => [
          <a href={`/ui/volumes/${encodeURIComponent(v.namespace)}/${encodeURIComponent(v.id)}`}>{v.id}</a>,
          v.namespace,
          <a href={`/ui/plugins/${encodeURIComponent(v.pluginId)}`}>{v.pluginId}</a>,
          v.schedulable ? 'yes' : 'no',
          <span data-claims={v.id}>{v.claims.length}</span>,
          bytes(v.capacityBytes),
          usageCell(v),
          conditionBadge(v),
        ])}
      />
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
    const before = new Set(v.claims.filter((c) => c.nodeId === nodeId).map((c) => c.allocId));
    progress(force ? `Stopping the allocations on node ${short(nodeId)}, then detaching…` : `Detaching from node ${short(nodeId)}…`);
    const out = await actions.detachVolume(v.namespace, v.id, nodeId, force);
    const detached = await watchUntil(['claim', 'CSIVolume'], async () => {
      const now = await api.volume(v.namespace, v.id);
      const left = now.claims.filter((c) => c.nodeId === nodeId && before.has(c.allocId));
      if (left.length === 0) return `Detached from node ${short(nodeId)}.`;
      progress(`Detaching: ${left.length} claim${left.length === 1 ? '' : 's'} on node ${short(nodeId)} still releasing (${left.map((c) => c.state).join(', ')})…`);
      return undefined;
    });
    const stopped = out.stoppedAllocations?.length ? ` Stopped allocation${out.stoppedAllocations.length === 1 ? '' : 's'} ${out.stoppedAllocations.map(short).join(', ')}.` : '';
    return `${detached}${stopped}${out.warning ? ` ${out.warning}` : ''}`;
  };
  return force ? (
    <ActionButton
      label="Force detach"
      danger
      confirm={`Stop every allocation on node ${short(nodeId)} that uses volume ${v.id}, then detach it?`}
      run={run}
    />
  ) : (
    <ActionButton label="Detach" confirm={`Detach volume ${v.id} from node ${short(nodeId)}? The API refuses while an allocation there uses it.`} run={run} />
  );
}

function ClaimTable({ v }: { v: Volume }) {
  return (
    <Table
      label="claims"
      head={['Allocation', 'Node', 'Mode', 'Access', 'State', 'Controller', 'Release', 'Claimed']}
      empty="No claims: no allocation uses this volume."
      rows={v.claims.map((c: Claim) => {
        const release = c.state === 'taken' ? '-' : `${c.releaseReason || 'releasing'}${c.releaseAttempts ? ` (attempt ${c.releaseAttempts})` : ''}${c.lastError ? `: ${c.lastError}` : ''}`;
        return [
          <a href={`/ui/allocations/${c.allocId}`} data-claim={c.allocId}>
            {short(c.allocId)}
          </a>,
          <a href={`/ui/nodes/${c.nodeId}`}>{short(c.nodeId)}</a>,
          c.mode,
          `${c.accessMode}, ${c.attachmentMode}`,
          <Badge value={c.state} />,
          c.controllerPublish,
          release,
          time(c.claimTime),
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
  for (const c of v.claims) if (!seen.current.includes(c.nodeId)) seen.current.push(c.nodeId);
  if (seen.current.length === 0) return null;
  return (
    <Section title="Detach" id="detach">
      <Table
        label="detach from a node"
        head={['Node', 'Claims now', 'Action']}
        empty=""
        rows={seen.current.map((nodeId) => [
          <a href={`/ui/nodes/${nodeId}`}>{short(nodeId)}</a>,
          String(v.claims.filter((c) => c.nodeId === nodeId).length),
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
    // claim:<id> also matches claims of another namespace's volume of the same ID.
    return { volume, history: history.filter((e) => e.Namespace === ns && claimOf(e).volumeId === id), usage, drift };
  }, { everyMs: USAGE_REFRESH_MS });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { volume: v, history, usage, drift } = data;
  const reports = volumeUsage(v);
  const condition = volumeCondition(v);
  return (
    <main id="main">
      <h1>
        Volume {v.name || v.id} {condition ? conditionBadge(v) : null}{' '}
        {drift && drift.length > 0 ? <Badge value="drift" label={`drift: ${drift.length}`} /> : null}
      </h1>
      <Facts
        items={[
          ['ID', v.id],
          ['Namespace', v.namespace],
          ['External ID', <code>{v.externalId}</code>],
          ['Plugin', <a href={`/ui/plugins/${encodeURIComponent(v.pluginId)}`}>{v.pluginId}</a>],
          ['Provider', v.provider],
          ['Schedulable', v.schedulable ? 'yes' : 'no'],
          ['Capacity', <span data-fact="capacity">{bytes(v.capacityBytes)}</span>],
          ['Requested', `${bytes(v.capacityMinBytes)} to ${bytes(v.capacityMaxBytes)}`],
          ['Secrets', v.secretNames?.length ? v.secretNames.map((s) => `${s} (hidden)`).join(', ') : 'none'],
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
          <p data-condition={condition.abnormal ? 'abnormal' : 'normal'}>
            Condition: {condition.abnormal ? <Badge value="abnormal" label={`abnormal: ${condition.message}`} /> : <Badge value="healthy" label="normal" />}
          </p>
        ) : (
          <p class="muted">No condition reported.</p>
        )}
        {usage ? <UsageChart points={usage} /> : null}
      </Section>
      <Section title={`Claims (${v.claims.length})`} id="claims">
        <ClaimTable v={v} />
      </Section>
      {canWrite ? <DetachPanel v={v} /> : null}
      {drift && drift.length > 0 ? (
        <Section title="Drift" id="drift">
          <Table
            label="drift"
            head={['Difference', 'Node', 'Repair']}
            empty=""
            rows={drift.map((d) => [d.message ?? d.kind, short(d.nodeId), d.repair ? <code>{d.repair}</code> : '-'])}
          />
        </Section>
      ) : null}
      <Section title="Capabilities" id="capabilities">
        <Table label="capabilities" head={['Access mode', 'Attachment']} empty="None." rows={v.capabilities.map((c) => [c.accessMode, c.attachmentMode])} />
      </Section>
      <Section title="Topology" id="topology">
        <Table
          label="topology"
          head={['Segment', 'Value']}
          empty="Accessible from every node."
          rows={(v.accessibleTopology ?? []).flatMap((t) => Object.entries(t).map(([k, val]) => [k, val]))}
        />
      </Section>
      <Section title="Claim history" id="history">
        <Table
          label="claim history"
          head={['Index', 'Change', 'Allocation', 'Mode', 'State', 'Controller']}
          empty="No claim has been taken yet."
          rows={[...history].reverse().map((e) => {
            const c = claimOf(e);
            const alloc = c.allocId ?? '';
            const deleted = e.Type === 'ClaimDeleted';
            return [String(e.Index), deleted ? 'delete' : 'put', <a href={`/ui/allocations/${alloc}`}>{short(alloc)}</a>, c.mode ?? '-', deleted ? 'released' : (c.state ?? '-'), c.controllerPublish ?? '-'];
          })}
        />
      </Section>
    </main>
  );
}
