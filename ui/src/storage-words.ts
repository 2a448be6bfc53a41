// Storage in an operator's words: a volume's claim history read from the
// `claim` topic's events (what happened to each claim: claimed, published,
// release started, unmounted, detached, released, with the reason), and the
// doctor's kinds of difference. Pure functions over the API's shapes.

import type { DriftKind } from '../../src/api/index.js';
import type { ClaimEvent, StreamEvent } from './api';

/** One row of a claim history: what happened to one allocation's claim at one store index. */
export interface ClaimHistoryRow {
  index: number;
  /** What happened, in a word or three: `claimed`, `published`, `release started`, `released`... */
  change: string;
  allocId: string;
  nodeId: string;
  mode: string;
  /** The details an operator asks next: the reason, the error, the fence. */
  detail: string;
}

/** The claim an event of the claim topic carries (VolumeClaimListStub), if any; read defensively (fields may be missing). */
export function claimOf(e: StreamEvent): Partial<ClaimEvent> | undefined {
  const c = e.Payload['Claim'];
  return c && typeof c === 'object' ? (c as Partial<ClaimEvent>) : undefined;
}

const STATE_WORDS: Record<string, string> = {
  unpublishing: 'release started',
  'node-detached': 'unmounted on the node',
  'controller-detached': 'detached by the controller',
};

/**
 * What one claim event changed, against the claim as the previous event of
 * the same allocation left it (`before`, undefined for its first). A
 * deleted claim (`ClaimDeleted`, or one gone free) is `released`, never
 * with its last controller state: the row it carries is the claim as it was.
 */
function change(e: StreamEvent, c: Partial<ClaimEvent>, before: Partial<ClaimEvent> | undefined): { change: string; detail: string } | undefined {
  const reason = c.ReleaseReason || before?.ReleaseReason || '';
  if (/delete/i.test(e.Type) || c.State === 'free') {
    return { change: 'released', detail: reason ? `reason: ${reason}` : 'the claim is gone' };
  }
  if (!before) {
    const how = c.Mode === 'read' ? 'for reading' : 'for writing';
    return { change: 'claimed', detail: `${how} (${c.AccessMode ?? '?'}, ${c.AttachmentMode ?? '?'})${c.ControllerPublish === 'published' ? ', published by the controller' : ''}` };
  }
  if (c.State && c.State !== before.State && STATE_WORDS[c.State]) {
    return { change: STATE_WORDS[c.State]!, detail: c.State === 'unpublishing' ? `reason: ${reason || 'not given'}` : reason ? `reason: ${reason}` : '' };
  }
  if (c.FencedUntil && c.FencedUntil !== before.FencedUntil) {
    return { change: 'fenced', detail: `held until ${new Date(c.FencedUntil).toLocaleString()}${c.FenceReason ? `: ${c.FenceReason}` : ''}` };
  }
  if (c.LastError && c.LastError !== before.LastError) {
    return { change: 'release attempt failed', detail: `attempt ${c.ReleaseAttempts ?? '?'}: ${c.LastError}` };
  }
  if (c.ControllerPublish !== before.ControllerPublish) {
    if (c.ControllerPublish === 'published') return { change: 'published', detail: `the controller attached the volume to node ${c.NodeID ?? '?'}` };
    if (c.ControllerPublish === 'pending') return { change: 'publishing', detail: 'asked the controller to attach the volume' };
    if (c.ControllerPublish === 'uncertain') return { change: 'publish uncertain', detail: 'the controller did not answer; Berth checks again' };
  }
  if (c.BerthReleaseOverride && c.BerthReleaseOverride !== before.BerthReleaseOverride) return { change: 'unmounted by the agent', detail: c.BerthReleaseOverride };
  // Nothing an operator reads changed (an index bump): not a row.
  return undefined;
}

/** A volume's claim history, newest first, from its claim events (oldest first), each row what happened in words. */
export function claimHistory(events: readonly StreamEvent[]): ClaimHistoryRow[] {
  const last = new Map<string, Partial<ClaimEvent>>();
  const rows: ClaimHistoryRow[] = [];
  for (const e of events) {
    const c = claimOf(e) ?? {};
    const allocId = c.AllocationID ?? e.Key.split('/').pop() ?? '';
    const before = last.get(allocId);
    const what = change(e, c, before);
    if (/delete/i.test(e.Type) || c.State === 'free') last.delete(allocId);
    else last.set(allocId, c);
    if (what) rows.push({ index: e.Index, allocId, nodeId: c.NodeID ?? before?.NodeID ?? '', mode: c.Mode ?? before?.Mode ?? '-', ...what });
  }
  return rows.reverse();
}

/** Each kind of difference the doctor finds, as a heading an operator understands. */
export const FINDING_WORDS: Record<DriftKind, string> = {
  'claim-without-allocation': 'Claimed for an allocation that is gone or finished',
  'stale-controller-publication': 'Attached by the controller to a node no claim needs',
  'mount-without-record': 'Mounted on a node without a record in Berth',
  'record-without-mount': 'Recorded as mounted, but not mounted',
  'unknown-plugin-volume': 'A volume of the plugin that Berth does not know',
  'plugin-not-checked': 'A plugin that could not be checked',
};
