// The API's readers: worker threads that read job registrations for the
// main thread while it is busy. Main keeps every connection (HTTP, the store
// write, the answer, the reads: nothing is relayed); when a registration's
// body has arrived while other writes are in flight, main hands the body to
// a reader, which does what main's fast path would do with it (JSON.parse,
// Nomad's job read into Berth's checked spec: readFastRegistration, about a
// third of main's CPU a registration in a burst), and main writes the spec
// it gets back. A lone registration is read on main as before (the round
// trip would only add to its wait). A reader is the front worker's code
// that never listens (worker-main.ts, role `reader`): the same warm-up, code
// cache and memory reclaimer. It takes reads only once warmed (a cold one
// reads a job in the interpreter, ten times slower); a read it cannot finish
// (it ended) is read on main instead, and a reader that ends is replaced.

import type { Worker } from 'node:worker_threads';
import { describeError, type Logger } from '../../../lib/index.js';
import { adoptCheckedJobSpec, MAX_REQUEST_BODY_BYTES } from '../../../structs/index.js';
import type { Registration } from '../job-register-input.js';
import type { FromWorker, ToWorker, WorkerSetup } from './protocol.js';
import type { Outbox } from './outbox.js';
import { ThreadNews } from './thread-news.js';
import { replaceLater, startApiThread } from './worker-entry.js';

/**
 * Reads a reader may hold unanswered; beyond them main reads the body itself. A reader
 * the machine's other work keeps off a core (200 client threads, other processes) then
 * holds a few of a burst's registrations, not the whole of it: with no bound, a reader
 * scheduled late held every read until the burst ended, and its 200 answers all came
 * within ~10 ms of the last. 16 rather than 4: at 4 main still read about a third of a
 * burst's bodies itself (the reader takes a body in about the time main takes to accept
 * and hand on the next ones); 7 alternated pairs on a quiet machine, submit p99 125-161
 * against 121-218 ms (lower in 6 of 7), main 0.5-0.7 against 0.55-0.9 ms a job.
 */
export const MAX_PENDING_READS = 16;

export interface ApiReadersOptions {
  /** How many readers. */
  count: number;
  /** Largest accepted request body (fastify's bodyLimit). */
  bodyLimit?: number;
  logger: Logger;
}

/** A registration as a reader read it: what main's fast path writes. */
export type ReadRegistration = Pick<Registration, 'spec' | 'checkIndex'>;

interface Pending {
  resolve: (reg: ReadRegistration | undefined) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker | undefined;
  outbox: Outbox<ToWorker> | undefined;
  /** Reads handed to the worker and not answered yet. */
  pending: Map<number, Pending>;
  warmed: boolean;
  failures: number;
  restart?: NodeJS.Timeout;
}

export class ApiReaders {
  readonly #opts: ApiReadersOptions;
  readonly #log: Logger;
  readonly #slots: Slot[] = [];
  #next = 1;
  #closing = false;
  #served = 0;
  readonly #news = new ThreadNews();

  constructor(opts: ApiReadersOptions) {
    this.#opts = opts;
    this.#log = opts.logger.child({ component: 'api-readers' });
  }

  /** Registrations the readers read so far (those main's fastify then answered included). */
  get served(): number {
    return this.#served;
  }

  /** Readers warmed and taking reads now. */
  get warmed(): number {
    return this.#slots.filter((s) => s.warmed).length;
  }

  /** The readers' thread IDs (a test ends one to see its reads done on main and the reader replaced). */
  get threadIds(): number[] {
    return this.#slots.flatMap((s) => (s.worker ? [s.worker.threadId] : []));
  }

  /** Ends reader `threadId` as a crash would: tests inject that fault with it. */
  async crash(threadId: number): Promise<void> {
    await this.#slots.find((s) => s.worker?.threadId === threadId)?.worker?.terminate();
  }

  /** Starts the readers; does not wait for them (see whenWarmed). */
  start(): void {
    for (let i = 0; i < this.#opts.count; i++) {
      const slot: Slot = { worker: undefined, outbox: undefined, pending: new Map(), warmed: false, failures: 0 };
      this.#slots.push(slot);
      this.#spawn(slot);
    }
  }

  /** Resolves once every reader is warmed, or `timeoutMs` passed, or the readers close. */
  async whenWarmed(timeoutMs = 30_000): Promise<void> {
    await this.#news.until(() => this.warmed >= this.#slots.length, timeoutMs, () => this.#closing);
  }

  /**
   * Has a warmed reader read a registration's body (as readFastRegistration
   * reads it): resolves with what to write, or undefined when main's fastify
   * must answer it; rejects when the reader ended first (read it on main).
   * Returns undefined at once when no reader is warmed, or each holds
   * MAX_PENDING_READS already: main reads it.
   */
  read(body: string, url: string, jobId: string | undefined): Promise<ReadRegistration | undefined> | undefined {
    let slot: Slot | undefined;
    for (const s of this.#slots) if (s.warmed && (!slot || s.pending.size < slot.pending.size)) slot = s;
    const out = slot?.outbox;
    if (!slot || !out || slot.pending.size >= MAX_PENDING_READS) return undefined;
    const id = this.#next++;
    const pending = slot.pending;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      out.push({ t: 'read', id, body, url, ...(jobId !== undefined ? { jobId } : {}) });
    });
  }

  /** Stops the readers; what they were reading is read on main. */
  async close(): Promise<void> {
    this.#closing = true;
    this.#news.told();
    await Promise.all(
      this.#slots.map(async (slot) => {
        clearTimeout(slot.restart);
        slot.warmed = false;
        const w = slot.worker;
        slot.worker = undefined;
        this.#release(slot);
        await w?.terminate();
      }),
    );
  }

  #spawn(slot: Slot): void {
    const setup: WorkerSetup = { role: 'reader', listenFd: -1, relaySocket: '', tokens: [], bodyLimit: this.#opts.bodyLimit ?? MAX_REQUEST_BODY_BYTES, traceRelays: false };
    const { worker: w, outbox } = startApiThread(setup, (from, m) => this.#onMessage(slot, from, m));
    slot.worker = w;
    slot.outbox = outbox;
    slot.warmed = false;
    w.once('error', (err) => this.#log.error({ thread: w.threadId, err: describeError(err) }, 'an API reader failed'));
    w.once('exit', (code) => {
      if (slot.worker === w) slot.worker = undefined;
      slot.warmed = false;
      this.#release(slot);
      if (this.#closing) return;
      slot.failures++;
      const { delayMs, timer } = replaceLater(slot.failures, () => !this.#closing, () => this.#spawn(slot));
      slot.restart = timer;
      this.#log.warn({ thread: w.threadId, code, restartInMs: delayMs }, 'an API reader ended; its reads are done on the main thread; starting another');
    });
  }

  /** The reads a reader had not answered are read on main. */
  #release(slot: Slot): void {
    const pending = [...slot.pending.values()];
    slot.pending.clear();
    for (const p of pending) p.reject(new Error('the API reader ended'));
  }

  #onMessage(slot: Slot, w: Worker, m: FromWorker): void {
    switch (m.t) {
      case 'read': {
        const p = slot.pending.get(m.id);
        slot.pending.delete(m.id);
        this.#served++;
        // The reader's parseJobSpec checked it; the message port's copy is taken as checked, not parsed again here.
        p?.resolve(m.reg ? { ...m.reg, spec: adoptCheckedJobSpec(m.reg.spec) } : undefined);
        return;
      }
      case 'warmed':
        slot.warmed = true;
        slot.failures = 0;
        this.#log.debug({ thread: w.threadId, rounds: m.rounds, ...(m.cache ? { cache: m.cache } : {}) }, 'API reader warmed');
        this.#news.told();
        return;
      case 'ready':
        this.#log.debug({ thread: w.threadId, ...(m.warmStart ? { warmStart: m.warmStart } : {}) }, 'API reader started');
        return;
      case 'reclaimed':
        this.#log.debug({ thread: w.threadId, beforeMiB: m.beforeMiB, afterMiB: m.afterMiB, ms: m.ms }, 'API reader gave back memory in a quiet interval');
        return;
      case 'fault':
        this.#log.error({ thread: w.threadId, err: m.error }, 'a read failed in an API reader');
        return;
      default:
        return;
    }
  }
}
