// A front worker of the API (a worker thread): accepts on the API's address
// beside main and its siblings (each on its own copy of the listening
// socket, listen-dup.ts), serves job registrations itself up to the store
// write (fast-register.ts) and relays everything else to main's fastify
// (relay.ts). Its HTTP server keeps fastify's timeouts, so a connection
// lives as long here as on main. A reader (role `reader`, readers.ts) is the
// same worker that never listens: main keeps its connections and hands it
// only the bodies of registrations to read (the `read` message), with the
// same warm-up, code cache and memory reclaimer.

import http from 'node:http';
import { getHeapStatistics } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { TokenTable } from '../auth.js';
import { registrationRoute } from '../registration-fast-path.js';
import { FastRegister } from './fast-register.js';
import { listenOnDuplicate } from './listen-dup.js';
import type { FromWorker, ToWorker, WorkerSetup } from './protocol.js';
import { Outbox } from './outbox.js';
import { Relay } from './relay.js';
import { sendErrorAnswer } from '../answers.js';
import { helperWarmStart, lowMemoryGc, MemoryReclaimer } from '../../../lib/index.js';

/** fastify's defaults, which main's listener has. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;
/** How long a closing worker waits for main's answers to the registrations it handed over. */
const CLOSE_WAIT_MS = 5_000;

if (!parentPort) throw new Error('worker-main.ts runs as a worker thread');
const port = parentPort;
const setup = workerData as WorkerSetup;
// One post a turn to main (outbox.ts): what the poll phase read, in order. A reader posts what it read of each
// batch main sent as soon as it is read: its port delivers every message queued in one callback, so while main
// kept sending, a post held for the next turn held the whole burst's reads until main stopped (every answer of
// 200 came within ~10 ms of the last).
const outbox = new Outbox<FromWorker>(sendBatch, setup.role === 'reader' ? 'tick' : 'immediate');
const post = (m: FromWorker): void => outbox.push(m);
const relay = new Relay(setup.relaySocket, setup.traceRelays ? (m) => post({ t: 'relayed', ...m }) : undefined);
const fast = new FastRegister({ post, tokens: new TokenTable(setup.tokens), bodyLimit: setup.bodyLimit, relay });

/** Requests begun here: the reclaimer's measure of this worker's traffic. */
let begun = 0;
// A worker's heap grows with its warm-up and with every burst it reads, as main's does, and V8 keeps those
// pages (two workers held some 80 MiB more at rest than main alone). The reclaimer main runs gives them back
// in a quiet interval, here for this worker's own heap: its first once the warm-up is over.
const MiB = 2 ** 20;
const collect = lowMemoryGc();
const reclaimer = new MemoryReclaimer({
  requests: () => begun,
  collect: async () => {
    const before = getHeapStatistics().total_heap_size;
    const started = performance.now();
    await collect();
    post({ t: 'reclaimed', beforeMiB: Math.round(before / MiB), afterMiB: Math.round(getHeapStatistics().total_heap_size / MiB), ms: Math.round(performance.now() - started) });
  },
});

/** A registration came: the warm-up (warmMore) stops for good; reads, such as a client's first probe, do not stop it. */
let registered = false;
/** The worker closes: the warm-up stops too. */
let closing = false;

const server = http.createServer({ keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS, requestTimeout: 0 }, (req, res) => {
  begun++;
  try {
    const at = registrationRoute(req.method, req.url);
    if (at) {
      registered = true;
      fast.serve(req, res, at);
    } else relay.request(req, res);
  } catch (err) {
    // Never expected: answered in Nomad's words rather than losing the request with the thread.
    if (!res.headersSent) sendErrorAnswer(req, res, 500, { code: 'INTERNAL', message: 'internal server error', details: {} });
    else res.destroy();
    post({ t: 'fault', error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
  }
});
server.on('upgrade', (req, socket, head: Buffer) => relay.upgrade(req, socket, head));

port.on('message', (batch: ToWorker[]) => {
  for (const m of batch) {
    if (m.t === 'close') void close();
    else if (m.t === 'read') read(m);
    else fast.answered(m);
  }
});

/** A reader reads a registration main hands it (as main's fast path would) and sends back what it read. */
function read(m: Extract<ToWorker, { t: 'read' }>): void {
  begun++;
  registered = true;
  let reg: ReturnType<FastRegister['read']>;
  try {
    reg = fast.read(m.body, m.url, m.jobId);
  } catch (err) {
    // Never expected (the read never throws): main's fastify answers it.
    post({ t: 'fault', error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
  }
  post({ t: 'read', id: m.id, ...(reg ? { reg } : {}) });
}

/** Posts a batch; should a message in it not clone (never expected), the others go one by one and a registration among the unsent is relayed. */
function sendBatch(batch: FromWorker[]): void {
  try {
    port.postMessage(batch);
  } catch {
    for (const m of batch) {
      try {
        port.postMessage([m]);
      } catch {
        if (m.t === 'register') fast.unsent(m.id);
      }
    }
  }
}

async function close(): Promise<void> {
  closing = true;
  void reclaimer.stop();
  server.close();
  server.closeIdleConnections();
  const deadline = Date.now() + CLOSE_WAIT_MS;
  while (fast.waiting > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  // What is left is relayed (blocking reads, streams): main's fastify ends those as it closes.
  server.closeAllConnections();
  relay.close();
  post({ t: 'closed' });
  outbox.flush();
}

/**
 * Rounds of the registration warm-up after the first (one a turn of the
 * event loop, until the first registration, the close, or WARM_WALL_MS), as
 * main's job-path-warmup.ts does for its own path: V8 optimizes a function
 * only after many calls, and a worker warmed once read a first burst's jobs
 * in the interpreter (zod's parse 2.4 ms a job against main's 0.1-0.2 ms).
 * The immediate stays referenced: an unreferenced one keeps libuv's poll
 * phase blocking, so in a worker that nothing else woke a round ran only when
 * a connection or a message came (3-11 rounds before a burst, not 300: with
 * two workers a burst then cost the process 2.7-3.2 ms of CPU a job, 1.7-2.3 ms
 * once the rounds ran). The rounds are bounded, and the
 * worker lives on its listener anyway.
 */
const WARM_ROUNDS = 300;
const WARM_WALL_MS = 3_000;
function warmMore(rounds: number, until: number): void {
  setImmediate(() => {
    if (closing) return;
    if (registered || rounds >= WARM_ROUNDS || performance.now() > until) return warmed(rounds);
    fast.warm();
    warmMore(rounds + 1, until);
  });
}

/**
 * The warm-up ended: a worker started from a build (dist/api-worker.cjs) writes its code cache now (unless V8
 * took one at load), so that it holds the registration path the rounds compiled, as main writes its own once idle.
 */
function warmed(rounds: number): void {
  const warm = helperWarmStart();
  post({ t: 'warmed', rounds, ...(warm ? { cache: warm.saveCache() } : {}) });
}

// A reader listens nowhere: it is ready once loaded.
(setup.role === 'reader' ? Promise.resolve() : listenOnDuplicate(server, setup.listenFd)).then(
  () => {
    fast.warm();
    const warm = helperWarmStart();
    post({ t: 'ready', ...(warm ? { warmStart: { path: warm.path, reason: warm.reason } } : {}) });
    outbox.flush();
    warmMore(1, performance.now() + WARM_WALL_MS);
    void reclaimer.start();
  },
  (err: unknown) => {
    post({ t: 'failed', error: err instanceof Error ? err.message : String(err) });
    outbox.flush();
  },
);
