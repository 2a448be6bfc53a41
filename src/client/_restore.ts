// What the Client does after an agent restart: recreate the runners of the
// previous run (reattaching, never tearing down), name the tasks they own
// (the rest are orphans to reap) and, once the server's first list arrived,
// reconcile the CSI volumes with it. Private to src/client.

import { describeError, type Logger } from '../lib/index.js';
import type { Allocation, Job } from '../structs/index.js';
import { reconcileCsiVolumes, savedAllocRunners, type AllocRunner } from './allocrunner/index.js';
import type { CsiManager } from './csimanager/index.js';
import type { ClientStateStore } from './state/index.js';
import { RecordedVolumes } from './volumes/index.js';
import type { RunnerEntry } from './_client-types.js';

/** Recreates the runners of a previous run (from their own records) and reattaches their tasks; tears nothing down. */
export async function restoreRunners(store: ClientStateStore, newRunner: (alloc: Allocation, job: Job) => RunnerEntry, log: Logger): Promise<void> {
  await Promise.all(
    savedAllocRunners(store).map(async ({ alloc, job }) => {
      let entry: RunnerEntry;
      try {
        entry = newRunner(alloc, job);
      } catch (err) {
        // A record this agent cannot rebuild a runner from must not keep the agent down.
        log.error({ allocId: alloc.id, err: describeError(err) }, 'cannot restore an allocation runner');
        return;
      }
      entry.awaitingServer = true;
      entry.started = entry.runner.restore().catch((err: unknown) => {
        log.warn({ allocId: alloc.id, err: describeError(err) }, 'restoring an allocation failed');
      });
      await entry.started;
    }),
  );
}

/** The tasks (`allocId.task`) the restored runners own: what is left in other cgroups is an orphan. */
export function ownedTasks(runners: Map<string, RunnerEntry>): Set<string> {
  const keep = new Set<string>();
  for (const [allocId, entry] of runners) {
    const group = entry.job.groups.find((g) => g.name === entry.alloc.taskGroup);
    for (const task of group?.tasks ?? []) keep.add(`${allocId}.${task.name}`);
  }
  return keep;
}

/**
 * After the first server list: each node plugin's volume manager tears down
 * what no live allocation wants (allocations that ended or vanished while
 * the agent was down) and keeps the rest; then the live runners remount
 * from their records (intact steps send nothing). Waits for each plugin.
 */
export async function reconcileVolumes(c: {
  store: ClientStateStore;
  csiManager: CsiManager;
  runners: Map<string, RunnerEntry>;
  signal: AbortSignal;
  root: Logger;
  log: Logger;
}): Promise<void> {
  const plugins = new RecordedVolumes(c.store).pluginsWithRecords();
  await Promise.all([...c.runners.values()].map((e) => e.started));
  try {
    const { failed } = await reconcileCsiVolumes({
      csiManager: c.csiManager,
      runners: [...c.runners.values()].map((e) => e.runner as AllocRunner),
      extraPlugins: plugins,
      signal: c.signal,
      logger: c.root,
    });
    c.log.info({ plugins: [...plugins], failed }, 'volumes reconciled with the server');
  } catch (err) {
    if (!c.signal.aborted) c.log.warn({ err: describeError(err) }, 'reconciling volumes failed');
  }
}
