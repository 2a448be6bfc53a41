// The node agent's HTTP client for the server's node endpoints: register,
// heartbeat, its allocations (blocking reads), allocation status updates,
// and volume claims. Every call takes an AbortSignal; failures become
// ServerConnError with a stable code and whether a retry may cure them.
// Bodies are never logged (claims and jobs carry secrets).

import http from 'node:http';
import type { ServiceRegistration as NomadServiceRegistration, ServiceRegistrationListStub } from '../../api/index.js';
import { AbortedError, BerthError, describeError } from '../../lib/index.js';
import { encodeHeldJobs } from '../../structs/index.js';
import type { AllocIndexesAnswer, AllocIndexesInline, AllocPullAnswer, AllocPullRequest, Allocation, IdentityRequest, IdentitySignAnswer, Job, Node, NodeClaimAnswer, NodeFingerprint, TaskState, AllocClientStatus, AllocNetworkStatus, VolumeStatsReport, CheckResult, ServiceReport, ServiceRegistration } from '../../structs/index.js';

export type ServerConnErrorCode =
  /** The server could not be reached (connection refused, reset, DNS) or answered 5xx/503. */
  | 'SERVER_UNREACHABLE'
  /** The server refused the request (4xx); `apiCode` says why. */
  | 'SERVER_REFUSED'
  /** The server answered something that is not the JSON it promised. */
  | 'SERVER_BAD_ANSWER';

/**
 * A failed call to the server. `status` is the HTTP status (0 when none
 * came back), `apiCode` the server's own error code (e.g. NOT_FOUND,
 * CONFLICT, EXHAUSTED), `retryable` whether the same call may succeed later.
 */
export class ServerConnError extends BerthError<ServerConnErrorCode> {
  readonly status: number;
  readonly apiCode: string;
  readonly retryable: boolean;
  /**
   * A Berth server answered, past its token check, with its own error
   * envelope (e.g. 503 STORE_UNAVAILABLE, SERVER_LEADER_UNAVAILABLE): proof
   * that a server of the cluster is alive and knows this node's token. False
   * for no answer, 401/403, and answers that are not Berth's JSON (a proxy).
   */
  readonly answered: boolean;

  constructor(code: ServerConnErrorCode, message: string, opts: { status?: number; apiCode?: string; retryable: boolean; answered?: boolean; cause?: unknown }) {
    super(code, message, { cause: opts.cause });
    this.status = opts.status ?? 0;
    this.apiCode = opts.apiCode ?? '';
    this.retryable = opts.retryable;
    this.answered = opts.answered ?? false;
  }
}

/** The options of a blocking read: without `index` it answers at once. */
export interface BlockingOptions {
  /** Wait until the server's state passes this index. */
  index?: number;
  /** How long the server may wait (default its own, 5 min). */
  waitMs?: number;
  signal?: AbortSignal;
}

/** Whether `err` says the server does not serve the route at all (a server older than this agent). */
export function isNoRoute(err: unknown): boolean {
  return err instanceof ServerConnError && err.status === 404 && err.message.includes('no route');
}

/** One allocation as the server hands it to its node: with its job (mount flags included, for the node only). */
export type NodeAllocation = Allocation & { job?: Job };

/** An allocation status change the node reports. */
export interface AllocStatusReport {
  id: string;
  clientStatus: AllocClientStatus;
  clientDescription: string;
  taskStates: Record<string, TaskState>;
  network?: AllocNetworkStatus;
  /** The latest result of each service check (replaces the server's). */
  checks?: Record<string, CheckResult>;
  /** The allocation's services as the node resolved them (replaces its registrations). */
  services?: ServiceReport[];
}

export interface ServerApiOptions {
  /**
   * Base URL of the server's HTTP API, e.g. `http://127.0.0.1:4646`, or
   * several servers of one cluster: calls go to one of them and move to the
   * next when it cannot be reached (the caller's retry then reaches another).
   */
  address: string | readonly string[];
  /** Bearer token of the `node` role. Never logged. */
  token: string;
  /** Deadline of one non-blocking call. Default 15 s. */
  requestTimeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 15_000;
/** How long past its `wait` a blocking read may take before the server counts as hung. */
const BLOCKING_GRACE_MS = 5_000;
/** How long a leader that failed to answer is not taken from a server's word again (an election takes a lease TTL). */
const LEADER_DISTRUST_MS = 15_000;

/**
 * Stateless HTTP client of the server's node endpoints. Safe to use
 * concurrently. Every method rejects with ServerConnError or AbortedError
 * (when `signal` fired).
 */
export class ServerApi {
  readonly #bases: readonly string[];
  #current = 0;
  readonly #token: string;
  readonly #timeoutMs: number;
  #agent = new http.Agent({ keepAlive: true });
  /** Fired when calls move to another server: every call still waiting on the one left is abandoned. */
  #moved = new AbortController();
  #answers = 0;
  #bytes = 0;
  /**
   * The leader a cluster server named in its answer (`x-berth-leader`), when
   * it is one of the addresses given. Writes (every call but GET) go there
   * directly: a follower would only forward them, at a cost to both. Reads
   * stay on the current server. Forgotten when it fails to answer.
   */
  #leader: string | undefined;
  /**
   * A server that failed to answer (as the named leader, or as the current server calls moved
   * away from), and when: followers keep naming a frozen leader until its lease runs out.
   */
  #failedLeader: { address: string; at: number } | undefined;
  /** Fired when the named leader fails to answer a call: every other call waiting on it is abandoned. */
  #leaderGone = new AbortController();

  constructor(opts: ServerApiOptions) {
    const list = (typeof opts.address === 'string' ? [opts.address] : [...opts.address]).map((a) => a.replace(/\/+$/, ''));
    if (!list.length) throw new TypeError('ServerApi needs at least one server address');
    this.#bases = list;
    this.#token = opts.token;
    this.#timeoutMs = opts.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** The address calls go to now. */
  get address(): string {
    return this.#bases[this.#current] as string;
  }

  /** The leader writes go to, once a server named it; undefined before (or after it failed). */
  get leader(): string | undefined {
    return this.#leader;
  }

  /** Every server address given, in order. */
  get addresses(): readonly string[] {
    return this.#bases;
  }

  /**
   * Moves on to the next address, unless another call already moved away
   * from `failed`. Calls still waiting on `failed` (a blocking read, a claim)
   * are abandoned at once: a server that stopped answering one call (a
   * paused process keeps its sockets open) is not trusted with the others.
   */
  #failover(failed: string): void {
    if (this.#bases.length <= 1 || this.address !== failed) return;
    // The server left may have been the leader (a leader names no leader, so it was not
    // `#leader`): the followers go on naming it until its lease runs out. Not taken from them.
    this.#distrust(failed);
    this.#current = (this.#current + 1) % this.#bases.length;
    const moved = this.#moved;
    this.#moved = new AbortController();
    moved.abort(new Error(`calls moved from ${failed} to ${this.address}`));
  }

  /**
   * The named leader failed to answer a call: the next writes go through the current server,
   * it is not taken from a follower's word again for a while, and every other call still
   * waiting on it (a status report behind a frozen leader) is abandoned at once.
   */
  #leaderFailed(leader: string): void {
    this.#distrust(leader);
    const gone = this.#leaderGone;
    this.#leaderGone = new AbortController();
    gone.abort(new Error(`the leader ${leader} stopped answering`));
  }

  /** `address` failed to answer: writes no longer go to it as the leader, nor are sent there on a follower's word for a while. */
  #distrust(address: string): void {
    if (this.#leader === address) this.#leader = undefined;
    this.#failedLeader = { address, at: Date.now() };
  }

  /** The bearer token, for the node connection's upgrade request. */
  authHeader(): string {
    return `Bearer ${this.#token}`;
  }

  /** POST /v1/node/register. Keeping `id` makes a restarted agent the same node. */
  async register(fingerprint: NodeFingerprint, opts: { id?: string; signal?: AbortSignal } = {}): Promise<{ node: Node; heartbeatTtlMs: number }> {
    const { body } = await this.#call('POST', '/v1/node/register', { fingerprint, ...(opts.id ? { id: opts.id } : {}) }, opts.signal);
    return body as { node: Node; heartbeatTtlMs: number };
  }

  /**
   * POST /v1/node/:id/heartbeat, with the current fingerprint when given.
   * `timeoutMs` (default the request timeout) bounds the call: a server that
   * does not answer in time counts as unreachable (the next call goes to the
   * next server).
   */
  async heartbeat(
    nodeId: string,
    fingerprint: NodeFingerprint | undefined,
    opts: { signal?: AbortSignal; timeoutMs?: number } = {},
  ): Promise<{ heartbeatTtlMs: number }> {
    const { body } = await this.#call('POST', `/v1/node/${enc(nodeId)}/heartbeat`, fingerprint ? { fingerprint } : {}, opts.signal, opts.timeoutMs);
    return body as { heartbeatTtlMs: number };
  }

  /**
   * GET /v1/internal/node/:id/allocations: the whole list, each allocation with its
   * job (what servers older than the incremental sync serve). With `index`,
   * blocks on the server until the allocations pass it or `waitMs` runs out
   * (plus a few seconds' grace; a server silent past that counts as hung).
   * Also abandoned (rejects SERVER_UNREACHABLE, retryable) when another call
   * found the server dead and calls moved on. Resolves with the list and the
   * index to send next time.
   */
  async allocations(nodeId: string, opts: BlockingOptions = {}): Promise<{ index: number; allocations: NodeAllocation[] }> {
    const { body, index } = await this.#blockingGet(`/v1/internal/node/${enc(nodeId)}/allocations`, new URLSearchParams(), opts);
    if (!Array.isArray(body)) throw new ServerConnError('SERVER_BAD_ANSWER', 'the allocation list is not a list', { retryable: true });
    return { index, allocations: body as NodeAllocation[] };
  }

  /**
   * GET /v1/node/:id/allocation-indexes: each allocation's ID and alloc
   * modify index (structs AllocIndexesAnswer), blocking as allocations()
   * does. With `inline`, asks for the allocations changed since
   * `inline.since` in the same answer (`pulled`; a server older than that
   * answers without it). A server older than the incremental sync answers
   * SERVER_REFUSED with status 404 and a "no route" message (see isNoRoute).
   */
  async allocationIndexes(
    nodeId: string,
    opts: BlockingOptions & { inline?: AllocIndexesInline } = {},
  ): Promise<{ index: number; allocations: Record<string, number>; pulled?: NonNullable<AllocIndexesAnswer['pulled']> }> {
    const query = new URLSearchParams();
    if (opts.inline) {
      query.set('since', String(opts.inline.since));
      if (opts.inline.heldJobs.length > 0) query.set('heldJobs', encodeHeldJobs(opts.inline.heldJobs));
    }
    const { body, index } = await this.#blockingGet(`/v1/node/${enc(nodeId)}/allocation-indexes`, query, opts);
    const answer = body as Partial<AllocIndexesAnswer> | undefined;
    const allocations = answer?.allocations;
    if (!allocations || typeof allocations !== 'object' || Array.isArray(allocations)) {
      throw new ServerConnError('SERVER_BAD_ANSWER', 'the allocation indexes are not a map of IDs to indexes', { retryable: true });
    }
    const pulled = answer.pulled;
    if (pulled === undefined) return { index, allocations };
    if (!Array.isArray(pulled?.allocations) || !Array.isArray(pulled.jobs)) {
      throw new ServerConnError('SERVER_BAD_ANSWER', 'the allocations sent with the indexes lack their allocations or jobs', { retryable: true });
    }
    return { index, allocations, pulled };
  }

  /**
   * POST /v1/node/:id/allocations/pull: the allocations named (at most
   * ALLOC_PULL_MAX) and the jobs the node does not hold, from state at least
   * as new as `minIndex` (the server waits a few seconds to catch up, then
   * refuses with a retryable 503). Safe to repeat.
   */
  async pullAllocations(nodeId: string, req: AllocPullRequest, opts: { signal?: AbortSignal } = {}): Promise<AllocPullAnswer & { index: number }> {
    // A read: to the server that answered the indexes, not to the leader.
    const { body, index } = await this.#call('POST', `/v1/node/${enc(nodeId)}/allocations/pull`, req, opts.signal, undefined, true);
    const answer = body as Partial<AllocPullAnswer> | undefined;
    if (!Array.isArray(answer?.allocations) || !Array.isArray(answer.jobs) || !answer.allocModifyIndex || typeof answer.allocModifyIndex !== 'object') {
      throw new ServerConnError('SERVER_BAD_ANSWER', 'the allocation pull answer lacks its allocations, jobs or indexes', { retryable: true });
    }
    return { index, allocations: answer.allocations, allocModifyIndex: answer.allocModifyIndex, jobs: answer.jobs };
  }

  /**
   * GET /v1/service/:name (healthy instances), blocking as allocations() does
   * when `index` is given. For templates' nomadService.
   */
  async serviceInstances(
    name: string,
    opts: { namespace?: string; tag?: string } & BlockingOptions = {},
  ): Promise<{ index: number; instances: ServiceRegistration[] }> {
    const q = new URLSearchParams({ namespace: opts.namespace ?? 'default' });
    if (opts.tag) q.set('tag', opts.tag);
    const { body, index } = await this.#blockingGet(`/v1/service/${enc(name)}`, q, opts);
    return { index, instances: ((body ?? []) as NomadServiceRegistration[]).map(storedRegistration) };
  }

  /** GET /v1/services: the service names that have healthy instances. */
  async serviceList(opts: { namespace?: string } & BlockingOptions = {}): Promise<{ index: number; services: Array<{ namespace: string; serviceName: string; tags: string[] }> }> {
    const q = new URLSearchParams({ namespace: opts.namespace ?? 'default' });
    const { body, index } = await this.#blockingGet('/v1/services', q, opts);
    const services = ((body ?? []) as ServiceRegistrationListStub[]).flatMap((ns) => ns.Services.map((s) => ({ namespace: ns.Namespace, serviceName: s.ServiceName, tags: s.Tags ?? [] })));
    return { index, services };
  }

  /** POST /v1/internal/node/:id/allocations: status updates, applied all or none. */
  async updateAllocations(nodeId: string, updates: readonly AllocStatusReport[], opts: { signal?: AbortSignal } = {}): Promise<{ index: number }> {
    const { body } = await this.#call('POST', `/v1/internal/node/${enc(nodeId)}/allocations`, { allocations: updates }, opts.signal);
    return body as { index: number };
  }

  /**
   * POST /v1/volume/csi/:id/claim. The answer carries what the plugin needs to
   * mount (publish context, volume context, mount flags, secrets): the node's
   * to pass on, never to log or store.
   */
  async claim(
    req: { namespace: string; volumeId: string; allocId: string; mode: 'read' | 'write'; accessMode?: string; attachmentMode?: string },
    opts: { signal?: AbortSignal } = {},
  ): Promise<NodeClaimAnswer> {
    const body: Record<string, unknown> = { allocId: req.allocId, mode: req.mode };
    if (req.accessMode) body['accessMode'] = req.accessMode;
    if (req.attachmentMode) body['attachmentMode'] = req.attachmentMode;
    const path = `/v1/volume/csi/${enc(req.volumeId)}/claim?namespace=${enc(req.namespace)}`;
    return (await this.#call('POST', path, body, opts.signal)).body as NodeClaimAnswer;
  }

  /** POST /v1/volume/csi/:id/release. */
  async release(req: { namespace: string; volumeId: string; allocId: string }, opts: { signal?: AbortSignal } = {}): Promise<void> {
    const path = `/v1/volume/csi/${enc(req.volumeId)}/release?namespace=${enc(req.namespace)}`;
    await this.#call('POST', path, { allocId: req.allocId }, opts.signal);
  }

  /**
   * POST /v1/node/:id/identities: the server signs the named workload
   * identities of tasks of `allocId` (Nomad's Alloc.SignIdentities); what it
   * cannot sign comes back as rejections with Nomad's reasons. Sent to the
   * leader (its first signing makes the key). Safe to repeat (fresh tokens).
   */
  async signIdentities(nodeId: string, allocId: string, identities: readonly IdentityRequest[], opts: { signal?: AbortSignal } = {}): Promise<IdentitySignAnswer> {
    const { body } = await this.#call('POST', `/v1/node/${enc(nodeId)}/identities`, { allocId, identities }, opts.signal);
    const answer = body as Partial<IdentitySignAnswer> | undefined;
    if (!Array.isArray(answer?.signed) || !Array.isArray(answer.rejections)) {
      throw new ServerConnError('SERVER_BAD_ANSWER', 'the identity answer lacks its signed identities or rejections', { retryable: true });
    }
    return { signed: answer.signed, rejections: answer.rejections };
  }

  /** POST /v1/node/:id/volume-stats: the usage and condition of the node's published volumes. */
  async reportVolumeStats(nodeId: string, reports: readonly VolumeStatsReport[], opts: { signal?: AbortSignal } = {}): Promise<{ accepted: number }> {
    return (await this.#call('POST', `/v1/node/${enc(nodeId)}/volume-stats`, { reports }, opts.signal)).body as { accepted: number };
  }

  /** Answers received so far and their bodies' bytes (what the node downloaded from the servers). */
  get received(): { answers: number; bytes: number } {
    return { answers: this.#answers, bytes: this.#bytes };
  }

  /** A blocking GET: `index` and `wait` added to `q`; the deadline is the wait plus a grace. */
  #blockingGet(path: string, q: URLSearchParams, opts: BlockingOptions): Promise<{ body: unknown; index: number }> {
    if (opts.index !== undefined) q.set('index', String(opts.index));
    if (opts.waitMs !== undefined) q.set('wait', `${Math.max(1, Math.ceil(opts.waitMs / 1000))}s`);
    const blockingMs = opts.index !== undefined ? (opts.waitMs ?? 300_000) + BLOCKING_GRACE_MS : undefined;
    const query = q.toString();
    return this.#call('GET', query ? `${path}?${query}` : path, undefined, opts.signal, blockingMs);
  }

  /** Closes the kept-alive connections; calls still work afterwards (they open new ones). */
  close(): void {
    this.#agent.destroy();
    this.#agent = new http.Agent({ keepAlive: true });
  }

  /** One call; `read` (every GET, and a read sent as a POST) goes to the current server, a write to the leader named. */
  async #call(method: string, path: string, body: unknown, signal: AbortSignal | undefined, timeoutMs = this.#timeoutMs, read = method === 'GET'): Promise<{ body: unknown; index: number }> {
    if (signal?.aborted) throw new AbortedError(`${method} ${routeOf(path)} aborted`, { cause: signal.reason });
    let answer: { status: number; text: string; index: string | undefined; leader: string | undefined };
    const leader = read ? undefined : this.#leader;
    const base = leader ?? this.address;
    // A call to the named leader is abandoned when another call finds it gone; one to the current server when calls move.
    const left = leader ? this.#leaderGone.signal : this.#moved.signal;
    try {
      answer = await this.#request(base, method, path, body, [signal, left], timeoutMs);
    } catch (err) {
      if (signal?.aborted) throw new AbortedError(`${method} ${routeOf(path)} aborted`, { cause: signal.reason });
      if (left.aborted) {
        throw new ServerConnError('SERVER_UNREACHABLE', `${method} ${routeOf(path)} on ${base} abandoned: ${describeError(left.reason)}`, { retryable: true, cause: err });
      }
      if (leader) this.#leaderFailed(leader);
      else this.#failover(base);
      throw new ServerConnError('SERVER_UNREACHABLE', `server ${base} unreachable (${method} ${routeOf(path)}): ${describeError(err)}`, {
        retryable: true,
        cause: err,
      });
    }
    const { status, text } = answer;
    if (answer.leader !== undefined) {
      const named = answer.leader.replace(/\/+$/, '');
      const failed = this.#failedLeader;
      const distrusted = failed !== undefined && failed.address === named && Date.now() - failed.at < LEADER_DISTRUST_MS;
      if (this.#bases.includes(named) && !distrusted) this.#leader = named;
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch (err) {
      throw new ServerConnError('SERVER_BAD_ANSWER', `server answered ${method} ${routeOf(path)} with something other than JSON (HTTP ${status})`, {
        status,
        retryable: status >= 500,
        cause: err,
      });
    }
    if (status < 200 || status >= 300) {
      const e = (parsed ?? {}) as { code?: unknown; message?: unknown; details?: { retryable?: unknown } };
      const apiCode = typeof e.code === 'string' ? e.code : `HTTP_${status}`;
      const msg = typeof e.message === 'string' ? e.message : `HTTP ${status}`;
      const retryable = status >= 500 || status === 429 || e.details?.retryable === true;
      throw new ServerConnError(status >= 500 ? 'SERVER_UNREACHABLE' : 'SERVER_REFUSED', `${method} ${routeOf(path)}: ${apiCode}: ${msg}`, {
        status,
        apiCode,
        retryable,
        answered: typeof e.code === 'string' && status !== 401 && status !== 403,
      });
    }
    const index = Number(answer.index ?? 0);
    return { body: parsed, index: Number.isFinite(index) ? index : 0 };
  }

  /**
   * One request over node:http. An abort or the deadline destroys the
   * request and its socket, so the server sees the client go at once (a
   * blocking read then ends on the server too).
   */
  #request(
    base: string,
    method: string,
    path: string,
    body: unknown,
    signals: ReadonlyArray<AbortSignal | undefined>,
    timeoutMs: number,
  ): Promise<{ status: number; text: string; index: string | undefined; leader: string | undefined }> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { authorization: this.authHeader(), accept: 'application/json' };
      if (payload !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = String(Buffer.byteLength(payload));
      }
      const req = http.request(`${base}${path}`, { method, headers, agent: this.#agent });
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      const onAbort = (): void => {
        req.destroy(new Error('aborted'));
      };
      for (const signal of signals) signal?.addEventListener('abort', onAbort, { once: true });
      const finish = (): void => {
        clearTimeout(timer);
        for (const signal of signals) signal?.removeEventListener('abort', onAbort);
      };
      req.on('error', (err) => {
        finish();
        reject(err);
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) => {
          finish();
          reject(err);
        });
        res.on('aborted', () => {
          finish();
          reject(new Error('the answer was cut off'));
        });
        res.on('end', () => {
          finish();
          this.#answers++;
          for (const c of chunks) this.#bytes += c.length;
          const index = res.headers['x-nomad-index'] ?? res.headers['x-berth-index'];
          const leader = res.headers['x-berth-leader'];
          resolve({
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString('utf8'),
            index: Array.isArray(index) ? index[0] : index,
            leader: Array.isArray(leader) ? leader[0] : leader,
          });
        });
      });
      req.end(payload);
    });
  }
}

function enc(s: string): string {
  return encodeURIComponent(s);
}

/** The path without its query (which may name volumes): enough to say which call failed. */
function routeOf(path: string): string {
  return path.split('?')[0] ?? path;
}

/** A registration as Nomad's API answers it, as the node's templates read it. */
function storedRegistration(r: NomadServiceRegistration): ServiceRegistration {
  return {
    id: r.ID,
    serviceName: r.ServiceName,
    namespace: r.Namespace,
    nodeId: r.NodeID,
    datacenter: r.Datacenter,
    jobId: r.JobID,
    allocId: r.AllocID,
    tags: r.Tags ?? [],
    meta: r.Meta ?? {},
    address: r.Address,
    port: r.Port,
    createIndex: r.CreateIndex,
    modifyIndex: r.ModifyIndex,
  };
}
