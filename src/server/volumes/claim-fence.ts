// Fencing across a partition: a write claim held by an allocation on a node
// the server cannot hear from is not released, and so not handed to a
// replacement, until the node's own agent has had time to stop the writer
// (its stop-after-disconnect time, the kill timeout and a margin, counted
// from when the server last heard from it). Without that wait, a node that
// is only partitioned (or frozen) keeps writing while the replacement starts.

import { isClientTerminal, type VolumeClaim } from '../../structs/index.js';
import { rowKey, type StateReader } from '../state/index.js';

/** Added to the node's stop-after-disconnect time and kill timeout. */
export const FENCE_MARGIN_MS = 5_000;
/** The client's default kill timeout, for nodes that do not report theirs. */
export const DEFAULT_KILL_TIMEOUT_MS = 5_000;

/** A claim's fence: until when (ms since the epoch) and why. */
export interface ClaimFence {
  until: number;
  reason: string;
}

const seconds = (ms: number): string => `${Math.round(ms / 100) / 10} s`;

/**
 * The fence of `claim` as `snap` stands, or undefined when none applies:
 * only a taken write claim (not multi-node-multi-writer) whose allocation the
 * node has not itself reported finished, on a node that is down or whose
 * allocation the server declared lost, when that node promised to stop its
 * tasks after a disconnect (`stopAfterDisconnectMs`; agents that do not say so
 * keep the old behaviour: released when the node is marked down). Pure; the
 * caller compares `until` with its clock.
 */
export function claimFence(snap: StateReader, claim: VolumeClaim, marginMs = FENCE_MARGIN_MS): ClaimFence | undefined {
  if (claim.state !== 'taken' || claim.mode !== 'write' || claim.accessMode === 'multi-node-multi-writer') return undefined;
  const alloc = snap.get('allocations', rowKey(claim.allocId));
  // The node reported the allocation ended: its writer is gone.
  if (alloc && alloc.clientStatus !== 'lost' && isClientTerminal(alloc.clientStatus)) return undefined;
  const node = snap.get('nodes', rowKey(claim.nodeId));
  if (!node || node.stopAfterDisconnectMs === undefined) return undefined;
  if (node.status !== 'down' && alloc?.clientStatus !== 'lost') return undefined;
  const kill = node.killTimeoutMs ?? DEFAULT_KILL_TIMEOUT_MS;
  const until = node.lastHeartbeat + node.stopAfterDisconnectMs + kill + marginMs;
  return {
    until,
    reason:
      `node ${node.name} (${node.id}) was last heard from at ${new Date(node.lastHeartbeat).toISOString()}; its writer may run until the node stops it ` +
      `(stop after disconnect ${seconds(node.stopAfterDisconnectMs)} + kill timeout ${seconds(kill)} + margin ${seconds(marginMs)}), ` +
      `or until the node reports it stopped, or an operator detaches the volume from the node (berth volume detach)`,
  };
}
