// The API's front workers, main's side. Main (the one writer: it owns the
// state store, the scheduler and, in a dev agent, the client) keeps its
// fastify listener; N worker threads accept on the same socket, and once
// they all do, main stops accepting there (main-listener.ts) until none does.
// A worker serves job registrations up to the store write, which it hands
// to main (registered here: JobService.register, so registrations that
// arrive in one turn share a write), and relays every other request to
// main's fastify over an internal unix socket (0600, in the server's data
// dir) whose connections main's HTTP server takes as its own. Blocking
// reads and event streams are main's, so they stay exact.
//
// A worker tells main when a write request it serves begins and ends, so
// RequestsInFlight (the evaluation worker's wait for a quiet API) and the
// request log count it. A worker that dies is logged and replaced; what it
// had in flight is no longer counted.

import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import type { FastifyInstance } from 'fastify';
import { describeError, type Logger } from '../../../lib/index.js';
import { adoptCheckedJobSpec, MAX_REQUEST_BODY_BYTES } from '../../../structs/index.js';
import { registrationAnswer } from '../registration-fast-path.js';
import type { ApiDeps } from '../route-context.js';
import type { Answer } from '../answers.js';
import type { FromWorker, SentRegistration, ToWorker, WorkerSetup } from './protocol.js';
import { MainListener } from './main-listener.js';
import type { Outbox } from './outbox.js';
import { markInternal } from './relayed.js';
import { ThreadNews } from './thread-news.js';
import { replaceLater, startApiThread } from './worker-entry.js';

/** A unix socket's path must fit in sockaddr_un (108 bytes on Linux, with its NUL). */
const MAX_SOCKET_PATH = 100;
/** How long close() waits for a worker to finish what it serves before ending it. */
const CLOSE_WAIT_MS = 6_000;

export interface ApiWorkersOptions {
  /** The services the fast path needs (the store's staleness, jobs, who leads, the tokens, the request count). */
  deps: Pick<ApiDeps, 'jobs' | 'store' | 'inFlight' | 'leadership' | 'tokens' | 'bodyLimit'>;
  /** Main's API (listening): the workers accept on its socket and relay to it. */
  app: FastifyInstance;
  /** How many workers. */
  count: number;
  /** Where the internal socket goes (`<dir>/run/api.sock`); a temp dir when absent or too long. */
  dataDir?: string;
  logger: Logger;
}

interface Slot {
  worker: Worker | undefined;
  /** What goes to the worker, one post a tick (the answers of one store write together). */
  outbox: Outbox<ToWorker> | undefined;
  /** Write requests the worker began and has not ended (released if it dies). */
  open: Set<number>;
  ready: boolean;
  /** The rounds the worker's warm-up ran, once it ended. */
  warmRounds?: number;
  failures: number;
  restart?: NodeJS.Timeout;
}

/** The pool: start() after the API listens, close() before it closes. */
export class ApiWorkers {
  readonly #opts: ApiWorkersOptions;
  readonly #log: Logger;
  /** The request log's logger (component http), as api.ts's. */
  readonly #httpLog: Logger;
  readonly #slots: Slot[] = [];
  #internal: net.Server | undefined;
  #socketPath = '';
  #tempDir: string | undefined;
  #setup: WorkerSetup | undefined;
  #main: MainListener | undefined;
  #closing = false;
  readonly #news = new ThreadNews();
  #reclaims = 0;

  constructor(opts: ApiWorkersOptions) {
    this.#opts = opts;
    this.#log = opts.logger.child({ component: 'api-workers' });
    this.#httpLog = opts.logger.child({ component: 'http' });
  }

  /** Workers accepting now. */
  get ready(): number {
    return this.#slots.filter((s) => s.ready).length;
  }

  /** Whether main accepts on the API's socket itself (it stops once every worker accepts; main-listener.ts). */
  get mainAccepting(): boolean {
    return this.#main?.accepting ?? true;
  }

  /** Memory reclaims the workers ran so far (each gives back its own heap in a quiet interval), ended workers' included. */
  get reclaims(): number {
    return this.#reclaims;
  }

  /** Waits until the workers reclaimed `count` times in all, or `timeoutMs` passed, or the pool closes; returns how many they did. */
  async whenReclaimed(count: number, timeoutMs = 30_000): Promise<number> {
    await this.#until(() => this.#reclaims >= count, timeoutMs);
    return this.#reclaims;
  }

  /** The worker threads' IDs (a test ends one to see it replaced). */
  get threadIds(): number[] {
    return this.#slots.flatMap((s) => (s.worker ? [s.worker.threadId] : []));
  }

  /** Ends worker `threadId` as a crash would (its connections cut, the thread gone): tests inject that fault with it. */
  async crash(threadId: number): Promise<void> {
    await this.#slots.find((s) => s.worker?.threadId === threadId)?.worker?.terminate();
  }

  /** Opens the internal socket and starts the workers; does not wait for them (see whenReady). */
  async start(): Promise<void> {
    const { app } = this.#opts;
    this.#main = new MainListener(app.server);
    const fd = this.#main.fd;
    if (fd < 0) throw new Error('the API listener has no socket to share with its workers');
    this.#socketPath = this.#socketPathFor(this.#opts.dataDir);
    rmSync(this.#socketPath, { force: true });
    // Main's HTTP server serves the relayed connections as its own (fastify's hooks, timeouts, close).
    const internal = net.createServer((socket) => {
      markInternal(socket);
      app.server.emit('connection', socket);
    });
    await new Promise<void>((resolve, reject) => {
      internal.once('error', reject);
      // A deep backlog: while main runs something long, relayed connections wait here (workers also retry a full one).
      internal.listen({ path: this.#socketPath, backlog: 4096 }, () => {
        internal.off('error', reject);
        resolve();
      });
    });
    chmodSync(this.#socketPath, 0o600);
    this.#internal = internal;
    this.#setup = { listenFd: fd, relaySocket: this.#socketPath, tokens: this.#opts.deps.tokens, bodyLimit: this.#opts.deps.bodyLimit ?? MAX_REQUEST_BODY_BYTES, traceRelays: this.#log.isLevelEnabled('trace') };
    for (let i = 0; i < this.#opts.count; i++) {
      const slot: Slot = { worker: undefined, outbox: undefined, open: new Set(), ready: false, failures: 0 };
      this.#slots.push(slot);
      this.#spawn(slot);
    }
  }

  /** Resolves once every worker accepts (or `timeoutMs` passed). */
  async whenReady(timeoutMs = 30_000): Promise<void> {
    await this.#until(() => this.ready >= this.#slots.length, timeoutMs);
  }

  /** Resolves with each worker's warm-up rounds once every worker's warm-up ended (or `timeoutMs` passed: undefined for those still warming). */
  async whenWarmed(timeoutMs = 30_000): Promise<Array<number | undefined>> {
    await this.#until(() => this.#slots.every((s) => s.warmRounds !== undefined), timeoutMs);
    return this.#slots.map((s) => s.warmRounds);
  }

  /** Waits until `done()` holds, looked at again at each worker's news (ready, warmed, reclaimed), or `timeoutMs` passed, or the pool closes. */
  #until(done: () => boolean, timeoutMs: number): Promise<void> {
    return this.#news.until(done, timeoutMs, () => this.#closing);
  }

  /** Stops the workers (each stops accepting and finishes its registrations) and closes the internal socket. */
  async close(): Promise<void> {
    this.#closing = true;
    // Main takes the connections again while the workers finish, until the API itself closes.
    this.#resumeMain();
    await Promise.all(
      this.#slots.map(async (slot) => {
        clearTimeout(slot.restart);
        const w = slot.worker;
        if (!w) return;
        const closed = new Promise<void>((resolve) => {
          const t = setTimeout(resolve, CLOSE_WAIT_MS);
          w.on('message', (batch: FromWorker[]) => {
            if (batch.some((m) => m.t === 'closed')) {
              clearTimeout(t);
              resolve();
            }
          });
          w.once('exit', () => {
            clearTimeout(t);
            resolve();
          });
        });
        slot.outbox?.push({ t: 'close' });
        slot.outbox?.flush();
        await closed;
        await w.terminate();
      }),
    );
    // Not waited for: the connections it took are main's HTTP server's, which closes them with the API.
    this.#internal?.close();
    rmSync(this.#socketPath, { force: true });
    if (this.#tempDir) rmSync(this.#tempDir, { recursive: true, force: true });
  }

  #socketPathFor(dataDir: string | undefined): string {
    const wanted = dataDir ? join(dataDir, 'run', 'api.sock') : undefined;
    if (wanted && wanted.length <= MAX_SOCKET_PATH) {
      mkdirSync(dirname(wanted), { recursive: true, mode: 0o700 });
      return wanted;
    }
    this.#tempDir = mkdtempSync(join(tmpdir(), 'berth-api-'));
    return join(this.#tempDir, 'api.sock');
  }

  #spawn(slot: Slot): void {
    // The fd to copy is main's handle's now (main swaps it when it stops accepting, never while a worker starts).
    const setup = { ...(this.#setup as WorkerSetup), listenFd: this.#main?.fd ?? -1 };
    const { worker: w, outbox } = startApiThread(setup, (from, m) => this.#onMessage(slot, from, m));
    slot.worker = w;
    slot.outbox = outbox;
    slot.ready = false;
    slot.warmRounds = undefined;
    w.once('error', (err) => this.#log.error({ thread: w.threadId, err: describeError(err) }, 'an API worker failed'));
    w.once('exit', (code) => {
      this.#release(slot);
      if (slot.worker === w) slot.worker = undefined;
      slot.ready = false;
      if (this.#closing) return;
      if (this.ready === 0) this.#resumeMain();
      slot.failures++;
      const { delayMs, timer } = replaceLater(slot.failures, () => !this.#closing, () => this.#spawn(slot));
      slot.restart = timer;
      this.#log.warn({ thread: w.threadId, code, restartInMs: delayMs }, 'an API worker ended; starting another');
    });
  }

  /** A dead worker's write requests are no longer in flight. */
  #release(slot: Slot): void {
    for (const _ of slot.open) this.#opts.deps.inFlight?.leave();
    slot.open.clear();
  }

  #onMessage(slot: Slot, w: Worker, m: FromWorker): void {
    const inFlight = this.#opts.deps.inFlight;
    switch (m.t) {
      case 'enter':
        inFlight?.began();
        inFlight?.enter();
        slot.open.add(m.id);
        return;
      case 'leave':
        if (slot.open.delete(m.id)) inFlight?.leave();
        // The request log's logger, made once: a pino child a message (its redaction compiled each time) cost main ~60 us a registration.
        if (m.log && this.#httpLog.isLevelEnabled('debug')) this.#httpLog.debug({ ...m.log, worker: w.threadId, fastPath: true }, 'request');
        return;
      case 'register': {
        // The answers of one store write leave in one post, once that write's promise chains settled.
        const out = slot.outbox;
        this.#register(m.reg, m.accept).then(
          (answer) => out?.push(answer ? { t: 'answer', id: m.id, answer } : { t: 'relay', id: m.id }),
          () => out?.push({ t: 'relay', id: m.id }),
        );
        return;
      }
      case 'ready':
        slot.ready = true;
        slot.failures = 0;
        this.#log.debug({ thread: w.threadId, ...(m.warmStart ? { warmStart: m.warmStart } : {}) }, 'API worker accepting');
        this.#news.told();
        this.#handOff();
        return;
      case 'warmed':
        slot.warmRounds = m.rounds;
        this.#log.debug({ thread: w.threadId, rounds: m.rounds, ...(m.cache ? { cache: m.cache } : {}) }, 'API worker warmed');
        this.#news.told();
        return;
      case 'reclaimed':
        this.#reclaims += 1;
        this.#log.debug({ thread: w.threadId, beforeMiB: m.beforeMiB, afterMiB: m.afterMiB, ms: m.ms }, 'API worker gave back memory in a quiet interval');
        this.#news.told();
        return;
      case 'failed':
        this.#log.warn({ thread: w.threadId, err: m.error }, 'an API worker could not listen; main serves without it');
        void w.terminate();
        return;
      case 'relayed':
        this.#log.trace({ method: m.method, path: m.path, status: m.status, upgrade: m.upgrade, worker: w.threadId }, 'relayed');
        return;
      case 'fault':
        this.#log.error({ thread: w.threadId, err: m.error }, 'request failed in an API worker');
        return;
      case 'closed':
        return;
    }
  }

  /**
   * Main stops accepting on the API's socket once every worker accepts
   * (main-listener.ts): otherwise libuv has main drain the accept queue
   * whenever it polls, and main reads much of a burst itself.
   */
  #handOff(): void {
    const main = this.#main;
    const all = (): boolean => !this.#closing && this.ready === this.#slots.length;
    if (!main?.accepting || !all()) return;
    void main.stop(all).then((stopped) => {
      if (stopped) this.#log.debug({ workers: this.ready }, 'main stopped accepting on the API socket: the workers take every connection');
    });
  }

  /** No worker accepts (or the pool closes): main accepts again. */
  #resumeMain(): void {
    const main = this.#main;
    if (!main || main.accepting) return;
    try {
      main.resume();
      this.#log.debug('main accepts on the API socket again');
    } catch (err) {
      this.#log.error({ err: describeError(err) }, 'main could not accept on the API socket again');
    }
  }

  /** Writes a registration; the answer as job-routes.ts's register gives it, or undefined: serve it the usual way (a follower; a job the state refused). */
  #register(reg: SentRegistration, accept: string | undefined): Promise<Answer | undefined> {
    // The worker's parseJobSpec checked it; the message port's copy is taken as checked, not parsed again here.
    return registrationAnswer(this.#opts.deps, this.#httpLog, { ...reg, spec: adoptCheckedJobSpec(reg.spec) }, accept);
  }
}
