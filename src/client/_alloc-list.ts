// How the Client acts on a change of the server's allocation list (the
// authority on what runs on this node): new allocations get a runner
// (started once the allocations holding their single-writer volumes let
// go), changed ones are updated (a replaced plugin allocation after a
// handover), and those the server no longer lists are destroyed. Only what
// changed is looked at (AllocWatcher says what did). Private to src/client.

import { describeError, type Clock, type Logger } from '../lib/index.js';
import { isClientTerminal, type Allocation, type Job } from '../structs/index.js';
import { singleWriterHolders, type NodeAllocation } from './allocrunner/index.js';
import type { PluginRegistry } from './dynamicplugins/index.js';
import type { AllocUpdate, StatusReporter } from './serverconn/index.js';
import type { RunnerEntry } from './_client-types.js';
import { pluginSuccessor, stopAfterHandover } from './_handover.js';
import type { AdmissionWindow } from './_admission.js';

/** What applyAllocList needs of the Client. */
export interface AllocListContext {
  runners: Map<string, RunnerEntry>;
  /** Runners the server no longer lists, while they are destroyed (their cleanup may still need the node's plugins). */
  leaving: Map<string, RunnerEntry>;
  /** Allocations this node garbage-collected: never run again. */
  collected: ReadonlySet<string>;
  /** Builds a runner and records it in `runners`; throws when the allocation cannot run here. */
  newRunner(alloc: Allocation, job: Job): RunnerEntry;
  reporter: StatusReporter | undefined;
  registry: PluginRegistry;
  clock: Clock;
  log: Logger;
  handoverTimeoutMs: number;
  /** The window new allocations run through (restored ones do not: they never wait behind new ones). */
  admission: AdmissionWindow;
  /** Aborted when the client stops. */
  signal: AbortSignal;
  /** Background work stop() waits for. */
  track(p: Promise<unknown>): void;
}

/** Acts on one change of the server's list (the first change lists every allocation). */
export function applyAllocList(ctx: AllocListContext, update: Pick<AllocUpdate, 'changed' | 'current'>): void {
  const { runners, log } = ctx;
  const updates: RunnerEntry[] = [];
  const created: RunnerEntry[] = [];
  for (const item of update.changed) {
    const { job: sentJob, ...alloc } = item;
    if (ctx.collected.has(alloc.id)) continue;
    const entry = runners.get(alloc.id);
    if (entry) {
      // A restored runner gets the server's view even when nothing changed: only then may it act.
      if (entry.awaitingServer || alloc.desiredStatus !== entry.alloc.desiredStatus || (alloc.modifyIndex !== entry.alloc.modifyIndex && serverSideChanged(entry.alloc, alloc))) {
        entry.awaitingServer = false;
        entry.alloc = alloc;
        // Stopped while it waited for a slot: it leaves the queue at once and never runs.
        if (alloc.desiredStatus !== 'run') entry.admission?.abort();
        if (sentJob) entry.job = sentJob;
        updates.push(entry);
      } else if (alloc.modifyIndex !== entry.alloc.modifyIndex) {
        // Only what this client reported changed (after a burst, the server sends every allocation back once its status
        // landed): nothing for the runner to act on, and no synchronous save of its record each.
        entry.alloc = alloc;
        if (sentJob) entry.job = sentJob;
      }
      continue;
    }
    if (alloc.desiredStatus !== 'run' || isClientTerminal(alloc.clientStatus)) continue;
    if (!sentJob) {
      log.warn({ allocId: alloc.id }, 'the server sent an allocation without its job; reporting it failed');
      ctx.reporter?.report({ id: alloc.id, clientStatus: 'failed', clientDescription: 'the server sent no job for this allocation', taskStates: {} });
      continue;
    }
    let fresh: RunnerEntry;
    try {
      fresh = ctx.newRunner(alloc, sentJob);
    } catch (err) {
      log.warn({ allocId: alloc.id, err: describeError(err) }, 'an allocation cannot run here');
      ctx.reporter?.report({ id: alloc.id, clientStatus: 'failed', clientDescription: describeError(err), taskStates: {} });
      continue;
    }
    created.push(fresh);
  }
  // Started once every known allocation has its new version, so that a replacement sees the one it replaces stopping.
  for (const fresh of created) {
    const holders = holdersOf(runners, fresh);
    const waiting = new AbortController();
    fresh.admission = waiting;
    fresh.started = (async () => {
      if (holders.length) await waitCleanedUp(ctx, fresh, holders);
      // Stopped by the server while it waited: it never runs.
      if (ctx.signal.aborted || fresh.alloc.desiredStatus !== 'run') return;
      const release = await ctx.admission.enter(AbortSignal.any([ctx.signal, waiting.signal]));
      delete fresh.admission;
      if (!release) return;
      if (ctx.signal.aborted || fresh.alloc.desiredStatus !== 'run') {
        release();
        return;
      }
      const running = fresh.runner.run();
      // The slot is free once the first task is handed to its driver (or the run ended, or the window's hold passed), not when run() resolves.
      void ctx.admission.hold(fresh.runner.launched ? Promise.race([fresh.runner.launched(), running]) : running, release);
      await running;
    })().catch((err: unknown) => {
      log.warn({ allocId: fresh.alloc.id, err: describeError(err) }, 'an allocation failed to start');
    });
    ctx.track(fresh.started);
  }
  // Updates after the new runners started, so that a plugin allocation being replaced can wait for its successor.
  for (const entry of updates) {
    const successor = entry.alloc.desiredStatus !== 'run' ? pluginSuccessor(entry, runners.values()) : undefined;
    if (successor) {
      ctx.track(
        stopAfterHandover(entry, successor, {
          registry: ctx.registry,
          clock: ctx.clock,
          log,
          timeoutMs: ctx.handoverTimeoutMs,
          signal: ctx.signal,
        }),
      );
    } else entry.runner.update(entry.alloc, entry.job);
  }
  // Allocations the server no longer has for this node: garbage-collected, so destroyed here.
  for (const [allocId, entry] of [...runners]) {
    if (update.current.has(allocId)) continue;
    runners.delete(allocId);
    ctx.leaving.set(allocId, entry);
    // One still waiting for a slot leaves the queue: its destroy does not wait behind the window.
    entry.admission?.abort();
    entry.destroying = (async () => {
      await entry.started;
      await entry.runner.destroy();
    })()
      .catch((err: unknown) => log.warn({ allocId, err: describeError(err) }, 'destroying an allocation failed'))
      .finally(() => ctx.leaving.delete(allocId));
    ctx.track(entry.destroying);
  }
}

/** Fields of an allocation the client itself reports, and the server's bookkeeping of its writes. */
const CLIENT_SIDE_FIELDS: ReadonlySet<string> = new Set(['clientStatus', 'clientDescription', 'taskStates', 'checks', 'modifyIndex', 'modifyTime']);

/** Whether `next` differs from `known` in anything but CLIENT_SIDE_FIELDS (what the server decides: desired status, job version, resources, ...). */
function serverSideChanged(known: Allocation, next: Allocation): boolean {
  const a = known as unknown as Record<string, unknown>;
  const b = next as unknown as Record<string, unknown>;
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (CLIENT_SIDE_FIELDS.has(key)) continue;
    const x = a[key];
    const y = b[key];
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null || JSON.stringify(x) !== JSON.stringify(y)) return true;
  }
  return false;
}

/**
 * The other allocations on this node a new one must wait for before it
 * mounts its single-writer volumes: those using one of them that are
 * being stopped (or failed) and not cleaned up yet, and those writing it.
 * On one node a volume never has two live writers, even for a moment.
 */
function holdersOf(runners: Map<string, RunnerEntry>, fresh: RunnerEntry): RunnerEntry[] {
  // Walked only when the new allocation writes a single-writer volume: a burst of
  // allocations without one costs no pass over the node's runners (and their status) each.
  function* others(): Iterable<NodeAllocation & { entry: RunnerEntry }> {
    for (const e of runners.values()) {
      if (e === fresh || e.runner.cleanedUp === undefined) continue;
      yield { alloc: e.alloc, job: e.job, entry: e, leaving: e.alloc.desiredStatus !== 'run' || isClientTerminal(e.runner.status().clientStatus) };
    }
  }
  return singleWriterHolders(fresh, others()).map((h) => h.entry);
}

/** Resolves once every holder cleaned up, or the client stops. Never rejects. */
async function waitCleanedUp(ctx: AllocListContext, fresh: RunnerEntry, holders: RunnerEntry[]): Promise<void> {
  const ids = holders.map((h) => h.alloc.id);
  ctx.log.info({ allocId: fresh.alloc.id, waitingFor: ids }, 'waiting for the allocations holding its single-writer volume to stop and unmount it');
  const stopped = new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
  await Promise.race([Promise.all(holders.map((h) => h.runner.cleanedUp?.())), stopped]);
  if (!ctx.signal.aborted) ctx.log.info({ allocId: fresh.alloc.id, waitedFor: ids }, 'single-writer volume released on this node; starting');
}
