// The messages between the main thread (the one writer: it owns the state
// store) and the API's front workers. A worker tells main when a write
// request it serves begins and ends (RequestsInFlight, the request log) and
// hands it each registration it read; main answers with the outcome, or
// asks the worker to serve the request the usual way (relayed to main's
// fastify), e.g. on a follower, which forwards writes to the leader.
// Each post carries an array of these, in order (outbox.ts: one post a turn each way).

import type { Answer } from '../answers.js';
import type { ApiToken } from '../auth.js';
import type { Registration } from '../job-register-input.js';

/**
 * A registration as a worker hands it to main: the spec and the index check,
 * not where its paths came from (a function of the worker's; main has a
 * refusal that needs them relayed, so that fastify reads the job again).
 */
export type SentRegistration = Omit<Registration, 'origins'>;

/**
 * What a worker is started with. `role`: a front worker (the default) accepts on the API's
 * address; a reader (readers.ts) accepts nothing and only reads the registrations main
 * hands it (listenFd -1, no relay).
 */
export interface WorkerSetup {
  role?: 'front' | 'reader';
  /** The fd of main's listening socket (the API's address); the worker listens on its own duplicate. */
  listenFd: number;
  /** main's internal unix socket: where the worker relays what it does not serve itself. */
  relaySocket: string;
  /** The API's tokens: fixed for the server's life (the agent reads them once at start). */
  tokens: readonly ApiToken[];
  /** Largest accepted request body (fastify's bodyLimit). */
  bodyLimit: number;
  /** Tell main of every relayed request once it ended (the log is at trace level). */
  traceRelays: boolean;
}

/** Worker -> main. */
export type FromWorker =
  /** The worker is accepting on the API's address; `warmStart`: how its code was loaded, when from a build (src/warm-start). */
  | { t: 'ready'; warmStart?: { path: string; reason: string } }
  /** The worker's warm-up ended (worker-main.ts's warmMore) after `rounds` rounds, without being asked to close; `cache`: what saving its code cache did. */
  | { t: 'warmed'; rounds: number; cache?: string }
  /** The worker gave back memory in a quiet interval (its own heap, lib MemoryReclaimer): V8's committed heap before and after. */
  | { t: 'reclaimed'; beforeMiB: number; afterMiB: number; ms: number }
  /** The worker could not listen (why, for the log); main keeps serving alone. */
  | { t: 'failed'; error: string }
  /** A write request the worker may serve itself began (RequestsInFlight.enter). */
  | { t: 'enter'; id: number }
  /** It ended; `log` when the worker answered it (the request log's fields). */
  | { t: 'leave'; id: number; log?: RequestLog }
  /** A registration read and checked: main writes it. */
  | { t: 'register'; id: number; reg: SentRegistration; accept?: string }
  /** A relayed request ended (traceRelays): main logs it at trace level (a stream main hijacked has no request line). */
  | { t: 'relayed'; method: string; path: string; status: number; upgrade: boolean }
  /** A request failed in the worker (answered 500): main logs it. */
  | { t: 'fault'; error: string }
  /** A reader's reading of registration `id` (main's `read`): the spec and index check, or none when main's fastify must answer it. */
  | { t: 'read'; id: number; reg?: SentRegistration }
  /** The worker stopped accepting and finished what it served itself. */
  | { t: 'closed' };

/** Main -> worker. */
export type ToWorker =
  /** The answer to a registration, as main's fastify would have written it. */
  | { t: 'answer'; id: number; answer: Answer }
  /** Serve it the usual way (relay to main's fastify): e.g. this server does not lead. */
  | { t: 'relay'; id: number }
  /** A reader is asked to read a registration's body (readFastRegistration, as main would): it answers `read` with the same id. */
  | { t: 'read'; id: number; body: string; url: string; jobId?: string }
  | { t: 'close' };

/** The request log's fields (api.ts's onResponse hook). */
export interface RequestLog {
  method: string;
  route: string;
  status: number;
  caller?: string;
  ms: number;
}
