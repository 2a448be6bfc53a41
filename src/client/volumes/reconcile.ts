// Recovery after a restart: brings the node in line with the (volume,
// allocation) pairs still wanted, from the records alone. The start-up half
// (marking steps the mount table cannot confirm as uncertain) is in
// VolumeManager.start; this is the half that calls the plugin.

import { AbortedError, BerthError, describeError, throwIfAborted, type Logger } from '../../lib/index.js';
import { listDirs, removeEmptyDir } from './empty-dirs.js';
import type { KeyedLock } from './keyed-lock.js';
import type { MountPaths } from './mount-paths.js';
import { specFromRecord } from './step-spec.js';
import type { StepRunner } from './step-runner.js';
import type { PublishRecord, VolumeRecords } from './volume-records.js';
import type { ReconcileReport, VolumeAllocPair } from './volume-types.js';

/** How many volumes reconcile works on at once. */
const RECONCILE_CONCURRENCY = 4;

export interface ReconcileDeps {
  records: VolumeRecords;
  steps: StepRunner;
  /** The volume manager's per-volume lock: reconcile takes each volume's turn. */
  locks: KeyedLock;
  paths: MountPaths;
  logger: Logger;
}

interface VolumeGroup {
  publications: string[];
  stages: string[];
}

/**
 * Reconciles every recorded volume of one plugin with `wanted` (see
 * VolumeManager.reconcile for the contract). Failures are reported, not
 * thrown; throws only AbortedError.
 */
export async function reconcileRecords(deps: ReconcileDeps, wanted: ReadonlyArray<VolumeAllocPair>, signal: AbortSignal): Promise<ReconcileReport> {
  const report: ReconcileReport = { kept: [], republished: [], awaitingMount: [], tornDown: [], unstaged: [], failed: [], removedDirs: 0 };
  const wantedPairs = new Set(wanted.map((w) => pairKey(w.volumeId, w.allocId)));
  const wantedVolumes = new Set(wanted.map((w) => w.volumeId));
  // Group by the plugin's volume ID: one volume's steps run in order, volumes run side by side.
  const byVolume = new Map<string, VolumeGroup>();
  const group = (externalId: string): VolumeGroup => {
    let g = byVolume.get(externalId);
    if (!g) byVolume.set(externalId, (g = { publications: [], stages: [] }));
    return g;
  };
  for (const { key, value } of deps.records.publications()) group(value.externalId).publications.push(key);
  for (const { key, value } of deps.records.stages()) group(value.externalId).stages.push(key);

  const work = [...byVolume.entries()];
  const worker = async (): Promise<void> => {
    for (let next = work.shift(); next; next = work.shift()) {
      const [externalId, g] = next;
      await deps.locks.with(externalId, signal, () => reconcileVolume(deps, g, wantedPairs, wantedVolumes, report, signal));
    }
  };
  await Promise.all(Array.from({ length: Math.min(RECONCILE_CONCURRENCY, work.length) }, worker));
  throwIfAborted(signal);
  report.removedDirs = await removeLeftovers(deps);
  deps.logger.info(
    {
      kept: report.kept.length,
      republished: report.republished.length,
      awaitingMount: report.awaitingMount.length,
      tornDown: report.tornDown.length,
      unstaged: report.unstaged.length,
      failed: report.failed.length,
      removedDirs: report.removedDirs,
    },
    'volumes reconciled',
  );
  return report;
}

async function reconcileVolume(
  deps: ReconcileDeps,
  g: VolumeGroup,
  wantedPairs: ReadonlySet<string>,
  wantedVolumes: ReadonlySet<string>,
  report: ReconcileReport,
  signal: AbortSignal,
): Promise<void> {
  const { records, steps } = deps;
  for (const key of g.publications) {
    // Re-read under the lock: a mountVolume may have changed it since the listing.
    const rec = records.getPublication(key);
    if (!rec) continue;
    const pair = { volumeId: rec.volumeId, allocId: rec.allocId };
    const log = deps.logger.child(pair);
    try {
      if (wantedPairs.has(pairKey(rec.volumeId, rec.allocId))) {
        if (rec.state === 'done') {
          report.kept.push(pair);
        } else if (!rec.replayable || !stageReplayable(records, rec)) {
          report.awaitingMount.push(pair);
        } else {
          const spec = specFromRecord(deps, rec);
          if (rec.stageKey) await steps.stage(spec, signal, log);
          await steps.publish(spec, signal, log);
          report.republished.push(pair);
        }
      } else {
        await steps.unpublish(key, signal, log);
        report.tornDown.push(pair);
      }
    } catch (err) {
      if (err instanceof AbortedError) throw err;
      report.failed.push({ ...pair, code: err instanceof BerthError ? err.code : 'UNKNOWN', message: describeError(err) });
    }
  }
  for (const key of g.stages) {
    const rec = records.getStage(key);
    if (!rec || wantedVolumes.has(rec.volumeId)) continue;
    const log = deps.logger.child({ volumeId: rec.volumeId });
    try {
      if (await steps.unstageIfUnused(key, signal, log)) report.unstaged.push({ volumeId: rec.volumeId, namespace: rec.namespace });
    } catch (err) {
      if (err instanceof AbortedError) throw err;
      report.failed.push({ volumeId: rec.volumeId, code: err instanceof BerthError ? err.code : 'UNKNOWN', message: describeError(err) });
    }
  }
}

/** False when the publication's staging must be redone and that needs what is never recorded. */
function stageReplayable(records: VolumeRecords, rec: PublishRecord): boolean {
  const stage = rec.stageKey ? records.getStage(rec.stageKey) : undefined;
  return !stage || (stage.state === 'done' && stage.op === 'stage') || stage.replayable;
}

/** Removes empty, unmounted directories under staging/ and per-alloc/ that no record names. */
async function removeLeftovers(deps: ReconcileDeps): Promise<number> {
  const named = new Set<string>();
  for (const { value } of deps.records.publications()) named.add(value.targetPath);
  for (const { value } of deps.records.stages()) named.add(value.stagingPath);
  let removed = 0;
  for (const top of [deps.paths.stagingRoot, deps.paths.perAllocRoot]) {
    for (const a of await listDirs(top)) {
      for (const b of await listDirs(a)) {
        for (const c of await listDirs(b)) {
          if (named.has(c)) continue;
          if (await removeEmptyDir(c)) removed++;
        }
        if (await removeEmptyDir(b)) removed++;
      }
      if (await removeEmptyDir(a)) removed++;
    }
  }
  return removed;
}

function pairKey(volumeId: string, allocId: string): string {
  return `${volumeId}\u0000${allocId}`;
}
