// Plugin handover: a replaced CSI plugin allocation keeps serving until its
// successor serves every one of its plugins (docs/csi-rules.md scenario 3).
// Private to src/client (the Client uses it).

import type { Clock, Logger } from '../lib/index.js';
import { isClientTerminal } from '../structs/index.js';
import type { RunnerEntry } from './_client-types.js';
import type { PluginRegistry } from './dynamicplugins/index.js';

/** The CSI plugins a runner's tasks serve (empty for a workload). */
export function pluginsOf(entry: RunnerEntry): string[] {
  const group = entry.job.groups.find((g) => g.name === entry.alloc.taskGroup);
  return (group?.tasks ?? []).flatMap((t) => (t.csiPlugin ? [t.csiPlugin.id] : []));
}

/** For a plugin allocation told to stop: a live allocation of the same job and group that will serve its plugins. */
export function pluginSuccessor(entry: RunnerEntry, runners: Iterable<RunnerEntry>): RunnerEntry | undefined {
  if (pluginsOf(entry).length === 0) return undefined;
  return [...runners].find(
    (e) =>
      e !== entry &&
      e.alloc.jobId === entry.alloc.jobId &&
      e.alloc.namespace === entry.alloc.namespace &&
      e.alloc.taskGroup === entry.alloc.taskGroup &&
      e.alloc.desiredStatus === 'run' &&
      !isClientTerminal(e.runner.status().clientStatus),
  );
}

export interface HandoverDeps {
  registry: PluginRegistry;
  clock: Clock;
  log: Logger;
  timeoutMs: number;
  /** The agent stops: the wait ends and nothing is stopped. */
  signal: AbortSignal;
}

/**
 * Stops a replaced plugin allocation once its successor serves every one of
 * its plugins (the older one keeps working until the newer one is up), or
 * once the successor failed or the wait ran out.
 * When the agent stops meanwhile nothing is stopped: after the restart the
 * server's list brings the stop again.
 */
export async function stopAfterHandover(old: RunnerEntry, successor: RunnerEntry, deps: HandoverDeps): Promise<void> {
  const { registry, clock, log } = deps;
  const plugins = pluginsOf(old);
  const serves = (): boolean =>
    plugins.every((id) =>
      (['csi-controller', 'csi-node'] as const).every((type) => {
        const oldServed = registry.registrations(type, id).some((r) => r.allocId === old.alloc.id);
        return !oldServed || registry.serving(type, id)?.allocId === successor.alloc.id;
      }),
    );
  const deadline = clock.now() + deps.timeoutMs;
  try {
    while (!serves() && !isClientTerminal(successor.runner.status().clientStatus) && clock.now() < deadline) {
      await clock.sleep(100, deps.signal);
    }
    log.info({ allocId: old.alloc.id, successor: successor.alloc.id, handedOver: serves() }, 'stopping a replaced plugin allocation');
  } catch {
    // The agent stops: nothing is stopped now; after the restart the server's list brings the stop again.
    return;
  }
  old.runner.update(old.alloc);
}
