// Nodes, and a node: its drivers, its CSI plugins with their health reasons,
// and its allocations.

import { useRoute } from 'preact-iso';
import { api, type HealthReport } from '../api';
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
        head={['Node', 'Name', 'Datacenter', 'Status', 'CSI plugins', 'Running allocations', 'Last heartbeat']}
        empty="No node has registered."
        rows={data.nodes.map((n) => [
          <a href={`/ui/nodes/${n.id}`}>{short(n.id)}</a>,
          n.name,
          n.datacenter,
          <Badge value={n.status} />,
          [...new Set([...Object.keys(n.csiNodePlugins ?? {}), ...Object.keys(n.csiControllerPlugins ?? {})])].join(', ') || '-',
          String(data.allocs.filter((a) => a.nodeId === n.id && a.clientStatus === 'running').length),
          ago(n.lastHeartbeat),
        ])}
      />
    </main>
  );
}

function pluginRows(kind: string, reports: Record<string, HealthReport>) {
  return Object.entries(reports ?? {}).map(([id, r]) => [
    <a href={`/ui/plugins/${encodeURIComponent(id)}`}>{id}</a>,
    kind,
    <Healthy healthy={r.healthy} />,
    <span data-health-reason>{r.healthReason}</span>,
    r.provider ? `${r.provider} ${r.version ?? ''}` : '-',
    r.allocId ? <a href={`/ui/allocations/${r.allocId}`}>{short(r.allocId)}</a> : '-',
  ]);
}

export function NodePage() {
  const { params } = useRoute();
  const id = params['id'] ?? '';
  const { data, error } = useLive(`node/${id}`, ['Node', 'Allocation'], async () => {
    const [node, allocs] = await Promise.all([api.node(id), api.nodeAllocations(id)]);
    return { node, allocs };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { node, allocs } = data;
  return (
    <main id="main">
      <h1>
        Node {node.name} <Badge value={node.status} />
      </h1>
      <Facts
        items={[
          ['ID', <code>{node.id}</code>],
          ['Datacenter', node.datacenter],
          ['Status', `${node.status} (${node.statusDescription})`],
          ['Address', node.httpAddr],
          ['Resources', `${node.resources.cpuMhz} MHz, ${node.resources.memoryMb} MB`],
          ['Last heartbeat', ago(node.lastHeartbeat)],
        ]}
      />
      <Section title="Drivers" id="drivers">
        <Table
          label="drivers"
          head={['Driver', 'Detected', 'Health', 'Reason']}
          empty="No drivers."
          rows={Object.entries(node.drivers ?? {}).map(([name, d]) => [name, d.detected ? 'yes' : 'no', <Healthy healthy={d.healthy} />, d.healthReason])}
        />
      </Section>
      <Section title="CSI plugins" id="plugins">
        <Table
          label="CSI plugins on the node"
          head={['Plugin', 'Service', 'Health', 'Reason', 'Provider', 'Allocation']}
          empty="No CSI plugin runs on this node."
          rows={[...pluginRows('controller', node.csiControllerPlugins), ...pluginRows('node', node.csiNodePlugins)]}
        />
      </Section>
      <Section title="Allocations" id="allocations">
        <AllocationTable allocs={allocs} label="allocations on the node" />
      </Section>
      <Section title="Attributes" id="attributes">
        <Table label="attributes" head={['Attribute', 'Value']} empty="None." rows={Object.entries(node.attributes ?? {}).map(([k, v]) => [k, v])} />
      </Section>
    </main>
  );
}
