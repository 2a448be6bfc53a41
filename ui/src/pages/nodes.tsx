// Nodes: each node's status, eligibility and drain, its healthy drivers, the
// allocations it runs, and the CPU and memory they reserve against what the
// node can give. The node page is node.tsx; the topology view topology.tsx.

import { Loading, Table, short } from '../components';
import { holdsResources, nodesApi, sumAllocated } from '../api-nodes';
import type { NodeStub } from '../api';
import { useLive } from '../live';
import { NodeMeters, NodeStatus } from './node-parts';

/** The node's healthy drivers by name, and how many detected ones are not healthy (their reasons on hover). */
function DriversCell({ drivers }: { drivers: NodeStub['Drivers'] }) {
  const detected = Object.entries(drivers ?? {}).filter(([, d]) => d.Detected).sort(([a], [b]) => a.localeCompare(b));
  const healthy = detected.filter(([, d]) => d.Healthy).map(([name]) => name);
  const sick = detected.filter(([, d]) => !d.Healthy);
  return (
    <span data-drivers={`${healthy.length}/${detected.length}`} title={sick.map(([k, d]) => `${k}: ${d.HealthDescription}`).join('\n') || undefined}>
      {healthy.join(', ') || 'none healthy'}
      {sick.length ? <span class="muted">{` (${sick.length} unhealthy)`}</span> : null}
    </span>
  );
}

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
        head={['Node', 'Name', 'Datacenter', 'Status', 'Eligibility', 'Drivers', 'Allocations', 'CPU reserved', 'Memory reserved']}
        empty="No node has registered."
        rows={data.nodes.map((n) => {
          const held = data.allocs.filter((a) => a.NodeID === n.ID && holdsResources(a));
          return [
            <a href={`/ui/nodes/${n.ID}`} data-node={n.ID}>{short(n.ID)}</a>,
            n.Name,
            n.Datacenter,
            <NodeStatus node={n} />,
            <span data-eligibility>{n.SchedulingEligibility}</span>,
            <DriversCell drivers={n.Drivers} />,
            <span data-allocs={held.length}>{String(held.length)}</span>,
            <NodeMeters node={n} used={sumAllocated(held)} only="cpu" />,
            <NodeMeters node={n} used={sumAllocated(held)} only="mem" />,
          ];
        })}
      />
    </main>
  );
}
