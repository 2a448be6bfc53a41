// The life of one CSI volume of an allocation, as the CSI hook writes it
// down: a pure transition function over the durable record.
//
//   (none) --claiming--> claiming --claimed--> claimed --mounted--> mounted
//                                                 ^                    |
//                                                 +----unmounted-------+
//   any --released--> (none)
//
// `claiming` is written before the claim is sent, so a crash never leaks a
// claim; a claim answered again (a retry, a restart) keeps `mounted`; a
// volume is released only once unmounted or never mounted.

import { BerthError, redactSecretLookingValues } from '../../lib/index.js';
import type { CsiVolumeRecord } from './alloc-records.js';
import type { ClaimedVolume } from './volume-claimer.js';

export type CsiVolumeState = CsiVolumeRecord['state'];

/** What happened to the volume. */
export type CsiVolumeEvent =
  /** The claim is about to be sent. */
  | { type: 'claiming'; volumeId: string; namespace: string; readOnly: boolean }
  /** The server granted the claim; `groupFsType` is the job's file-system type, used when the volume names none. */
  | { type: 'claimed'; volume: ClaimedVolume; publishContext: Record<string, string>; groupFsType?: string | undefined }
  /** The plugin published the volume at `source` (first mount or remount). */
  | { type: 'mounted'; source: string }
  /** Unpublished (and unstaged when last); the claim still stands. */
  | { type: 'unmounted' }
  /** The server released the claim: the record goes. */
  | { type: 'released' };

/** Which states each event may leave from (`none`: no record yet). */
export const CSI_VOLUME_TRANSITIONS: Readonly<Record<CsiVolumeEvent['type'], ReadonlyArray<CsiVolumeState | 'none'>>> = {
  claiming: ['none'],
  claimed: ['claiming', 'claimed', 'mounted'],
  mounted: ['claimed', 'mounted'],
  unmounted: ['claimed', 'mounted'],
  released: ['claiming', 'claimed', 'mounted'],
};

/** An event that cannot happen in the record's state: a bug in the caller, never a user error. */
export class CsiVolumeTransitionError extends BerthError {
  constructor(message: string) {
    super('ALLOC_VOLUME_BAD_TRANSITION', message);
  }
}

/**
 * The record after `event`, or undefined once released. Pure: returns a new
 * record and never changes `rec`. Throws CsiVolumeTransitionError for an
 * event not allowed in the record's state (CSI_VOLUME_TRANSITIONS).
 */
export function csiVolumeTransition(rec: CsiVolumeRecord | undefined, event: CsiVolumeEvent): CsiVolumeRecord | undefined {
  const from = rec?.state ?? 'none';
  if (!CSI_VOLUME_TRANSITIONS[event.type].includes(from)) {
    throw new CsiVolumeTransitionError(`CSI volume ${rec?.volumeId ?? ''}: "${event.type}" cannot happen in state "${from}"`);
  }
  switch (event.type) {
    case 'claiming':
      return { volumeId: event.volumeId, namespace: event.namespace, state: 'claiming', readOnly: event.readOnly };
    case 'claimed': {
      const v = event.volume;
      const prev = rec as CsiVolumeRecord;
      const next: CsiVolumeRecord = {
        ...prev,
        state: prev.state === 'mounted' ? 'mounted' : 'claimed',
        pluginId: v.pluginId,
        externalId: v.externalId,
        // Written down without credential-looking values; the raw context goes to the plugin only.
        context: redactSecretLookingValues(v.context),
        publishContext: { ...event.publishContext },
        accessMode: v.accessMode,
        attachmentMode: v.attachmentMode,
      };
      if (v.mountOptions?.fsType ?? event.groupFsType) next.fsType = v.mountOptions?.fsType || event.groupFsType;
      return next;
    }
    case 'mounted':
      return { ...(rec as CsiVolumeRecord), state: 'mounted', source: event.source };
    case 'unmounted': {
      const { source: _gone, ...rest } = rec as CsiVolumeRecord;
      return { ...rest, state: 'claimed' };
    }
    case 'released':
      return undefined;
  }
}
