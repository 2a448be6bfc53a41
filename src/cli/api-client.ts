// The CLI's client of the Berth HTTP API: fetch with a bearer token, the
// `{ code, message, details }` error envelope turned into ApiClientError,
// blocking queries (`?index=&wait=`), and short ID prefixes resolved through
// the API the way Nomad's CLI does.

import { request as httpRequest, type IncomingMessage } from 'node:http';
import { AbortedError, anySignal, BerthError } from '../lib/index.js';
import { humanDuration, parseDuration } from './values.js';

/**
 * The largest request body the agent takes by default (structs'
 * MAX_REQUEST_BODY_BYTES, the server's `bodyLimit`). A larger body is
 * refused here, before anything is sent: a server refusing it may close the
 * socket while the body is still being written, and the client would see
 * EPIPE instead of the server's answer.
 */
export const MAX_REQUEST_BODY_BYTES = 4 * 1024 * 1024;

/** Where the agent listens when neither --address nor BERTH_ADDR says. */
export const DEFAULT_ADDRESS = 'http://127.0.0.1:4646';

/**
 * The API answered with an error, or could not be reached. `code` is the
 * server's error code, or API_UNREACHABLE / API_BAD_ANSWER / AMBIGUOUS_PREFIX
 * from the client itself. Messages never quote the token.
 */
export class ApiClientError extends BerthError {
  /** HTTP status; 0 when there was no answer. */
  readonly status: number;
  readonly details: Record<string, unknown>;
  /** The leader a cluster server named in its answer (`X-Berth-Leader`), when it did. */
  leader: string | undefined;

  constructor(code: string, message: string, status: number, details: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(code, message, options);
    this.status = status;
    this.details = details;
  }
}

export interface ApiClientOptions {
  /**
   * The agent's `http://host:port`, or several servers of one cluster (each
   * already normalized: addressList in agent-address.ts). Calls go to one and move to the
   * next when it cannot be reached; a follower's answer naming the leader
   * sends the next attempt there.
   */
  address: string | readonly string[];
  token?: string;
  /** Cancels every request (SIGINT). */
  signal: AbortSignal;
  /** Called (once per client) when an answer says the server's state may be stale (`X-Berth-Stale`). */
  onStale?: () => void;
  /**
   * How long answers that say "retry" (SERVER_LEADER_UNAVAILABLE,
   * STORE_UNAVAILABLE, 429, 502-504) and unreachable clusters are retried,
   * with backoff, before the last error is thrown. Default 15 s; 0: never.
   */
  retryForMs?: number;
  /**
   * How long a server may take to start answering a request; a blocking read
   * gets its wait plus this. Default 10 s (--client-timeout, BERTH_CLIENT_TIMEOUT).
   */
  answerTimeoutMs?: number;
  /** Told of each retry (for a line on stderr). */
  onRetry?: (why: string) => void;
}

/** The answer codes a client may retry as they are (nothing was applied). */
const RETRYABLE_CODES = new Set(['SERVER_LEADER_UNAVAILABLE', 'STORE_UNAVAILABLE', 'UNAVAILABLE', 'HTTP_502', 'HTTP_503', 'HTTP_504', 'HTTP_429']);
/** Transport failures that prove nothing was sent. */
const UNSENT_ERRNOS = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
const DEFAULT_RETRY_FOR_MS = 15_000;
const DEFAULT_ANSWER_TIMEOUT_MS = 10_000;
/** A blocking read's `wait` when the caller gives none (the server's default). */
const DEFAULT_BLOCKING_WAIT_MS = 300_000;

type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

/** One answer: the body and the `X-Nomad-Index` to send with the next blocking read. */
export interface ApiAnswer<T> {
  body: T;
  index: number;
  /** A list answered one page: the `next_token` of the next (`X-Nomad-NextToken`). */
  nextToken?: string;
  /** Set when the answer came from `verify`: an earlier attempt whose answer was lost had applied. */
  landed?: boolean;
}

/** What each kind of object is called, listed and fetched as. */
export interface ObjectKind {
  /** "job", "allocation", ... for messages. */
  noun: string;
  /** The list path that takes `?prefix=` (or filters client-side when `clientPrefix`). */
  listPath: string;
  /** The object path for an ID. */
  getPath(id: string): string;
  /** The list ignores `prefix`: filter here. */
  clientPrefix?: boolean;
}

export const KINDS = {
  job: { noun: 'job', listPath: '/v1/jobs', getPath: (id: string) => `/v1/job/${encodeURIComponent(id)}` },
  allocation: { noun: 'allocation', listPath: '/v1/allocations', getPath: (id: string) => `/v1/allocation/${encodeURIComponent(id)}` },
  evaluation: { noun: 'evaluation', listPath: '/v1/evaluations', getPath: (id: string) => `/v1/evaluation/${encodeURIComponent(id)}` },
  node: { noun: 'node', listPath: '/v1/nodes', getPath: (id: string) => `/v1/node/${encodeURIComponent(id)}` },
  volume: { noun: 'volume', listPath: '/v1/volumes?type=csi', getPath: (id: string) => `/v1/volume/csi/${encodeURIComponent(id)}` },
  plugin: { noun: 'plugin', listPath: '/v1/plugins?type=csi', getPath: (id: string) => `/v1/plugin/csi/${encodeURIComponent(id)}` },
} satisfies Record<string, ObjectKind>;

/**
 * A client for one agent address. Every method rejects with ApiClientError
 * (a server error, or API_UNREACHABLE when nothing answered) or AbortedError
 * when `signal` fired. Safe to use concurrently; holds no connection state.
 */
export class ApiClient {
  readonly #bases: readonly string[];
  #current = 0;
  readonly #token: string | undefined;
  readonly #signal: AbortSignal;
  #onStale: (() => void) | undefined;
  readonly #retryForMs: number;
  readonly #answerTimeoutMs: number;
  readonly #onRetry: ((why: string) => void) | undefined;

  constructor(opts: ApiClientOptions) {
    const list = (typeof opts.address === 'string' ? [opts.address] : [...opts.address]).map((a) => a.replace(/\/+$/, ''));
    if (!list.length) throw new TypeError('ApiClient needs at least one address');
    this.#bases = list;
    this.#token = opts.token;
    this.#signal = opts.signal;
    this.#onStale = opts.onStale;
    this.#retryForMs = opts.retryForMs ?? DEFAULT_RETRY_FOR_MS;
    this.#answerTimeoutMs = opts.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS;
    this.#onRetry = opts.onRetry;
  }

  /** How long a server may take to start answering (for clients of node agents made from this one). */
  get answerTimeoutMs(): number {
    return this.#answerTimeoutMs;
  }

  /** The address requests go to now. */
  get address(): string {
    return this.#bases[this.#current] as string;
  }

  /** Every address given, in order. */
  get addresses(): readonly string[] {
    return this.#bases;
  }

  /** GET `path`. With `index`, a blocking read that waits up to `wait` for a change. */
  get<T>(path: string, query: Query = {}): Promise<ApiAnswer<T>> {
    return this.request<T>('GET', path, { query });
  }

  /**
   * A request with a JSON body. Retried on another server, or after a
   * backoff, while that is safe: a GET always; any other method only when
   * nothing can have been applied (the connection was refused, or the
   * answer says so), unless `verify` is given. After a failure that may
   * have applied the request (the answer was lost), `verify` is asked
   * (against a server that answers): an answer means it did apply (that
   * answer is returned, with `landed` set), undefined means it did not and
   * the request is sent again. Without `verify` such a failure rejects with
   * API_UNCERTAIN. Rejects with the last error once `retryForMs` ran out.
   */
  async request<T>(
    method: string,
    path: string,
    opts: { query?: Query; body?: unknown; signal?: AbortSignal; verify?: () => Promise<ApiAnswer<T> | undefined> } = {},
  ): Promise<ApiAnswer<T>> {
    return this.#withFailover(method, path, opts, async (res) => {
      const text = await res.text().catch((err: unknown) => {
        // The server answered 413 and closed the socket before its body was read.
        if (res.status === 413) return '';
        throw this.#unreachable(err, true);
      });
      let body: unknown = undefined;
      if (text) {
        try {
          body = JSON.parse(text);
        } catch {
          if (!res.ok) throw new ApiClientError('API_BAD_ANSWER', `the agent answered ${res.status} with a body that is not JSON`, res.status);
          throw new ApiClientError('API_BAD_ANSWER', `the agent answered with a body that is not JSON (is ${this.address} a Berth agent?)`, res.status);
        }
      }
      if (!res.ok) throw errorFrom(res.status, body, res.headers.get('x-berth-leader') ?? undefined);
      // X-Berth-Index: routes not yet moved to Nomad's headers (the fallback goes once none is left).
      const index = res.headers.get('x-nomad-index') ?? res.headers.get('x-berth-index');
      const nextToken = res.headers.get('x-nomad-nexttoken');
      return { body: body as T, index: Number(index ?? 0) || 0, ...(nextToken ? { nextToken } : {}) };
    });
  }

  /** A streaming GET (the event stream): the raw response, whose body the caller reads. */
  async stream(path: string, query: Query = {}): Promise<HttpAnswer> {
    return this.#withFailover('GET', path, { query, stream: true }, async (res) => {
      if (!res.ok) {
        const text = await res.text().catch(() => '');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        throw errorFrom(res.status, body, res.headers.get('x-berth-leader') ?? undefined);
      }
      return res;
    });
  }

  /**
   * The retry loop of every request: see request(). `read` turns an answer
   * into the result, or throws ApiClientError.
   */
  async #withFailover<R>(
    method: string,
    path: string,
    opts: { query?: Query; body?: unknown; signal?: AbortSignal; verify?: () => Promise<R | undefined>; stream?: boolean },
    read: (res: HttpAnswer) => Promise<R>,
  ): Promise<R> {
    const deadline = Date.now() + this.#retryForMs;
    const safe = method === 'GET' || method === 'HEAD';
    let refusedInRound = 0;
    let delays = 0;
    for (;;) {
      const base = this.address;
      let err: ApiClientError;
      try {
        return await read(await this.#fetch(base, method, path, opts));
      } catch (e) {
        if (!(e instanceof ApiClientError) || this.#signal.aborted || opts.signal?.aborted) throw e;
        err = e;
      }
      if (err.code === 'API_UNREACHABLE') {
        const unsent = err.details['unsent'] === true;
        if (!unsent && !safe) {
          if (!opts.verify) throw uncertain(err);
          this.#moveOn(base);
          const landed = await this.#verify(opts.verify, deadline);
          if (landed !== undefined) return landed;
          this.#onRetry?.(`${err.message}; it did not apply: sending it again to ${this.address}`);
          continue;
        }
        // A server that cannot be reached: the next one at once; after a whole round, back off.
        this.#moveOn(base);
        refusedInRound++;
        if (refusedInRound < this.#bases.length) {
          this.#onRetry?.(`${err.message}; trying ${this.address}`);
          continue;
        }
        refusedInRound = 0;
        if (this.#bases.length === 1 || Date.now() >= deadline) throw err;
      } else if (retryableAnswer(err)) {
        refusedInRound = 0;
        if (err.details['mayHaveApplied'] === true && !safe) {
          if (!opts.verify) throw uncertain(err);
          const landed = await this.#verify(opts.verify, deadline);
          if (landed !== undefined) return landed;
        }
        if (err.leader && this.#bases.includes(err.leader) && err.leader !== base) {
          this.#current = this.#bases.indexOf(err.leader);
          this.#onRetry?.(`${err.code}: ${err.message}; following the leader to ${this.address}`);
          continue;
        }
        if (Date.now() >= deadline) throw err;
        // The server answers but cannot serve: another may (a follower that knows the leader).
        if (err.code === 'SERVER_LEADER_UNAVAILABLE') this.#moveOn(base);
      } else {
        throw err;
      }
      delays++;
      const delayMs = Math.min(2_000, 250 * 2 ** (delays - 1), Math.max(0, deadline - Date.now()));
      this.#onRetry?.(`${err.code}: ${err.message}; retrying in ${(delayMs / 1000).toFixed(1)} s`);
      await sleep(delayMs, this.#signal);
    }
  }

  /** Asks `verify` whether a request whose answer was lost applied, retrying while no server answers. */
  async #verify<R>(verify: () => Promise<R | undefined>, deadline: number): Promise<R | undefined> {
    for (let delays = 1; ; delays++) {
      try {
        return await verify();
      } catch (err) {
        if (!(err instanceof ApiClientError) || (err.code !== 'API_UNREACHABLE' && !retryableAnswer(err)) || Date.now() >= deadline) throw err;
        await sleep(Math.min(2_000, 250 * 2 ** (delays - 1)), this.#signal);
      }
    }
  }

  /** Moves on to the next address, unless another request already moved away from `failed`. */
  #moveOn(failed: string): void {
    if (this.address === failed) this.#current = (this.#current + 1) % this.#bases.length;
  }

  /**
   * The full ID of the `kind` object `idOrPrefix` names: itself when it
   * exists, else the one object whose ID starts with it. Rejects with
   * ApiClientError NOT_FOUND (no match) or AMBIGUOUS_PREFIX (several; details.matches lists them).
   */
  async resolve(kind: ObjectKind, idOrPrefix: string, query: Query = {}): Promise<string> {
    try {
      await this.get(kind.getPath(idOrPrefix), query);
      return idOrPrefix;
    } catch (err) {
      if (!(err instanceof ApiClientError) || err.status !== 404 || err.code !== 'NOT_FOUND') throw err;
    }
    // Lists in Nomad's shape name the ID `ID`.
    const { body } = await this.get<Array<{ id?: string; ID?: string }>>(kind.listPath, kind.clientPrefix ? query : { ...query, prefix: idOrPrefix });
    const matches = [...new Set((body ?? []).map((o) => o.ID ?? o.id ?? '').filter((id) => id.startsWith(idOrPrefix)))].sort();
    if (matches.length === 1) return matches[0] as string;
    if (matches.length === 0) throw new ApiClientError('NOT_FOUND', `no ${kind.noun} with ID or prefix "${idOrPrefix}"`, 404);
    throw new ApiClientError('CLI_AMBIGUOUS_PREFIX', `prefix "${idOrPrefix}" matches ${matches.length} ${kind.noun}s; give more of the ID`, 0, { matches });
  }

  async #fetch(base: string, method: string, path: string, opts: { query?: Query; body?: unknown; signal?: AbortSignal; stream?: boolean }): Promise<HttpAnswer> {
    const url = new URL(base + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) {
      if (v === undefined) continue;
      if (Array.isArray(v)) for (const item of v) url.searchParams.append(k, String(item));
      else url.searchParams.set(k, String(v));
    }
    // JSON errors carry the code and the fields the CLI words its messages and exit codes with.
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#token) headers['authorization'] = `Bearer ${this.#token}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const signal = opts.signal ? AbortSignal.any([this.#signal, opts.signal]) : this.#signal;
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const size = body === undefined ? 0 : Buffer.byteLength(body);
    if (size > MAX_REQUEST_BODY_BYTES) {
      throw new ApiClientError('TOO_LARGE', `request body too large (limit ${MAX_REQUEST_BODY_BYTES} bytes): this one is ${size} bytes; nothing was sent`, 413, {
        limit: MAX_REQUEST_BODY_BYTES,
        size,
      });
    }
    // A blocking read may wait as long as it asked to; anything else must start answering soon.
    const blocking = opts.query?.['index'] !== undefined;
    const waitMs = typeof opts.query?.['wait'] === 'string' ? durationMs(opts.query['wait']) : undefined;
    const timeoutMs = blocking ? (waitMs ?? DEFAULT_BLOCKING_WAIT_MS) + this.#answerTimeoutMs : this.#answerTimeoutMs;
    try {
      const res = await send(url, method, headers, body, signal, timeoutMs);
      if (this.#onStale && res.headers.get('x-berth-stale') === 'true') {
        const tell = this.#onStale;
        this.#onStale = undefined;
        tell();
      }
      return res;
    } catch (err) {
      if (this.#signal.aborted || opts.signal?.aborted) throw new AbortedError('request cancelled', { cause: err });
      throw this.#unreachable(err, false, base);
    }
  }

  /** API_UNREACHABLE; `details.unsent` when the failure proves the request never left (connection refused). */
  #unreachable(err: unknown, answered: boolean, base = this.address): ApiClientError {
    const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
    const errno = (err as { code?: string })?.code ?? cause?.code;
    // Our own answer timeout says how long it waited, and which setting that is.
    const timedOut = errno === 'ETIMEDOUT' && err instanceof Error && err.message.startsWith('no answer within');
    const why = timedOut ? `ETIMEDOUT: ${(err as Error).message}; see --client-timeout` : (errno ?? cause?.message ?? (err instanceof Error ? err.message : String(err)));
    const unsent = !answered && errno !== undefined && UNSENT_ERRNOS.has(errno);
    return new ApiClientError('API_UNREACHABLE', `cannot reach the Berth agent at ${base} (${why})`, 0, unsent ? { unsent } : {}, { cause: err });
  }
}

/**
 * An answer of the agent: status, headers, and the body, read once, either
 * whole (text) or as it arrives (body).
 */
export interface HttpAnswer {
  status: number;
  ok: boolean;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
  body: AsyncIterable<Uint8Array>;
}

/**
 * One HTTP request with node:http, not fetch: fetch loads Node's bundled
 * undici on first use, which costs a short CLI process more than the rest
 * of its start-up. Rejects on a transport failure (the error carries the
 * errno `code`) or when `signal` fires.
 */
function send(url: URL, method: string, headers: Record<string, string>, body: string | undefined, signal: AbortSignal, timeoutMs: number): Promise<HttpAnswer> {
  if (url.protocol !== 'http:') return fetchAnswer(url, method, headers, body, anySignal([signal, AbortSignal.timeout(timeoutMs)]));
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) }, signal });
    // A server that accepted the connection but does not answer (a paused process) is left after timeoutMs.
    const timer = setTimeout(() => req.destroy(Object.assign(new Error(`no answer within ${humanDuration(timeoutMs)}`), { code: 'ETIMEDOUT' })), timeoutMs);
    req.once('close', () => clearTimeout(timer));
    // A server that refuses a body (413) may close the socket while it is still being written:
    // the write fails (EPIPE, ECONNRESET), but its answer may still be read. The failure counts
    // only once the request is closed without an answer.
    // (A ClientRequest always emits 'close' after 'error'.)
    req.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE' || err.code === 'ECONNRESET') req.once('close', () => reject(err));
      else reject(err);
    });
    req.once('response', (res: IncomingMessage) => {
      clearTimeout(timer);
      const status = res.statusCode ?? 0;
      resolve({
        status,
        ok: status >= 200 && status < 300,
        headers: { get: (name) => {
          const v = res.headers[name.toLowerCase()];
          return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
        } },
        text: async () => {
          let text = '';
          res.setEncoding('utf8');
          for await (const chunk of res) text += chunk as string;
          return text;
        },
        body: res,
      });
    });
    req.end(body);
  });
}

/** https:// addresses: fetch, whose TLS set-up is worth its load time there. */
async function fetchAnswer(url: URL, method: string, headers: Record<string, string>, body: string | undefined, signal: AbortSignal): Promise<HttpAnswer> {
  const res = await fetch(url, { method, headers, signal, ...(body === undefined ? {} : { body }) });
  return { status: res.status, ok: res.ok, headers: res.headers, text: () => res.text(), body: res.body as unknown as AsyncIterable<Uint8Array> };
}

function errorFrom(status: number, body: unknown, leader?: string): ApiClientError {
  const env = body && typeof body === 'object' ? (body as { code?: unknown; message?: unknown; details?: unknown }) : {};
  const code = typeof env.code === 'string' ? env.code : status === 413 ? 'TOO_LARGE' : `HTTP_${status}`;
  const message = typeof env.message === 'string' ? env.message : status === 413 ? 'request body too large' : `the agent answered ${status}`;
  const details = env.details && typeof env.details === 'object' ? (env.details as Record<string, unknown>) : {};
  const err = new ApiClientError(code, message, status, details);
  if (leader) err.leader = leader.replace(/\/+$/, '');
  return err;
}

/** Whether an answer says the same request may succeed shortly. */
function retryableAnswer(err: ApiClientError): boolean {
  return RETRYABLE_CODES.has(err.code) || err.status === 429 || (err.status >= 500 && err.details['retryable'] === true);
}

/** API_UNCERTAIN: the request may or may not have been applied. */
function uncertain(err: ApiClientError): ApiClientError {
  return new ApiClientError(
    'API_UNCERTAIN',
    `${err.message}; the request may or may not have been applied: check before sending it again`,
    err.status,
    err.details,
    { cause: err },
  );
}

/** A blocking read's `wait` (`30s`, `2m`) in milliseconds; undefined when unreadable. */
function durationMs(text: string): number | undefined {
  try {
    return parseDuration(text);
  } catch {
    return undefined;
  }
}

/** Resolves after `ms`; rejects with AbortedError when `signal` fires first. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new AbortedError('request cancelled'));
    const done = (): void => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new AbortedError('request cancelled'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
