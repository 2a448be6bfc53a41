// Nodes, and a node: its drivers, its CSI plugins with their health reasons,
// and its allocations.

import { useRoute } from 'preact-iso';
import { api, fromGoTime, type HealthReport } from '../api';
import { Badge, Facts, Healthy, Loading, Section, Table, ago, short } from '../components';
import { useLive } from '../live';
import { AllocationTable } from './jobs';

export function NodesPage() {
  const { data, error } = useLive('nodes', ['Node', 'Allocation'], async () => {
    const [nodes, allocs] = await Promise.all([api.nodes(), api.allocations()]);
    return { nodes, allocs };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  return (
    <main id="main">
      <h1>Nodes</h1>
      <Table
        label="nodes"
        head={['Node', 'Name', 'Datacenter', 'Status', 'Eligibility', 'Drivers', 'Running allocations']}
        empty="No node has registered."
        rows={data.nodes.map((n) => [
          <a href={`/ui/nodes/${n.ID}`}>{short(n.ID)}</a>,
          n.Name,
          n.Datacenter,
          <Badge value={n.Drain ? 'draining' : n.Status} label={n.Drain ? `${n.Status}, draining` : n.Status} />,
          n.SchedulingEligibility,
          Object.entries(n.Drivers ?? {})
            .filter(([, d]) => d.Detected && d.Healthy)
            .map(([name]) => name)
            .join(', ') || '-',
          String(data.allocs.filter((a) => a.NodeID === n.ID && a.ClientStatus === 'running').length),
        ])}
      />
    </main>
  );
}

function pluginRows(kind: string, reports: Record<string, HealthReport> | null) {
  return Object.entries(reports ?? {}).map(([id, r]) => {
    const provider = (r as { Provider?: string; ProviderVersion?: string }).Provider;
    const version = (r as { ProviderVersion?: string }).ProviderVersion;
    return [
      <a href={`/ui/plugins/${encodeURIComponent(id)}`}>{id}</a>,
      kind,
      <Healthy healthy={r.Healthy} />,
      <span data-health-reason>{r.HealthDescription}</span>,
      provider ? `${provider} ${version ?? ''}` : '-',
      r.AllocID ? <a href={`/ui/allocations/${r.AllocID}`}>{short(r.AllocID)}</a> : '-',
    ];
  });
}

export function NodePage() {
  const { params } = useRoute();
  const id = params['id'] ?? '';
  // Heartbeats that change nothing are no events: read again now and then, so "Last heartbeat" stays true.
  const { data, error } = useLive(
    `node/${id}`,
    ['Node', 'Allocation'],
    async () => {
      const [node, allocs] = await Promise.all([api.node(id), api.nodeAllocations(id)]);
      return { node, allocs };
    },
    { everyMs: 10_000 },
  );
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { node, allocs } = data;
  return (
    <main id="main">
      <h1>
        Node {node.Name} <Badge value={node.Status} />
      </h1>
      <Facts
        items={[
          ['ID', <code>{node.ID}</code>],
          ['Datacenter', node.Datacenter],
          ['Status', `${node.Status}${node.StatusDescription ? ` (${node.StatusDescription})` : ''}`],
          ['Eligibility', `${node.SchedulingEligibility}${node.Drain ? ', draining' : ''}`],
          ['Address', node.HTTPAddr],
          ['Resources', node.NodeResources ? `${node.NodeResources.Cpu.CpuShares} MHz, ${node.NodeResources.Memory.MemoryMB} MB` : '-'],
          ['Last heartbeat', ago(fromGoTime(node.BerthLastHeartbeat))],
        ]}
      />
      <Section title="Drivers" id="drivers">
        <Table
          label="drivers"
          head={['Driver', 'Detected', 'Health', 'Reason']}
          empty="No drivers."
          rows={Object.entries(node.Drivers ?? {}).map(([name, d]) => [name, d.Detected ? 'yes' : 'no', <Healthy healthy={d.Healthy} />, d.HealthDescription])}
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
      <Section title="Allocations" id="allocations">
        <AllocationTable allocs={allocs} label="allocations on the node" />
      </Section>
      <Section title="Attributes" id="attributes">
        <Table label="attributes" head={['Attribute', 'Value']} empty="None." rows={Object.entries(node.Attributes ?? {}).map(([k, v]) => [k, v])} />
      </Section>
    </main>
  );
}
