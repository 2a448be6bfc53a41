// A node: its status, eligibility and drain (with the controls and the
// drain's progress for writers, node-drain.tsx), what its allocations
// reserve, its meta, drivers with their health, CSI plugins with theirs,
// host volumes, host networks and network modes (CNI networks among them),
// its allocations, events and attributes. All of it from GET /v1/node/:id
// and the node's allocations.

import { useRoute } from 'preact-iso/router';
import { fromGoTime, fromNs, type HealthReport, type Node } from '../api';
import { allocated, holdsResources, megabytes, nodesApi, sumAllocated } from '../api-nodes';
import { Badge, Facts, Healthy, Loading, Section, Table, ago, short, time } from '../components';
import { useLive } from '../live';
import { DrainControls, DrainProgress } from './node-drain';
import { NodeMeters, NodeStatus } from './node-parts';

function pluginRows(kind: string, reports: Record<string, HealthReport> | null) {
  return Object.entries(reports ?? {}).map(([id, r]) => {
    const provider = (r as { Provider?: string; ProviderVersion?: string }).Provider;
    const version = (r as { ProviderVersion?: string }).ProviderVersion;
    return [
      <a href={`/ui/plugins/${encodeURIComponent(id)}`} data-plugin={id}>{id}</a>,
      kind,
      <Healthy healthy={r.Healthy} />,
      <span data-health-reason>{r.HealthDescription}</span>,
      provider ? `${provider} ${version ?? ''}` : '-',
      r.AllocID ? <a href={`/ui/allocations/${r.AllocID}`}>{short(r.AllocID)}</a> : '-',
    ];
  });
}

/** The node's network modes (host, bridge, cni/<name>) as its NodeResources.Networks name them, with their addresses. */
function networkRows(node: Node) {
  return (node.NodeResources?.Networks ?? []).map((n) => [
    <span data-network-mode={n.Mode}>{n.Mode || 'host'}</span>,
    n.Mode.startsWith('cni/') ? 'CNI network' : n.Mode === 'bridge' ? 'bridge (CNI)' : 'host',
    n.Device || '-',
    n.IP || n.CIDR || '-',
  ]);
}

export function NodePage() {
  const { params } = useRoute();
  const id = params['id'] ?? '';
  // Heartbeats that change nothing are no events: read again now and then, so "Last heartbeat" and the deadline stay true.
  const { data, error } = useLive(
    `node/${id}`,
    ['node', 'allocation'],
    async () => {
      const [node, allocs] = await Promise.all([nodesApi.node(id), nodesApi.nodeAllocations(id)]);
      return { node, allocs };
    },
    { everyMs: 10_000 },
  );
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { node, allocs } = data;
  const held = allocs.filter(holdsResources);
  return (
    <main id="main">
      <h1>
        Node {node.Name} <NodeStatus node={node} />
      </h1>
      <Facts
        items={[
          ['ID', <code>{node.ID}</code>],
          ['Datacenter', node.Datacenter],
          ['Node pool', node.NodePool || '-'],
          ['Class', node.NodeClass || '-'],
          ['Status', `${node.Status}${node.StatusDescription ? ` (${node.StatusDescription})` : ''}`],
          ['Eligibility', <span data-fact="eligibility">{node.SchedulingEligibility}</span>],
          ['Drain', <span data-fact="drain">{node.Drain ? 'draining' : node.LastDrain ? `not draining (last drain ${node.LastDrain.Status})` : 'not draining'}</span>],
          ['Address', node.HTTPAddr || '-'],
          ['Allocations', <span data-fact="allocations">{`${held.length} running or pending`}</span>],
          ['CPU reserved', <NodeMeters node={node} used={sumAllocated(held)} only="cpu" />],
          ['Memory reserved', <NodeMeters node={node} used={sumAllocated(held)} only="mem" />],
          ['Last heartbeat', ago(fromGoTime(node.BerthLastHeartbeat))],
        ]}
      />
      {/* A new drain state starts the controls afresh (the last action's word belongs to the old one). */}
      <DrainControls key={node.Drain ? 'draining' : 'idle'} node={node} />
      <DrainProgress node={node} allocs={allocs} />
      <Section title="Meta" id="meta">
        <Table label="node meta" head={['Key', 'Value']} empty="No meta." rows={Object.entries(node.Meta ?? {}).sort().map(([k, v]) => [<code>{k}</code>, v])} />
      </Section>
      <Section title="Drivers" id="drivers">
        <Table
          label="drivers"
          head={['Driver', 'Detected', 'Health', 'Reason', 'Network modes', 'Updated']}
          empty="No drivers."
          rows={Object.entries(node.Drivers ?? {}).sort().map(([name, d]) => [
            <span data-driver={name}>{name}</span>,
            d.Detected ? 'yes' : 'no',
            <Healthy healthy={d.Healthy} />,
            d.HealthDescription,
            (d.BerthNetworkModes ?? []).join(', ') || '-',
            ago(fromGoTime(d.UpdateTime)),
          ])}
        />
      </Section>
      <Section title="CSI plugins" id="plugins">
        <Table
          label="CSI plugins on the node"
          head={['Plugin', 'Service', 'Health', 'Reason', 'Provider', 'Allocation']}
          empty="No CSI plugin runs on this node."
          rows={[...pluginRows('controller', node.CSIControllerPlugins), ...pluginRows('node', node.CSINodePlugins)]}
        />
      </Section>
      <Section title="Host volumes" id="host-volumes">
        <Table
          label="host volumes"
          head={['Name', 'Path', 'Read-only', 'Kind']}
          empty="No host volume."
          rows={Object.entries(node.HostVolumes ?? {}).sort().map(([name, v]) => [
            <span data-host-volume={name}>{name}</span>,
            <code>{v.Path}</code>,
            v.ReadOnly ? 'yes' : 'no',
            v.ID ? `dynamic (${short(v.ID)})` : 'static',
          ])}
        />
      </Section>
      <Section title="Networks" id="networks">
        <h3>Host networks</h3>
        <Table
          label="host networks"
          head={['Name', 'Interface', 'CIDR', 'Address', 'Reserved ports']}
          empty="No host network."
          rows={Object.entries(node.HostNetworks ?? {}).sort().map(([name, n]) => [
            <span data-host-network={name}>{name}</span>,
            n.Interface || '-',
            n.CIDR || '-',
            n.BerthAddress ?? 'none found',
            n.ReservedPorts || '-',
          ])}
        />
        <h3>Network modes</h3>
        <Table label="network modes" head={['Mode', 'Kind', 'Device', 'Address']} empty="None reported." rows={networkRows(node)} />
      </Section>
      <Section title="Allocations" id="allocations">
        <Table
          label="allocations on the node"
          head={['Allocation', 'Job', 'Group', 'Desired', 'Status', 'CPU', 'Memory', 'Modified']}
          empty="No allocation on this node."
          rows={allocs.map((a) => [
            <a href={`/ui/allocations/${a.ID}`} data-alloc={a.ID}>{short(a.ID)}</a>,
            <a href={`/ui/jobs/${encodeURIComponent(a.Namespace)}/${encodeURIComponent(a.JobID)}`}>{a.JobID}</a>,
            a.TaskGroup,
            a.DesiredStatus,
            <Badge value={a.ClientStatus} />,
            `${allocated(a).cpu} MHz`,
            megabytes(allocated(a).mem),
            ago(fromNs(a.ModifyTime)),
          ])}
        />
      </Section>
      <Section title="Events" id="events">
        <Table
          label="node events"
          head={['Time', 'Subsystem', 'Message']}
          empty="No events."
          rows={[...(node.Events ?? [])].reverse().map((e) => [time(fromGoTime(e.Timestamp)), e.Subsystem, e.Message])}
        />
      </Section>
      <Section title="Attributes" id="attributes">
        <Table label="attributes" head={['Attribute', 'Value']} empty="None." rows={Object.entries(node.Attributes ?? {}).sort().map(([k, v]) => [k, v])} />
      </Section>
    </main>
  );
}
