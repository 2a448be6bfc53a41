// The cluster's topology, as Nomad's UI draws it: nodes as boxes grouped by
// datacenter, each with two bars, memory and CPU, in which every allocation
// that holds resources is a segment as wide as its share of what the node can
// give, coloured by its status. Hovering or focusing a segment names the
// allocation; a segment is a link to the allocation's page.

import { useState } from 'preact/hooks';
import type { AllocStub, NodeStub } from '../api';
import { allocated, capacity, holdsResources, megabytes, nodesApi, sumAllocated, type Amount } from '../api-nodes';
import { Loading, short } from '../components';
import { useLive } from '../live';
import { NodeStatus } from './node-parts';

type Hover = { alloc: AllocStub; node: string } | undefined;

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

const pct = (part: number, whole: number): number => (whole > 0 ? (part / whole) * 100 : 0);

function describe(a: AllocStub): string {
  const r = allocated(a);
  return `${a.Name} (${short(a.ID)}), ${a.ClientStatus}: ${megabytes(r.mem)} memory, ${r.cpu} MHz CPU`;
}

function Bar({ kind, node, allocs, cap, onHover }: { kind: 'mem' | 'cpu'; node: NodeStub; allocs: AllocStub[]; cap: Amount; onHover: (h: Hover) => void }) {
  const total = cap[kind];
  const used = sumAllocated(allocs)[kind];
  const label = kind === 'mem' ? 'Memory' : 'CPU';
  return (
    <div class="topo-row">
      <span class="topo-label">{label}</span>
      <div class="topo-bar" data-bar={kind} data-total={total} role="group" aria-label={`${label} of node ${node.Name}: ${kind === 'mem' ? `${megabytes(used)} of ${megabytes(total)}` : `${used} of ${total} MHz`} reserved`}>
        {allocs.map((a) => {
          const share = pct(allocated(a)[kind], total);
          return (
            <a
              href={`/ui/allocations/${a.ID}`}
              class={`topo-seg ${a.ClientStatus}`}
              style={{ width: `${Math.min(100, share)}%` }}
              data-alloc={a.ID}
              data-share={share.toFixed(4)}
              aria-label={describe(a)}
              title={describe(a)}
              onMouseEnter={() => onHover({ alloc: a, node: node.ID })}
              onFocus={() => onHover({ alloc: a, node: node.ID })}
              onMouseLeave={() => onHover(undefined)}
              onBlur={() => onHover(undefined)}
            />
          );
        })}
      </div>
      <span class="topo-figure">{`${pct(used, total).toFixed(1)}%`}</span>
    </div>
  );
}

function NodeBox({ node, allocs, hover, onHover }: { node: NodeStub; allocs: AllocStub[]; hover: Hover; onHover: (h: Hover) => void }) {
  const cap = capacity(node);
  const used = sumAllocated(allocs);
  const here = hover?.node === node.ID ? hover.alloc : undefined;
  return (
    <article class={`topo-node ${node.Status}`} data-topo-node={node.ID} aria-labelledby={`topo-${node.ID}`}>
      <h3 id={`topo-${node.ID}`}>
        <a href={`/ui/nodes/${node.ID}`}>{node.Name}</a> <NodeStatus node={node} />
        {node.SchedulingEligibility === 'ineligible' ? <span class="muted"> ineligible</span> : null}
      </h3>
      <p class="muted">
        {plural(allocs.length, 'allocation')}; {megabytes(used.mem)} of {megabytes(cap.mem)}, {used.cpu} of {cap.cpu} MHz
      </p>
      <Bar kind="mem" node={node} allocs={allocs} cap={cap} onHover={onHover} />
      <Bar kind="cpu" node={node} allocs={allocs} cap={cap} onHover={onHover} />
      <p class="topo-hover" aria-live="polite" data-hovered={here?.ID ?? ''}>
        {here ? describe(here) : 'Point at or tab to an allocation to name it.'}
      </p>
    </article>
  );
}

export function TopologyPage() {
  const [hover, setHover] = useState<Hover>(undefined);
  const { data, error } = useLive('topology', ['node', 'allocation'], async () => {
    const [nodes, allocs] = await Promise.all([nodesApi.nodes(), nodesApi.allocations()]);
    return { nodes, allocs: allocs.filter(holdsResources) };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const byDc = new Map<string, NodeStub[]>();
  for (const n of [...data.nodes].sort((a, b) => a.Name.localeCompare(b.Name))) byDc.set(n.Datacenter, [...(byDc.get(n.Datacenter) ?? []), n]);
  const cap = data.nodes.reduce<Amount>((s, n) => ({ cpu: s.cpu + capacity(n).cpu, mem: s.mem + capacity(n).mem }), { cpu: 0, mem: 0 });
  const used = sumAllocated(data.allocs);
  return (
    <main id="main">
      <h1>Topology</h1>
      <p data-topo-summary>
        {plural(data.nodes.length, 'node')} in {plural(byDc.size, 'datacenter')}, {plural(data.allocs.length, 'allocation')} reserving {megabytes(used.mem)} of {megabytes(cap.mem)} memory ({pct(used.mem, cap.mem).toFixed(1)}%)
        and {used.cpu} of {cap.cpu} MHz CPU ({pct(used.cpu, cap.cpu).toFixed(1)}%).
      </p>
      <ul class="topo-legend" aria-label="legend">
        <li><span class="topo-seg running" /> running</li>
        <li><span class="topo-seg pending" /> pending</li>
      </ul>
      {data.nodes.length === 0 ? <p class="empty">No node has registered.</p> : null}
      {[...byDc.entries()].map(([dc, nodes]) => (
        <section class="topo-dc" aria-labelledby={`dc-${dc}`} data-datacenter={dc}>
          <h2 id={`dc-${dc}`}>Datacenter {dc}</h2>
          <div class="topo-nodes">
            {nodes.map((n) => (
              <NodeBox node={n} allocs={data.allocs.filter((a) => a.NodeID === n.ID)} hover={hover} onHover={setHover} />
            ))}
          </div>
        </section>
      ))}
    </main>
  );
}
