// The main thread's registration fast path: PUT/POST /v1/jobs and
// /v1/job/:id served on the HTTP server's request event, without fastify's
// request and reply objects, hooks, content-type parser and serializer (a
// burst of 200 registrations from 200 connections spent a fifth of the
// agent's CPU in them). It does what the route and api.ts's hooks do for a
// registration that checks: counts the write in flight, authenticates the
// caller, reads the body (up to the body limit), reads and checks the job,
// writes it (JobService.register: the turn's shared store write) and answers
// as the route answers (registration-fast-path.ts, which the API's front
// workers share). Everything else goes to fastify, word for word its own: a
// request it refuses before its body (a bad token, no or too large a
// Content-Length), and after its body (bad JSON, a job that does not check,
// one the state refused, a follower's) with the body it read, which the
// registration routes' preParsing hook (replayReadBody) hands to fastify's
// parser in place of the spent request stream.

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import type { FastifyReply, FastifyRequest, preParsingHookHandler } from 'fastify';
import type { Logger } from '../../lib/index.js';
import type { TokenTable } from './auth.js';
import { writeAnswer } from './answers.js';
import { relayedBy, type ReadRegistration } from './api-workers/index.js';
import { readFastRegistration, registrationAnswer, registrationRoute } from './registration-fast-path.js';
import type { ApiDeps } from './route-context.js';

/** The body the fast path read from a request it then gave to fastify. */
const READ_BODY = Symbol('berth.fastRegisterBody');
/** The fast path counted the request in flight (api.ts's admit then does not count it again). */
const COUNTED = Symbol('berth.fastRegisterCounted');

type Marked = IncomingMessage & { [READ_BODY]?: Buffer; [COUNTED]?: true };
/** What serves a request on the HTTP server's request event (fastify's handler, or a fast path in front of it). */
export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

export interface MainFastRegisterOptions {
  deps: Pick<ApiDeps, 'jobs' | 'store' | 'leadership' | 'inFlight' | 'readers'>;
  tokens: TokenTable;
  bodyLimit: number;
  /** The request log (component http). */
  log: Logger;
  /** The connection's first request began: it no longer counts as a request on its way (api.ts's fresh connections). */
  settleConnection: (req: IncomingMessage) => void;
}

/**
 * Marks a request a main-thread fast path (this one, main-fast-node.ts) took:
 * it counted the request (api.ts's admit then does not count it again), and
 * `body`, when given, is what it read before handing the request to fastify.
 */
export function markTaken(raw: IncomingMessage, body?: Buffer): void {
  (raw as Marked)[COUNTED] = true;
  if (body) (raw as Marked)[READ_BODY] = body;
}

/** Whether the fast path counted this request in flight already (then api.ts's admit does not). */
export function countedByFastPath(raw: IncomingMessage): boolean {
  return (raw as Marked)[COUNTED] === true;
}

/**
 * The preParsing hook of the routes a fast path serves (registrations; the
 * node's heartbeat and status reports): a request the fast path read
 * and gave to fastify is parsed from the body it read (the request stream
 * is spent); any other from its stream, as always. Never fails.
 */
export const replayReadBody: preParsingHookHandler = (req: FastifyRequest, _reply: FastifyReply, payload, done) => {
  const body = (req.raw as Marked)[READ_BODY];
  if (!body) return done(null, payload);
  const replay = new PassThrough();
  replay.end(body);
  done(null, replay);
};

/**
 * Puts a main-thread fast path in front of `server`'s one request listener
 * (fastify's, or another fast path's): a request `pick` names goes to `serve`,
 * which is given that listener to hand it on; every other request, and one a
 * front worker relayed (the fast path there already gave it to fastify), goes
 * straight to the listener. Throws when the server has not exactly one.
 */
export function putInFront<At>(
  server: Server,
  pick: (req: IncomingMessage) => At | undefined,
  serve: (req: IncomingMessage, res: ServerResponse, at: At, next: RequestListener) => void,
): void {
  const listeners = server.listeners('request') as RequestListener[];
  const next = listeners[0];
  if (listeners.length !== 1 || !next) throw new Error(`the API's server has ${listeners.length} request listeners, not one`);
  server.removeListener('request', next);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const at = pick(req);
    if (at !== undefined && relayedBy(req.socket, req.headers) === undefined) serve(req, res, at, next);
    else next(req, res);
  });
}

export class MainFastRegister {
  readonly #opts: MainFastRegisterOptions;
  #open = true;

  constructor(opts: MainFastRegisterOptions) {
    this.#opts = opts;
  }

  /**
   * Puts the fast path in front of `server`'s one request listener
   * (fastify's): a registration is served here, every other request goes to
   * fastify as before. Call once, before the server listens; throws when the
   * server has not exactly one request listener.
   */
  install(server: Server): void {
    putInFront(server, (req) => (this.#open ? registrationRoute(req.method, req.url) : undefined), (req, res, at, fastify) => this.#serve(req as Marked, res, at, fastify));
  }

  /** Sends every request to fastify from now on (the API is closing: fastify answers 503). Safe to repeat. */
  close(): void {
    this.#open = false;
  }

  #serve(req: Marked, res: ServerResponse, at: { route: string; id?: string }, fastify: RequestListener): void {
    const { deps, tokens, bodyLimit, log } = this.#opts;
    const began = performance.now();
    // A user's write in flight from its headers until its answer closed, as api.ts's admit counts it.
    const inFlight = deps.inFlight;
    if (inFlight) {
      inFlight.began();
      inFlight.enter();
      res.once('close', () => inFlight.leave());
    }
    req[COUNTED] = true;
    this.#opts.settleConnection(req);
    let caller: string;
    try {
      const token = req.headers['x-nomad-token'];
      caller = tokens.authorize(req.headers.authorization, 'write', typeof token === 'string' ? token : undefined).name;
    } catch {
      return fastify(req, res);
    }
    // A body of known length within the limit only: fastify refuses the others (413) as it reads them.
    const length = req.headers['content-length'];
    if (length === undefined || !(Number(length) <= bodyLimit) || req.headers['transfer-encoding'] !== undefined) return fastify(req, res);
    const leadership = deps.leadership?.();
    if (leadership && !leadership.isLeader) return fastify(req, res);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      const toFastify = (): void => {
        req[READ_BODY] = body;
        fastify(req, res);
      };
      const write = (reg: ReadRegistration | undefined): void => {
        if (!reg) return toFastify();
        registrationAnswer(deps, log, reg, req.headers.accept).then(
          (answer) => {
            if (!answer) return toFastify();
            writeAnswer(res, answer);
            if (log.isLevelEnabled('debug')) {
              res.once('close', () => log.debug({ method: req.method, route: at.route, status: res.statusCode, caller, ms: Math.round(performance.now() - began), fastPath: true }, 'request'));
            }
          },
          toFastify,
        );
      };
      const text = body.toString('utf8');
      const url = req.url ?? '';
      const readHere = (): void => write(readFastRegistration(text, url, at.id));
      // Other writes in flight: a reader reads this one while main serves them (a lone one is read here at once).
      const read = inFlight && inFlight.count > 1 ? deps.readers?.()?.read(text, url, at.id) : undefined;
      if (read) read.then(write, readHere);
      else readHere();
    });
  }
}
