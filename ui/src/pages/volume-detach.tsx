// Detaching a volume from a node, from its page: a Detach and a Force detach
// button per node that held a claim while the page was open, each showing
// its progress to the end (writers only; the page leaves it out otherwise).

import { useRef } from 'preact/hooks';
import { actions, api, type Volume } from '../api';
import { ActionButton, Section, Table, short } from '../components';
import { watchUntil } from '../live';

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

/**
 * Detach buttons per node. Every node that held a claim while the page was
 * open keeps its row, so a detach's progress and outcome stay in view after
 * its claims are gone.
 */
export function DetachPanel({ v }: { v: Volume }) {
  const seen = useRef<string[]>([]);
  for (const c of v.BerthClaims) if (!seen.current.includes(c.NodeID)) seen.current.push(c.NodeID);
  if (seen.current.length === 0) return null;
  return (
    <Section title="Detach" id="detach">
      <Table
        label="detach from a node"
        cards
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

