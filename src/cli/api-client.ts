// The CLI's client of the Berth HTTP API: fetch with a bearer token, the
// `{ code, message, details }` error envelope turned into ApiClientError,
// blocking queries (`?index=&wait=`), and short ID prefixes resolved through
// the API the way Nomad's CLI does.

import { request as httpRequest, type IncomingMessage } from 'node:http';
import { AbortedError, BerthError } from '../lib/index.js';

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

  constructor(code: string, message: string, status: number, details: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(code, message, options);
    this.status = status;
    this.details = details;
  }
}

export interface ApiClientOptions {
  /** `http://host:port`; default BERTH_ADDR, then DEFAULT_ADDRESS. */
  address: string;
  token?: string;
  /** Cancels every request (SIGINT). */
  signal: AbortSignal;
  /** Called (once per client) when an answer says the server's state may be stale (`X-Berth-Stale`). */
  onStale?: () => void;
}

type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

/** One answer: the body and the `X-Berth-Index` to send with the next blocking read. */
export interface ApiAnswer<T> {
  body: T;
  index: number;
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
  volume: { noun: 'volume', listPath: '/v1/volumes', getPath: (id: string) => `/v1/volume/csi/${encodeURIComponent(id)}` },
  plugin: { noun: 'plugin', listPath: '/v1/plugins', getPath: (id: string) => `/v1/plugin/csi/${encodeURIComponent(id)}`, clientPrefix: true },
} satisfies Record<string, ObjectKind>;

/**
 * A client for one agent address. Every method rejects with ApiClientError
 * (a server error, or API_UNREACHABLE when nothing answered) or AbortedError
 * when `signal` fired. Safe to use concurrently; holds no connection state.
 */
export class ApiClient {
  readonly address: string;
  readonly #token: string | undefined;
  readonly #signal: AbortSignal;
  #onStale: (() => void) | undefined;

  constructor(opts: ApiClientOptions) {
    this.address = opts.address.replace(/\/+$/, '');
    this.#token = opts.token;
    this.#signal = opts.signal;
    this.#onStale = opts.onStale;
  }

  /** GET `path`. With `index`, a blocking read that waits up to `wait` for a change. */
  get<T>(path: string, query: Query = {}): Promise<ApiAnswer<T>> {
    return this.request<T>('GET', path, { query });
  }

  /** A request with a JSON body. */
  async request<T>(method: string, path: string, opts: { query?: Query; body?: unknown; signal?: AbortSignal } = {}): Promise<ApiAnswer<T>> {
    const res = await this.#fetch(method, path, opts);
    const text = await res.text().catch((err: unknown) => {
      throw this.#unreachable(err);
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
    if (!res.ok) throw errorFrom(res.status, body);
    return { body: body as T, index: Number(res.headers.get('x-berth-index') ?? 0) || 0 };
  }

  /** A streaming GET (the event stream): the raw response, whose body the caller reads. */
  async stream(path: string, query: Query = {}): Promise<HttpAnswer> {
    const res = await this.#fetch('GET', path, { query });
    if (!res.ok) {
      const text = await res.text().catch(() => '');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      throw errorFrom(res.status, body);
    }
    return res;
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
    const { body } = await this.get<Array<{ id: string }>>(kind.listPath, kind.clientPrefix ? query : { ...query, prefix: idOrPrefix });
    const matches = [...new Set((body ?? []).map((o) => o.id).filter((id) => id.startsWith(idOrPrefix)))].sort();
    if (matches.length === 1) return matches[0] as string;
    if (matches.length === 0) throw new ApiClientError('NOT_FOUND', `no ${kind.noun} with ID or prefix "${idOrPrefix}"`, 404);
    throw new ApiClientError('CLI_AMBIGUOUS_PREFIX', `prefix "${idOrPrefix}" matches ${matches.length} ${kind.noun}s; give more of the ID`, 0, { matches });
  }

  async #fetch(method: string, path: string, opts: { query?: Query; body?: unknown; signal?: AbortSignal }): Promise<HttpAnswer> {
    const url = new URL(this.address + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) {
      if (v === undefined) continue;
      if (Array.isArray(v)) for (const item of v) url.searchParams.append(k, String(item));
      else url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = {};
    if (this.#token) headers['authorization'] = `Bearer ${this.#token}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const signal = opts.signal ? AbortSignal.any([this.#signal, opts.signal]) : this.#signal;
    try {
      const res = await send(url, method, headers, opts.body === undefined ? undefined : JSON.stringify(opts.body), signal);
      if (this.#onStale && res.headers.get('x-berth-stale') === 'true') {
        const tell = this.#onStale;
        this.#onStale = undefined;
        tell();
      }
      return res;
    } catch (err) {
      if (this.#signal.aborted || opts.signal?.aborted) throw new AbortedError('request cancelled', { cause: err });
      throw this.#unreachable(err);
    }
  }

  #unreachable(err: unknown): ApiClientError {
    const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
    const why = (err as { code?: string })?.code ?? cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
    return new ApiClientError('API_UNREACHABLE', `cannot reach the Berth agent at ${this.address} (${why})`, 0, {}, { cause: err });
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
function send(url: URL, method: string, headers: Record<string, string>, body: string | undefined, signal: AbortSignal): Promise<HttpAnswer> {
  if (url.protocol !== 'http:') return fetchAnswer(url, method, headers, body, signal);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) }, signal });
    req.once('error', reject);
    req.once('response', (res: IncomingMessage) => {
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

function errorFrom(status: number, body: unknown): ApiClientError {
  const env = body && typeof body === 'object' ? (body as { code?: unknown; message?: unknown; details?: unknown }) : {};
  const code = typeof env.code === 'string' ? env.code : `HTTP_${status}`;
  const message = typeof env.message === 'string' ? env.message : `the agent answered ${status}`;
  const details = env.details && typeof env.details === 'object' ? (env.details as Record<string, unknown>) : {};
  return new ApiClientError(code, message, status, details);
}
