// Nodes: each node's status, eligibility and drain, its healthy drivers, the
// allocations it runs, and the CPU and memory they reserve against what the
// node can give. The node page is node.tsx; the topology view topology.tsx.

import { Loading, Table, short } from '../components';
import { holdsResources, nodesApi, sumAllocated } from '../api-nodes';
import { useLive } from '../live';
import { NodeMeters, NodeStatus } from './node-parts';

export function NodesPage() {
  const { data, error } = useLive('nodes', ['node', 'allocation'], async () => {
    const [nodes, allocs] = await Promise.all([nodesApi.nodes(), nodesApi.allocations()]);
    return { nodes, allocs };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  return (
    <main id="main">
      <h1>Nodes</h1>
      <p class="muted">
        <a href="/ui/topology">Topology</a>: every node's allocations by the memory and CPU they reserve.
      </p>
      <Table
        label="nodes"
        head={['Node', 'Name', 'Datacenter', 'Status', 'Eligibility', 'Drivers healthy', 'Allocations', 'CPU reserved', 'Memory reserved']}
        empty="No node has registered."
        rows={data.nodes.map((n) => {
          const held = data.allocs.filter((a) => a.NodeID === n.ID && holdsResources(a));
          const drivers = Object.values(n.Drivers ?? {}).filter((d) => d.Detected);
          return [
            <a href={`/ui/nodes/${n.ID}`} data-node={n.ID}>{short(n.ID)}</a>,
            n.Name,
            n.Datacenter,
            <NodeStatus node={n} />,
            <span data-eligibility>{n.SchedulingEligibility}</span>,
            <span data-drivers title={Object.entries(n.Drivers ?? {}).map(([k, d]) => `${k}: ${d.HealthDescription}`).join('\n')}>
              {`${drivers.filter((d) => d.Healthy).length}/${drivers.length}`}
            </span>,
            <span data-allocs={held.length}>{String(held.length)}</span>,
            <NodeMeters node={n} used={sumAllocated(held)} only="cpu" />,
            <NodeMeters node={n} used={sumAllocated(held)} only="mem" />,
          ];
        })}
      />
    </main>
  );
}
