// The storage pages' reads and actions over the public API: the CSI volume
// list with Berth's extras (usage, condition, claims, drift count on each
// row: one read for the whole list), the drift loop's latest report, the
// volume doctor (compare; compare and repair), and the blocked evaluations
// the overview counts.

import type { CSIVolumeListStub, DriftReport, Evaluation } from '../../src/api/index.js';
import { getIndexed, getJson, sendJson } from './api';

export type VolumeRow = CSIVolumeListStub;
export type DoctorReport = DriftReport;

export const storageApi = {
  /** Every CSI volume, in every namespace, each row with its latest usage, condition, claims and drift count. */
  volumeList: () => getIndexed<VolumeRow[]>('/v1/volumes?type=csi&namespace=*'),
  /** The drift loop's latest report (every difference it found, also those about no known volume). */
  driftReport: () => getJson<DoctorReport>('/v1/volumes/drift'),
  /** Runs `volume doctor`: compares the books now and repairs nothing. */
  doctor: () => getJson<DoctorReport>('/v1/volumes/doctor'),
  /** Runs `volume doctor --fix`: compares and repairs what is safe (management tokens; the API refuses others). */
  repair: () => sendJson<DoctorReport>('POST', '/v1/volumes/doctor'),
  /** The evaluations waiting for room (`blocked`), in every namespace. */
  blockedEvaluations: () => getJson<Evaluation[]>('/v1/evaluations?namespace=*&status=blocked'),
};

/** Why a volume row needs a look, in words (empty when nothing is wrong): abnormal, drifting, claims stuck releasing. */
export function rowTrouble(v: VolumeRow): string[] {
  const out: string[] = [];
  if (v.BerthCondition?.Abnormal) out.push(`abnormal: ${v.BerthCondition.Message}`);
  if (v.BerthDriftFindings > 0) out.push(`${v.BerthDriftFindings} difference${v.BerthDriftFindings === 1 ? '' : 's'} found by the drift check`);
  return out;
}
