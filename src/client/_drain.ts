// Draining the node agent (`stop({ drain: true })`): every allocation is
// stopped and destroyed, workloads first, then plugin allocations (they
// unmount the workloads' volumes). Private to src/client.

import { describeError, type Logger } from '../lib/index.js';
import { isClientTerminal } from '../structs/index.js';
import type { AllocRunnerHandle, RunnerEntry } from './_client-types.js';

/**
 * Stops every allocation in `runners` (those stopped and destroyed leave
 * the map); each one that could not be, with why, goes to `problems`.
 * `statusListeners` is called on every status update of any runner.
 */
export async function drainRunners(runners: Map<string, RunnerEntry>, statusListeners: Set<() => void>, log: Logger, problems: string[]): Promise<void> {
  const isPlugin = (e: RunnerEntry): boolean =>
    e.job.groups.find((g) => g.name === e.alloc.taskGroup)?.tasks.some((t) => t.csiPlugin !== undefined) ?? false;
  const entries = [...runners.values()];
  for (const wave of [entries.filter((e) => !isPlugin(e)), entries.filter(isPlugin)]) {
    await Promise.all(
      wave.map(async (e) => {
        try {
          await e.started;
          e.runner.update({ ...e.alloc, desiredStatus: 'stop', desiredDescription: 'the agent is draining' });
          await waitTerminal(statusListeners, e.runner, 60_000);
          if (!isClientTerminal(e.runner.status().clientStatus)) throw new Error('its tasks did not stop within 60 s');
          await e.runner.destroy();
          runners.delete(e.alloc.id);
        } catch (err) {
          log.warn({ allocId: e.alloc.id, err: describeError(err) }, 'draining an allocation failed');
          problems.push(`allocation ${e.alloc.id} (job ${e.alloc.jobId}): ${describeError(err)}`);
        }
      }),
    );
  }
}

/** Resolves once the runner reports a terminal client status, or after `timeoutMs`. */
async function waitTerminal(statusListeners: Set<() => void>, runner: AllocRunnerHandle, timeoutMs: number): Promise<void> {
  const deadline = AbortSignal.timeout(timeoutMs);
  while (!isClientTerminal(runner.status().clientStatus) && !deadline.aborted) {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        statusListeners.delete(done);
        deadline.removeEventListener('abort', done);
        resolve();
      };
      statusListeners.add(done);
      deadline.addEventListener('abort', done, { once: true });
    });
  }
}
