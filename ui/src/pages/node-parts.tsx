// What the node pages share: a node's status word with its drain, and
// meters of the CPU and memory its allocations reserve against what it can give.

import { Badge } from '../components';
import { capacity, megabytes, type Amount } from '../api-nodes';
import type { NodeStub } from '../api';
import './nodes.css';

/** A node's status word with its drain: `ready`, `ready, draining`, `down`. */
export function NodeStatus({ node }: { node: Pick<NodeStub, 'Status' | 'Drain'> }) {
  return <Badge value={node.Drain ? 'draining' : node.Status} label={node.Drain ? `${node.Status}, draining` : node.Status} />;
}

/** How much of `total` is used, as a bar and words (`512 MiB of 2 GiB`). */
export function Meter({ label, used, total, unit }: { label: string; used: number; total: number; unit: 'MHz' | 'MB' }) {
  const pct = total > 0 ? Math.min(100, (used / total) * 100) : 0;
  const words = unit === 'MB' ? `${megabytes(used)} of ${megabytes(total)}` : `${used} of ${total} MHz`;
  return (
    <span class="meter" data-meter={label} data-used={used} data-total={total}>
      <span class="bar" role="meter" aria-valuemin={0} aria-valuemax={total} aria-valuenow={used} aria-label={`${label} reserved`}>
        <span style={{ width: `${pct}%` }} class={pct > 90 ? 'full' : ''} />
      </span>
      <span class="meter-words">{words}</span>
    </span>
  );
}

/** The node's CPU and memory meters (or one of them) for what `used` reserves. */
export function NodeMeters({ node, used, only }: { node: Parameters<typeof capacity>[0]; used: Amount; only?: 'cpu' | 'mem' }) {
  const cap = capacity(node);
  return (
    <>
      {only !== 'mem' ? <Meter label="CPU" used={used.cpu} total={cap.cpu} unit="MHz" /> : null}
      {only !== 'cpu' ? <Meter label="Memory" used={used.mem} total={cap.mem} unit="MB" /> : null}
    </>
  );
}
