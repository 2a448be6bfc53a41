// The call engine under CsiClient: the channel to one plugin socket, and
// sending a request with a deadline per attempt, retried by the RPC's policy.
// Private to src/csi; CsiClient (client.ts) and the public types below are
// exported through the door.

import type * as Grpc from '@grpc/grpc-js';
import type { MessageFns } from '../gen/csi/v1/csi.js';
import {
  AbortedError,
  retry,
  silentLogger,
  systemClock,
  throwIfAborted,
  type BackoffPolicy,
  type Clock,
  type Logger,
} from '../lib/index.js';
import { CsiEndpointError, CsiError, GRPC_CODES, grpcCodeName } from './errors.js';
import { RPC_POLICIES, type CsiRpc, type RpcPolicy } from './policy.js';

/**
 * What a teardown call (unpublish, unstage, delete) resolves with.
 * `alreadyDone`: the plugin answered NOT_FOUND, which for these calls means
 * there was nothing left to undo.
 */
export interface TeardownResult {
  alreadyDone: boolean;
}

/** Per-call options every client method takes. */
export interface CallOptions {
  /** Cancels the call (and any retry wait). */
  signal?: AbortSignal;
  /** Deadline of one attempt, instead of the RPC's default (see RPC_POLICIES). */
  deadlineMs?: number;
  /** `false`: one attempt only. An object: overrides fields of the RPC's backoff. */
  retry?: false | Partial<BackoffPolicy>;
}

export interface CsiClientOptions {
  /** `unix:///abs/path.sock` (a bare absolute path is accepted too). */
  endpoint: string;
  logger?: Logger;
  /** Clock for retry backoff; injectable for tests. */
  clock?: Clock;
  /** Randomness for backoff jitter; injectable for tests. */
  random?: () => number;
  /** Per-RPC overrides of the default policy table. */
  policies?: Partial<Record<CsiRpc, Partial<RpcPolicy>>>;
  /** Told of every attempt sent to the plugin (see CsiCallObserver). Default none, at no cost. */
  observer?: CsiCallObserver;
}

/**
 * Watches the calls a CsiClient sends, e.g. to count them (see
 * csiCallMetrics). `onCall` runs once per attempt that reached the wire
 * (retries count separately) with the RPC name, `OK` or the gRPC code name,
 * and the attempt's duration in seconds. It must not throw or block; a throw
 * is swallowed.
 */
export interface CsiCallObserver {
  onCall(rpc: CsiRpc, code: string, seconds: number): void;
}

// The longest path a unix socket address can hold (sun_path is 108 bytes with its NUL).
const MAX_SOCKET_PATH_BYTES = 107;

// Reconnect quickly: a plugin that restarts comes back within a second or two,
// and Berth would rather try again than wait out grpc-js's 1 s..120 s backoff.
/**
 * grpc-js, loaded with the first call: importing the csi layer (as the spec
 * schemas do for its capability words) costs no gRPC start-up until a
 * plugin is actually called.
 */
type GrpcModule = Pick<typeof Grpc, 'Client' | 'credentials' | 'Metadata'>;
let grpcModule: Promise<GrpcModule> | undefined;
function loadGrpc(): Promise<GrpcModule> {
  // A CommonJS package: its exports are the namespace itself under Node, `default` in a bundle.
  grpcModule ??= import('@grpc/grpc-js').then((m): GrpcModule => m.default ?? m);
  return grpcModule;
}

const CHANNEL_OPTIONS: Grpc.ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 2_000,
  'grpc.max_receive_message_length': 16 * 1024 * 1024,
  'grpc.enable_retries': 0,
};

const NO_RETRY: BackoffPolicy = { maxAttempts: 1, initialDelayMs: 0, maxDelayMs: 0, multiplier: 1, jitter: 0 };

/**
 * Parses a CSI endpoint into the socket path. Throws CsiEndpointError for
 * anything but an absolute unix socket path that fits in sun_path.
 */
export function parseEndpoint(endpoint: string): string {
  let path: string;
  if (endpoint.startsWith('unix://')) path = endpoint.slice('unix://'.length);
  else if (endpoint.startsWith('unix:')) path = endpoint.slice('unix:'.length);
  else if (endpoint.startsWith('/')) path = endpoint;
  else throw new CsiEndpointError(`CSI endpoint "${endpoint}" is not a unix socket address (expected unix:///absolute/path.sock)`);
  if (!path.startsWith('/')) throw new CsiEndpointError(`CSI endpoint "${endpoint}" must name an absolute path`);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) {
    throw new CsiEndpointError(`CSI socket path is ${Buffer.byteLength(path)} bytes; unix sockets allow at most ${MAX_SOCKET_PATH_BYTES}`);
  }
  return path;
}

/** A generated method definition: its name and request and response codecs. */
export interface MethodDef<Req, Res> {
  readonly name: string;
  readonly requestType: MessageFns<Req>;
  readonly responseType: MessageFns<Res>;
}

// What a request may be built from: the generated type's DeepPartial.
export type WireInit<T> = Parameters<MessageFns<T>['fromPartial']>[0];

interface WireMethod<Req, Res> {
  rpc: CsiRpc;
  path: string;
  serialize: (req: Req) => Buffer;
  deserialize: (buf: Buffer) => Res;
  requestType: MessageFns<Req>;
}

const wireMethods = new Map<object, WireMethod<unknown, unknown>>();

function wire<Req, Res>(service: { fullName: string }, def: MethodDef<Req, Res>): WireMethod<Req, Res> {
  let m = wireMethods.get(def) as WireMethod<Req, Res> | undefined;
  if (!m) {
    m = {
      rpc: def.name as CsiRpc,
      path: `/${service.fullName}/${def.name}`,
      serialize: (req) => {
        const bytes = def.requestType.encode(req).finish();
        return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      },
      deserialize: (buf) => def.responseType.decode(buf),
      requestType: def.requestType,
    };
    wireMethods.set(def, m as WireMethod<unknown, unknown>);
  }
  return m;
}

// grpc-js appends its resolver's bookkeeping to connection errors; keep the part a person can act on.
function transportDetails(details: string): string {
  return details.replace(/\.?\s*Resolution note:\s*$/, '').trim();
}

/**
 * What every CsiClient is built on: the connection to the plugin (made on
 * the first call, remade after UNAVAILABLE, ended by `close`) and
 * `call`/`callDone`, the only ways the service calls (_controller-calls.ts,
 * _group-controller-calls.ts, _node-calls.ts, client.ts) reach the plugin.
 * Abstract: only CsiClient is built.
 */
export abstract class CsiCallEngine {
  readonly endpoint: string;
  readonly socketPath: string;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #policies: Record<CsiRpc, RpcPolicy>;
  readonly #observer: CsiCallObserver | undefined;
  #channel: Grpc.Client | undefined;
  #closed = false;

  constructor(opts: CsiClientOptions) {
    this.socketPath = parseEndpoint(opts.endpoint);
    this.endpoint = `unix://${this.socketPath}`;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'csi-client', endpoint: this.endpoint });
    this.#clock = opts.clock ?? systemClock;
    this.#random = opts.random ?? Math.random;
    this.#observer = opts.observer;
    this.#policies = { ...RPC_POLICIES };
    for (const [rpc, override] of Object.entries(opts.policies ?? {})) {
      this.#policies[rpc as CsiRpc] = { ...RPC_POLICIES[rpc as CsiRpc], ...override };
    }
  }

  /** False once close() was called. */
  get open(): boolean {
    return !this.#closed;
  }

  /**
   * Closes the connection. In-flight calls end with CANCELLED or UNAVAILABLE;
   * later calls throw. Safe to call twice.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#channel?.close();
    this.#channel = undefined;
  }

  // ---- Calls --------------------------------------------------------------

  /**
   * Like `call`, but a NOT_FOUND that means "already done" resolves with
   * alreadyDone (for teardown calls: unpublish, unstage, delete).
   */
  protected async callDone<Req, Res>(service: { fullName: string }, def: MethodDef<Req, Res>, req: WireInit<Req>, opts: CallOptions): Promise<TeardownResult> {
    try {
      await this.call(service, def, req, opts);
      return { alreadyDone: false };
    } catch (err) {
      if (err instanceof CsiError && err.alreadyDone) {
        this.#logger.debug({ rpc: err.rpc }, 'plugin reported NOT_FOUND on teardown; treating as done');
        return { alreadyDone: true };
      }
      throw err;
    }
  }

  /**
   * Sends `partial` (built into the request message) to the plugin, each
   * attempt with the RPC's deadline (or `opts.deadlineMs`), retrying the codes
   * its policy names (never UNIMPLEMENTED) with its backoff unless
   * `opts.retry` says otherwise. Throws what CsiClient's doc says.
   */
  protected async call<Req, Res>(service: { fullName: string }, def: MethodDef<Req, Res>, partial: WireInit<Req>, opts: CallOptions): Promise<Res> {
    const method = wire(service, def);
    const policy = this.#policies[method.rpc];
    const deadlineMs = opts.deadlineMs ?? policy.deadlineMs;
    const request = def.requestType.fromPartial(partial);
    const backoff = opts.retry === false ? NO_RETRY : opts.retry ? { ...policy.backoff, ...opts.retry } : policy.backoff;
    if (backoff.maxAttempts <= 1) return this.#attempt(method, request, deadlineMs, opts.signal);
    return retry(() => this.#attempt(method, request, deadlineMs, opts.signal), {
      policy: backoff,
      clock: this.#clock,
      random: this.#random,
      signal: opts.signal,
      shouldRetry: (err) => err instanceof CsiError && err.grpcCodeName !== 'UNIMPLEMENTED' && policy.retryOn.has(err.grpcCodeName),
      onRetry: ({ err, attempt, delayMs }) =>
        this.#logger.debug({ rpc: method.rpc, attempt, delayMs, code: (err as CsiError).grpcCodeName }, 'retrying CSI call'),
    });
  }

  // ---- Transport ----------------------------------------------------------

  async #connection(): Promise<{ grpc: GrpcModule; channel: Grpc.Client }> {
    const grpc = await loadGrpc();
    if (this.#closed) throw new AbortedError(`CSI client for ${this.endpoint} is closed`);
    this.#channel ??= new grpc.Client(this.endpoint, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
    return { grpc, channel: this.#channel };
  }

  // After UNAVAILABLE the socket may have been replaced: drop the channel so
  // the next attempt dials afresh rather than waiting out a reconnect backoff.
  #dropConnection(stale: Grpc.Client): void {
    if (this.#channel !== stale) return;
    this.#channel = undefined;
    stale.close();
  }

  async #attempt<Req, Res>(method: WireMethod<Req, Res>, request: Req, deadlineMs: number, signal: AbortSignal | undefined): Promise<Res> {
    throwIfAborted(signal);
    const { grpc, channel } = await this.#connection();
    throwIfAborted(signal);
    const observer = this.#observer;
    const started = observer ? performance.now() : 0;
    const observe = (code: string): void => {
      try {
        observer?.onCall(method.rpc, code, (performance.now() - started) / 1000);
      } catch {
        // An observer's failure must never fail the call.
      }
    };
    return new Promise<Res>((resolve, reject) => {
      const onAbort = (): void => call.cancel();
      const call = channel.makeUnaryRequest<Req, Res>(
        method.path,
        method.serialize,
        method.deserialize,
        request,
        new grpc.Metadata(),
        { deadline: Date.now() + deadlineMs },
        (err, res) => {
          signal?.removeEventListener('abort', onAbort);
          if (observer) observe(err ? grpcCodeName(err.code) : 'OK');
          if (!err) {
            resolve(res as Res);
            return;
          }
          if (signal?.aborted && err.code === GRPC_CODES.CANCELLED) {
            reject(new CsiError(method.rpc, GRPC_CODES.CANCELLED, 'call cancelled by caller', { cause: signal.reason }));
            return;
          }
          if (err.code === GRPC_CODES.UNAVAILABLE) this.#dropConnection(channel);
          reject(new CsiError(method.rpc, err.code, transportDetails(err.details), { cause: err }));
        },
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
