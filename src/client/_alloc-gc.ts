// The Client's side of allocation garbage collection: which finished
// allocations may go, destroying one (written down first, so that the
// server's list never brings it back) and how full the allocation disk is.
// Private to src/client; the collector itself is gc/.

import { statfsSync } from 'node:fs';
import { describeError, type Logger } from '../lib/index.js';
import { isClientTerminal } from '../structs/index.js';
import type { GcCandidate } from './gc/index.js';
import { ClientStateError, SqliteClientStateStore, type ClientStateStore } from './state/index.js';
import type { RunnerEntry } from './_client-types.js';

/** Allocations this node garbage-collected while the server still lists them: never run again. */
export const GC_BUCKET = 'gc-collected';

/** Finished allocations with nothing running or mounted, with when they finished (`now` when unknown). */
export function gcCandidates(runners: Map<string, RunnerEntry>, now: number): GcCandidate[] {
  const out: GcCandidate[] = [];
  for (const [allocId, entry] of runners) {
    if (entry.awaitingServer) continue;
    const status = entry.runner.status();
    if (!isClientTerminal(status.clientStatus)) continue;
    const collectable = entry.runner.collectable ? entry.runner.collectable() : entry.runner.wanted().length === 0;
    if (!collectable) continue;
    const ends = Object.values(status.taskStates).map((t) => t.finishedAt ?? 0);
    entry.finishedAt ??= Math.max(0, ...ends) || now;
    out.push({ allocId, finishedAt: entry.finishedAt });
  }
  return out;
}

/**
 * Destroys one finished allocation and forgets it: written down first, so
 * that the server's list (which may still hold it) never brings it back.
 */
export async function collectAlloc(
  allocId: string,
  c: { runners: Map<string, RunnerEntry>; collected: Set<string>; store: ClientStateStore; log: Logger },
): Promise<void> {
  const entry = c.runners.get(allocId);
  if (!entry) return;
  await entry.started;
  // The server's list may have dropped (and destroyed) it meanwhile.
  if (c.runners.get(allocId) !== entry) return;
  const gone = c.store.bucket<true>(GC_BUCKET);
  let recorded = true;
  try {
    gone.put(allocId, true);
  } catch (err) {
    // A full disk (its reserve used up) must not keep the space an allocation holds: destroy it
    // first, then write it down (until then a server list that still holds it would bring it back).
    if (!(err instanceof ClientStateError && err.code === 'STATE_DISK_FULL')) throw err;
    c.log.error({ allocId, err: describeError(err) }, 'disk full: collecting the allocation before recording it');
    recorded = false;
  }
  c.collected.add(allocId);
  c.runners.delete(allocId);
  try {
    await entry.runner.destroy();
  } catch (err) {
    // Keep the runner so that a later collection tries again (something under its directory stayed mounted).
    c.runners.set(allocId, entry);
    throw err;
  }
  if (!recorded) gone.put(allocId, true);
  if (c.store instanceof SqliteClientStateStore) c.store.restoreHeadroom();
}

/** Percent in use of the file system holding `dir`; undefined when unknown. */
export function diskUsagePercent(dir: string): number | undefined {
  try {
    const st = statfsSync(dir);
    if (st.blocks === 0) return undefined;
    return (1 - st.bavail / st.blocks) * 100;
  } catch {
    return undefined;
  }
}
