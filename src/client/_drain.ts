// Draining the node agent (`stop({ drain: true })`): every allocation is
// stopped and destroyed, workloads first (those the server dropped and that
// are being destroyed too), then plugin allocations (they unmount the
// workloads' volumes). A workload whose volume cannot be
// unmounted because no instance of its node plugin serves on this node, and
// none of the plugin allocations here can bring one (the plugin job was
// stopped, or its replacement was not received before the agent stopped), is
// not waited for: its runner is shut down with its records kept, so the next
// start of the agent unmounts and releases the volume once the plugin runs
// again (docs/csi-rules.md, "Stopping the agent"). Private to src/client.

import { anySignal, describeError, type Logger } from '../lib/index.js';
import { isClientTerminal } from '../structs/index.js';
import type { RunnerEntry } from './_client-types.js';
import { pluginsOf } from './_handover.js';
import type { PluginRegistry } from './dynamicplugins/index.js';

/** How long the drain waits for an allocation's tasks to stop, and for a node plugin that is coming to serve its volumes. */
const DRAIN_WAIT_MS = 60_000;

export interface DrainDeps {
  runners: Map<string, RunnerEntry>;
  /** Runners being destroyed (the server dropped them): their cleanup may need the plugins too. */
  leaving: ReadonlyMap<string, RunnerEntry>;
  /** Called on every status update of any runner. */
  statusListeners: Set<() => void>;
  registry: PluginRegistry;
  log: Logger;
  /** Each allocation the drain could not stop or clean up, with why (the agent prints them). */
  problems: string[];
}

/**
 * Stops every allocation of `runners` (those stopped and destroyed leave
 * the map), and waits for those `leaving` to be destroyed; each one that
 * could not be, with why, goes to `problems`. Plugins go only once every
 * workload, leaving ones included, is done with them. A workload left with
 * volumes no plugin can unmount is shut down with its records (it stays in
 * `runners`). Never throws.
 */
export async function drainRunners(deps: DrainDeps): Promise<void> {
  const { runners, log, problems } = deps;
  const entries = [...runners.values(), ...deps.leaving.values()];
  const isPlugin = (e: RunnerEntry): boolean => pluginsOf(e).length > 0;
  for (const wave of [entries.filter((e) => !isPlugin(e)), entries.filter(isPlugin)]) {
    await Promise.all(
      wave.map(async (e) => {
        try {
          await e.started;
          if (!e.destroying) e.runner.update({ ...e.alloc, desiredStatus: 'stop', desiredDescription: 'the agent is draining' });
          await waitFor(deps, () => isClientTerminal(e.runner.status().clientStatus), DRAIN_WAIT_MS);
          if (!isClientTerminal(e.runner.status().clientStatus)) throw new Error('its tasks did not stop within 60 s');
          const stranded = await cleanedUpOrStranded(deps, e);
          if (stranded.length) {
            // Its postrun (and a destroy in progress) ends where it is; the record keeps each volume as mounted and claimed.
            await e.runner.shutdown();
            for (const s of stranded) {
              problems.push(
                `allocation ${e.alloc.id} (job ${e.alloc.jobId}): volume "${s.volumeId}" stays mounted and claimed: ${s.why}; ` +
                  `the agent unmounts and releases it when it starts again and the plugin runs`,
              );
            }
            log.warn({ allocId: e.alloc.id, volumes: stranded }, 'volumes left for the next start: their node plugin cannot serve');
            return;
          }
          // Cleaned up, but an unmount that kept failing leaves its volume: the volume manager's records
          // keep it (the next start's reconcile unpublishes it, the server then releases the claim).
          for (const v of e.runner.volumesToUnmount?.() ?? []) {
            problems.push(`allocation ${e.alloc.id} (job ${e.alloc.jobId}): volume "${v.volumeId}" stays mounted and claimed: its unmount failed (see the agent log); the agent unmounts it when it starts again`);
          }
          await (e.destroying ?? e.runner.destroy());
          runners.delete(e.alloc.id);
        } catch (err) {
          log.warn({ allocId: e.alloc.id, err: describeError(err) }, 'draining an allocation failed');
          problems.push(`allocation ${e.alloc.id} (job ${e.alloc.jobId}): ${describeError(err)}`);
        }
      }),
    );
  }
}

/**
 * Waits until the runner's cleanup (unmount, release) is done, and returns
 * []; or, as soon as a volume it still holds has a node plugin that no
 * instance serves and no live plugin allocation here provides (or one that
 * did not come within DRAIN_WAIT_MS), returns those volumes with why.
 */
async function cleanedUpOrStranded(deps: DrainDeps, e: RunnerEntry): Promise<Array<{ volumeId: string; why: string }>> {
  const runner = e.runner;
  if (!runner.cleanedUp || !runner.volumesToUnmount) return [];
  let cleaned = false;
  const cleanup = runner.cleanedUp().then(() => (cleaned = true));
  const stranded = (late: boolean): Array<{ volumeId: string; why: string }> =>
    (runner.volumesToUnmount?.() ?? []).flatMap((v) => {
      const why = late ? `its node plugin "${v.pluginId}" did not serve within 60 s` : pluginAway(deps, v.pluginId);
      return why ? [{ volumeId: v.volumeId, why }] : [];
    });
  await waitFor(deps, () => cleaned || stranded(false).length > 0, DRAIN_WAIT_MS, cleanup);
  if (cleaned) return [];
  const away = stranded(false);
  return away.length ? away : stranded(true);
}

/** Why node plugin `pluginId` cannot serve on this node now or soon, or undefined when an instance serves or a live plugin allocation provides it. */
function pluginAway(deps: DrainDeps, pluginId: string): string | undefined {
  if (deps.registry.serving('csi-node', pluginId)) return undefined;
  const provides = (p: RunnerEntry): boolean =>
    pluginsOf(p).includes(pluginId) && p.alloc.desiredStatus === 'run' && !isClientTerminal(p.runner.status().clientStatus);
  if ([...deps.runners.values()].some(provides)) return undefined;
  return `no instance of its node plugin "${pluginId}" runs on this node`;
}

/**
 * Resolves once `done()` holds (checked at every runner status update, every
 * plugin registry change and when `also` settles), or after `timeoutMs`.
 */
async function waitFor(deps: DrainDeps, done: () => boolean, timeoutMs: number, also?: Promise<unknown>): Promise<void> {
  const deadline = AbortSignal.timeout(timeoutMs);
  const finished = new AbortController();
  const signal = anySignal([deadline, finished.signal]);
  let wake = (): void => undefined;
  const check = (): void => wake();
  deps.statusListeners.add(check);
  signal.addEventListener('abort', check);
  void also?.then(check, check);
  const changes = deps.registry.subscribe({ signal });
  const pump = (async () => {
    for await (const _ of changes) check();
  })();
  try {
    // No await between the test and the new `wake`: a change in between is never missed.
    while (!done() && !deadline.aborted) await new Promise<void>((resolve) => (wake = resolve));
  } finally {
    finished.abort();
    deps.statusListeners.delete(check);
    await pump;
  }
}
