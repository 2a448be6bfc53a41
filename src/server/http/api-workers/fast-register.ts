// The worker's fast path: PUT/POST /v1/jobs and /v1/job/:id. The worker
// authenticates the caller, reads the body with fastify's limit, parses the
// JSON and reads Nomad's Job into Berth's checked spec (zod) off the main
// thread; main only writes it (JobService.register: the registrations that
// reach main in one turn share a store write) and says what to answer.
// Anything the route would refuse (a bad token, a body too large, bad JSON,
// a job that does not check) is relayed to main's fastify with the body
// read so far, so every refusal is main's own, word for word; so is a
// registration on a follower (main says "relay": fastify forwards it) and
// one the state refused (a problem fastify places at its Nomad path, reading
// the job again: the worker does not send where the paths came from).

import type { IncomingMessage, ServerResponse } from 'node:http';
import { publicJob, specToNomadJob } from '../../../structs/index.js';
import type { TokenTable } from '../auth.js';
import type { Registration } from '../job-register-input.js';
import { readFastRegistration } from '../registration-fast-path.js';
import { sampleJob } from '../warm-sample-job.js';
import { writeAnswer } from '../answers.js';
import type { FromWorker, SentRegistration, ToWorker } from './protocol.js';
import type { Relay } from './relay.js';

export class FastRegister {
  readonly #post: (m: FromWorker) => void;
  readonly #tokens: TokenTable;
  readonly #bodyLimit: number;
  readonly #relay: Relay;
  readonly #waiting = new Map<number, (m: ToWorker) => void>();
  #next = 1;

  constructor(opts: { post: (m: FromWorker) => void; tokens: TokenTable; bodyLimit: number; relay: Relay }) {
    this.#post = opts.post;
    this.#tokens = opts.tokens;
    this.#bodyLimit = opts.bodyLimit;
    this.#relay = opts.relay;
  }

  /** Registrations handed to main and not answered yet. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** Main's answer to registration `m.id`. */
  answered(m: ToWorker): void {
    if (m.t !== 'answer' && m.t !== 'relay') return;
    const w = this.#waiting.get(m.id);
    this.#waiting.delete(m.id);
    w?.(m);
  }

  /** Registration `id` could not be sent to main (something in its spec cannot be cloned; never expected): main's fastify reads it again. */
  unsent(id: number): void {
    this.answered({ t: 'relay', id });
  }

  /** Serves one registration request (see the file comment). */
  serve(req: IncomingMessage, res: ServerResponse, at: { route: string; id?: string }): void {
    const id = this.#next++;
    const began = performance.now();
    let caller: string | undefined;
    let served = false;
    // A write request in flight from its headers until its answer closed, as api.ts's onRequest hook counts it.
    this.#post({ t: 'enter', id });
    res.once('close', () => {
      this.#post({
        t: 'leave',
        id,
        ...(served ? { log: { method: req.method ?? '', route: at.route, status: res.statusCode, ...(caller ? { caller } : {}), ms: Math.round(performance.now() - began) } } : {}),
      });
    });
    try {
      const token = req.headers['x-nomad-token'];
      caller = this.#tokens.authorize(req.headers.authorization, 'write', typeof token === 'string' ? token : undefined).name;
    } catch {
      return this.#relay.request(req, res);
    }
    const length = Number(req.headers['content-length'] ?? 0);
    if (!(length <= this.#bodyLimit)) return this.#relay.request(req, res);
    const chunks: Buffer[] = [];
    let size = 0;
    let handedOver = false;
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      size += chunk.length;
      if (size <= this.#bodyLimit) return;
      // Too large: main's fastify refuses it as it does (413, the rest of the body drained).
      handedOver = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.pause();
      this.#relay.request(req, res, chunks);
    };
    const onEnd = (): void => {
      if (handedOver) return;
      const reg = this.#read(Buffer.concat(chunks).toString('utf8'), req.url ?? '', at.id);
      if (!reg) return this.#relay.request(req, res, chunks);
      this.#waiting.set(id, (m) => {
        if (m.t === 'relay') return this.#relay.request(req, res, chunks);
        if (m.t !== 'answer') return;
        served = true;
        writeAnswer(res, m.answer);
      });
      this.#post({ t: 'register', id, reg: sent(reg), ...(req.headers.accept !== undefined ? { accept: req.headers.accept } : {}) });
    };
    req.on('data', onData);
    req.once('end', onEnd);
  }

  /** A registration's body read as the fast path reads it, in the form main is sent; undefined when main's fastify must answer it (a reader's work, readers.ts). */
  read(body: string, url: string, id: string | undefined): SentRegistration | undefined {
    const reg = this.#read(body, url, id);
    return reg ? sent(reg) : undefined;
  }

  /**
   * Runs a sample registration through what a request's does here (parse, read and check, the
   * copy to main) without sending it, so a worker's first registration runs compiled code too.
   */
  warm(): void {
    const reg = this.#read(JSON.stringify({ Job: sampleJob() }), '/v1/jobs', undefined);
    if (!reg) return;
    structuredClone([{ t: 'register', id: 0, reg: sent(reg) }]);
    // The full form Nomad's clients and Berth's CLI send (every field, most of them null), so that rounds
    // leave the reader compiled for both shapes (main's warm-job-path.ts says why).
    const full = specToNomadJob(publicJob(reg.spec)) as unknown as Record<string, unknown>;
    this.#read(JSON.stringify({ Job: full }), '/v1/jobs', undefined);
  }

  /** The registration, or undefined when main's fastify must answer it (it refuses it, or reads it differently). */
  #read(body: string, url: string, id: string | undefined): Registration | undefined {
    return readFastRegistration(body, url, id);
  }
}

/** What main is sent of a registration read here. */
const sent = (reg: Registration): SentRegistration => ({ spec: reg.spec, ...(reg.checkIndex !== undefined ? { checkIndex: reg.checkIndex } : {}) });
