// A worker thread of the API (a front worker, pool.ts; a reader,
// readers.ts): where it loads from (worker-main.ts under tsx, the build's
// api-worker.cjs once built), how it is started with its message batches,
// and when one that ended is replaced.

import { Worker } from 'node:worker_threads';
import { Outbox } from './outbox.js';
import type { FromWorker, ToWorker, WorkerSetup } from './protocol.js';

/**
 * Starts a worker thread with `setup` (unreferenced: it never holds the
 * process open). `onMessage` gets each message of each batch it posts, in
 * the order it queued them; what main sends it goes through the returned
 * outbox (one post a tick).
 */
export function startApiThread(setup: WorkerSetup, onMessage: (w: Worker, m: FromWorker) => void): { worker: Worker; outbox: Outbox<ToWorker> } {
  const [entry, opts] = workerEntry();
  const worker = new Worker(entry, { ...opts, workerData: setup });
  worker.unref();
  // One batch a post (outbox.ts), read in the order the worker queued it.
  worker.on('message', (batch: FromWorker[]) => {
    for (const m of batch) onMessage(worker, m);
  });
  return { worker, outbox: new Outbox<ToWorker>((batch) => worker.postMessage(batch), 'tick') };
}

/** A dead worker is replaced after this long, doubled after each death in a row, up to RESTART_MAX_MS. */
const RESTART_MIN_MS = 100;
const RESTART_MAX_MS = 10_000;

/**
 * Replaces a worker that ended for the `failures`-th time in a row: `spawn`
 * runs after the back-off unless `stillWanted()` says no by then. The timer
 * does not hold the process open.
 */
export function replaceLater(failures: number, stillWanted: () => boolean, spawn: () => void): { delayMs: number; timer: NodeJS.Timeout } {
  const delayMs = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** (failures - 1));
  const timer = setTimeout(() => {
    if (stillWanted()) spawn();
  }, delayMs);
  timer.unref();
  return { delayMs, timer };
}

/**
 * The worker's entry: the TypeScript file under tsx (tests); once built, api-worker.cjs, which loads the worker's
 * one-file bundle through a code cache (src/warm-start/helper-main.ts; api-worker.js, its ES module, if it cannot).
 */
export function workerEntry(): [string | URL, { eval?: boolean }] {
  if (!import.meta.url.endsWith('.ts')) return [new URL('./api-worker.cjs', import.meta.url), {}];
  // A worker thread does not inherit tsx's loader: it registers it, then loads the entry.
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./worker-main.ts', import.meta.url).href;
  return [`const { register } = await import(${JSON.stringify(tsx)}); register(); await import(${JSON.stringify(entry)});`, { eval: true }];
}
