// The access mode rules every claim of a volume obeys, in one place: claim
// admission applies them to the claims recorded, placement to those claims
// plus the ones its placements will take. If the two disagreed, placement
// would put an allocation where its claim is refused forever.

import type { AccessMode, AttachmentMode } from '../csi/index.js';
import type { ClaimMode } from './volume.js';

/** A claim already held (or placed and about to be taken) on a volume. */
export interface ClaimHolder {
  allocId: string;
  nodeId: string;
  mode: ClaimMode;
  accessMode: AccessMode;
  attachmentMode: AttachmentMode;
}

/** A claim wanted on the volume by an allocation on `nodeId`. */
export interface ClaimWant {
  nodeId: string;
  mode: ClaimMode;
  accessMode: AccessMode;
  attachmentMode: AttachmentMode;
}

/**
 * Why a wanted claim cannot be held next to the others:
 * - `mode-in-use`: the volume is held in another access or attachment mode
 *   (a reader-only claim next to a single-node-writer one, say);
 * - `other-node`: a single-node mode, and the volume is held on another node;
 * - `writer`: a write claim under a single-writer mode, and there is a writer.
 */
export type ClaimConflict<H extends ClaimHolder = ClaimHolder> = { kind: 'mode-in-use' | 'other-node' | 'writer'; holder: H };

export const SINGLE_NODE_MODES: ReadonlySet<AccessMode> = new Set([
  'single-node-writer',
  'single-node-reader-only',
  'single-node-single-writer',
  'single-node-multi-writer',
]);
export const SINGLE_WRITER_MODES: ReadonlySet<AccessMode> = new Set(['single-node-writer', 'single-node-single-writer', 'multi-node-single-writer']);

/**
 * Every rule `want` breaks against `holders` (the volume's claims not yet
 * free, the claimant's own left out), one conflict per kind in the order
 * mode-in-use, other-node, writer; empty when it may be held. Pure. Callers
 * may describe whichever conflict reads best; any one refuses the claim.
 */
export function claimConflicts<H extends ClaimHolder>(holders: readonly H[], want: ClaimWant): Array<ClaimConflict<H>> {
  const out: Array<ClaimConflict<H>> = [];
  const other = holders.find((c) => c.accessMode !== want.accessMode || c.attachmentMode !== want.attachmentMode);
  if (other) out.push({ kind: 'mode-in-use', holder: other });
  if (SINGLE_NODE_MODES.has(want.accessMode)) {
    const elsewhere = holders.find((c) => c.nodeId !== want.nodeId);
    if (elsewhere) out.push({ kind: 'other-node', holder: elsewhere });
  }
  if (want.mode === 'write' && SINGLE_WRITER_MODES.has(want.accessMode)) {
    const writer = holders.find((c) => c.mode === 'write');
    if (writer) out.push({ kind: 'writer', holder: writer });
  }
  return out;
}
