// Leader election on etcd: one lease per server (kept alive by this class,
// not by the etcd client, so that it knows the latest instant etcd can have
// let the lease go), a member key under the lease, and an election key that
// a transaction creates only when it is absent.
//
// Safety: the leader steps down locally when it has not renewed its lease
// for `ttl - margin`, i.e. before etcd can expire the lease and let another
// server create the election key; a leader paused longer than that (SIGSTOP)
// is stopped by the fence: every leader write compares the election key's
// create_revision, which a new term changes.

import { randomUUID } from 'node:crypto';
import { Etcd3, EtcdLeaseInvalidError, type Lease, type Watcher } from 'etcd3';
import {
  AbortedError,
  describeError,
  silentLogger,
  systemClock,
  type Clock,
  type Logger,
} from '../../lib/index.js';
import { etcdFailFast } from '../state/index.js';
import { LeaderError, type Fence, type LeaderInfo, type Leadership, type ServerMember } from './leadership.js';

export interface EtcdLeadershipOptions {
  endpoints: readonly string[];
  /** This server: its ID and advertised HTTP address. The ID defaults to a random UUID. */
  self: { id?: string; address: string };
  /** Lease TTL in seconds: how long a dead leader keeps the cluster leaderless. Default 3. */
  leaseTtlSeconds?: number;
  /** Key prefix; default `/berth/`. */
  prefix?: string;
  clock?: Clock;
  logger?: Logger;
}

interface MemberValue {
  id: string;
  address: string;
  startedAt: number;
  /** In the lease-less record of a server whose lease ran out: when another server saw it. */
  failedAt?: number;
}

const NEVER = '-1';

/**
 * Elects one leader among the servers sharing an etcd cluster. See the
 * Leadership contract. `start()` rejects with LeaderError SERVER_LEADERSHIP
 * when etcd cannot grant a lease within the TTL (the server then fails to
 * start); after start, etcd outages are survived: the leader steps down, and
 * everyone campaigns again when etcd is back.
 */
export class EtcdLeadership implements Leadership {
  readonly self: LeaderInfo;
  readonly #client: Etcd3;
  readonly #ttl: number;
  readonly #electionKey: string;
  readonly #memberPrefix: string;
  /** A lease-less record per server that ever joined: kept after a crash, so that it shows as failed. */
  readonly #knownPrefix: string;
  /** The watch that marks failed servers, once made (undefined when it could not be). */
  #membersWatch: Promise<Watcher | undefined> | undefined;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #startedAt = Date.now();
  readonly #listeners = new Set<(leading: boolean) => void | Promise<void>>();
  readonly #stop = new AbortController();
  /** Listener calls run one after another, in order. */
  #notify: Promise<void> = Promise.resolve();
  #lease: Lease | undefined;
  #leaseId = '';
  /** Clock time until which etcd cannot have let our lease go (minus the margin). */
  #validUntil = 0;
  #term: Fence | undefined;
  #leader: LeaderInfo | undefined;
  #wake: (() => void) | undefined;
  #deadline: AbortController | undefined;
  #loop: Promise<void> | undefined;

  constructor(opts: EtcdLeadershipOptions) {
    if (!opts.endpoints.length) throw new LeaderError('SERVER_LEADERSHIP', 'leader election needs at least one etcd endpoint');
    this.self = { id: opts.self.id ?? randomUUID(), address: opts.self.address };
    this.#ttl = opts.leaseTtlSeconds ?? 3;
    const prefix = opts.prefix ?? '/berth/';
    this.#electionKey = `${prefix}leader`;
    this.#memberPrefix = `${prefix}members/`;
    this.#knownPrefix = `${prefix}servers/`;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'leadership', serverId: this.self.id });
    this.#client = new Etcd3({
      hosts: [...opts.endpoints],
      dialTimeout: this.#ttl * 1000,
      ...etcdFailFast,
      // One call never outlives the lease it is meant to keep.
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + this.#ttl * 1000 }),
    });
  }

  get isLeader(): boolean {
    return this.#term !== undefined;
  }

  get leader(): LeaderInfo | undefined {
    return this.#term ? this.self : this.#leader;
  }

  fence(): Fence {
    return this.#term ?? { key: this.#electionKey, createRevision: NEVER };
  }

  onChange(fn: (leading: boolean) => void | Promise<void>): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  stepDown(reason: string): void {
    if (!this.#term) return;
    this.#log.warn({ reason }, 'stepping down');
    this.#lose();
    // Our lease still holds the election key: end it so another server can take over now.
    this.#dropLease();
    this.#wake?.();
  }

  async checkQuorum(): Promise<void> {
    // A Range is linearizable by default: only a member with a quorum answers it.
    await this.#within(this.#client.get(this.#electionKey).string(), Math.min(1_000, this.#ttl * 500));
  }

  async members(opts: { signal?: AbortSignal } = {}): Promise<ServerMember[]> {
    const [values, leaderValue, known] = await Promise.all([
      this.#client.getAll().prefix(this.#memberPrefix).strings(),
      this.#client.get(this.#electionKey).string(),
      this.#client.getAll().prefix(this.#knownPrefix).strings(),
    ]);
    if (opts.signal?.aborted) throw new AbortedError('members aborted', { cause: opts.signal.reason });
    const leader = leaderValue ? parse<LeaderInfo>(leaderValue) : undefined;
    const out: ServerMember[] = [];
    for (const v of Object.values(values)) {
      const m = parse<MemberValue>(v);
      if (m) out.push({ id: m.id, address: m.address, startedAt: m.startedAt, leader: leader?.id === m.id, status: 'alive' });
    }
    for (const v of Object.values(known)) {
      const m = parse<MemberValue>(v);
      if (!m || out.some((o) => o.id === m.id)) continue;
      out.push({ id: m.id, address: m.address, startedAt: m.startedAt, leader: leader?.id === m.id, status: 'failed', ...(m.failedAt ? { failedAt: m.failedAt } : {}) });
    }
    if (leader && !out.some((m) => m.id === leader.id)) out.push({ ...leader, leader: true, status: 'left', startedAt: 0 });
    return out.sort((a, b) => a.address.localeCompare(b.address));
  }

  async start(): Promise<void> {
    if (this.#loop) return;
    try {
      await this.#session();
    } catch (err) {
      throw new LeaderError('SERVER_LEADERSHIP', `cannot join the cluster through etcd: ${describeError(err)}`, { cause: err });
    }
    await this.#campaignOnce().catch((err: unknown) => this.#log.warn({ err: describeError(err) }, 'first campaign failed'));
    this.#loop = this.#run(this.#stop.signal);
    this.#membersWatch = this.#watchMembers().catch((err: unknown) => {
      this.#log.warn({ err: describeError(err) }, 'cannot watch the members; failed servers show without a time');
      return undefined;
    });
  }

  /** Marks, in its lease-less record, when another server's lease ran out (its member key went without it leaving). */
  async #watchMembers(): Promise<Watcher> {
    const watcher = await this.#client.watch().prefix(this.#memberPrefix).create();
    watcher.on('error', () => undefined);
    watcher.on('delete', (kv) => {
      const id = kv.key.toString().slice(this.#memberPrefix.length);
      if (id === this.self.id || this.#stop.signal.aborted) return;
      void this.#markFailed(id, this.#clock.now()).catch(() => undefined);
    });
    return watcher;
  }

  async #markFailed(id: string, at: number): Promise<void> {
    const key = `${this.#knownPrefix}${id}`;
    const res = await this.#client.get(key).exec();
    const kv = res.kvs[0];
    const rec = kv ? parse<MemberValue>(kv.value.toString()) : undefined;
    if (!kv || !rec || rec.failedAt) return;
    // Only over the record as read: a server that left (deleted it) or came back (rewrote it) wins.
    await this.#client.if(key, 'Mod', '==', kv.mod_revision).then(this.#client.put(key).value(JSON.stringify({ ...rec, failedAt: at }))).commit();
  }

  async stop(): Promise<void> {
    if (this.#stop.signal.aborted) {
      await this.#loop;
      return;
    }
    this.#stop.abort(new Error('leadership stopped'));
    this.#deadline?.abort();
    this.#wake?.();
    if (this.#term) this.#lose();
    await this.#notify;
    await this.#loop;
    // The members watch is cancelled before the client closes: a watch left open keeps the
    // process alive. One still being made (etcd unreachable) is cancelled when it is made.
    const watch = this.#membersWatch?.then(async (w) => w?.cancel().catch(() => undefined));
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([watch, new Promise<void>((resolve) => (bound = setTimeout(resolve, this.#ttl * 1000)))]);
    clearTimeout(bound);
    // Leaving, not failing: our record goes first, so that no server marks us failed.
    await this.#client.delete().key(`${this.#knownPrefix}${this.self.id}`).exec().catch(() => undefined);
    const lease = this.#lease;
    this.#lease = undefined;
    // Revoking deletes our member key and, if we led, the election key: the next leader need not wait for the TTL.
    await lease?.revoke().catch(() => undefined);
    this.#client.close();
  }

  /** Grants a lease and publishes this server under it. */
  async #session(): Promise<void> {
    const lease = this.#client.lease(this.#ttl, { autoKeepAlive: false });
    lease.on('lost', () => undefined);
    const sentAt = this.#clock.now();
    this.#leaseId = await lease.grant();
    this.#lease = lease;
    this.#renewed(sentAt + this.#margin());
    const member: MemberValue = { id: this.self.id, address: this.self.address, startedAt: this.#startedAt };
    await this.#client.put(`${this.#memberPrefix}${this.self.id}`).value(JSON.stringify(member)).lease(this.#leaseId).exec();
    await this.#client.put(`${this.#knownPrefix}${this.self.id}`).value(JSON.stringify(member)).exec();
    this.#log.info({ lease: this.#leaseId }, 'joined the cluster');
  }

  /** How long after sending a keepalive we may still trust the lease: two thirds of the TTL. */
  #margin(): number {
    return Math.floor((this.#ttl * 1000 * 2) / 3);
  }

  #dropLease(): void {
    const lease = this.#lease;
    this.#lease = undefined;
    void lease?.revoke().catch(() => undefined);
  }

  /**
   * One attempt to become leader; else learns who leads. Returns the election key's revision seen.
   * `again`: the attempt made after removing a key of our own from an earlier lease.
   */
  async #campaignOnce(again = false): Promise<string> {
    if (!this.#lease) await this.#session();
    const value = JSON.stringify({ id: this.self.id, address: this.self.address } satisfies LeaderInfo);
    const res = await this.#client
      .if(this.#electionKey, 'Create', '==', 0)
      .then(this.#client.put(this.#electionKey).value(value).lease(this.#leaseId))
      .else(this.#client.get(this.#electionKey))
      .commit();
    const revision = String(res.header.revision);
    if (res.succeeded) {
      this.#win({ key: this.#electionKey, createRevision: revision });
      return revision;
    }
    const kv = res.responses[0]?.response_range?.kvs[0];
    if (!kv) return revision;
    const info = parse<LeaderInfo>(kv.value.toString());
    if (info?.id === this.self.id && String(kv.lease) === this.#leaseId) {
      // Our own key from before (a step-down that could not reach etcd): the term goes on.
      this.#win({ key: this.#electionKey, createRevision: String(kv.create_revision) });
      return revision;
    }
    if (info?.id === this.self.id && !again) {
      // Our own key under a lease we no longer hold: we stepped down while etcd was away (it
      // restores a lease with a fresh TTL when it comes back), or this server ran before and
      // was killed. Nobody leads by it, and the cluster would wait out that lease; our name on
      // it makes it ours to remove (a process still running under this name is fenced out).
      const removed = await this.#client.if(this.#electionKey, 'Create', '==', kv.create_revision).then(this.#client.delete().key(this.#electionKey)).commit();
      if (removed.succeeded) this.#log.info({ lease: String(kv.lease) }, 'removed our election key of an earlier lease');
      return this.#campaignOnce(true);
    }
    if (info && (this.#leader?.id !== info.id || this.#leader.address !== info.address)) {
      this.#log.info({ leader: info.id, address: info.address }, 'following');
    }
    this.#leader = info;
    return revision;
  }

  #win(term: Fence): void {
    this.#term = term;
    this.#leader = this.self;
    this.#log.info({ term: term.createRevision }, 'leading');
    this.#emit(true);
  }

  #lose(): void {
    this.#term = undefined;
    this.#leader = undefined;
    this.#log.warn('no longer leading');
    this.#emit(false);
  }

  #emit(leading: boolean): void {
    this.#notify = this.#notify.then(async () => {
      for (const l of this.#listeners) {
        try {
          await l(leading);
        } catch (err) {
          this.#log.error({ err: describeError(err) }, 'a leadership listener failed');
        }
      }
    });
  }

  /**
   * The background loop: keeps the lease alive every sixth of the TTL and
   * watches the election key; campaigns when the key goes away, the lease
   * was lost, or etcd came back.
   */
  async #run(signal: AbortSignal): Promise<void> {
    let watcher: Watcher | undefined;
    let watchedLeader = false;
    let campaign = !this.isLeader;
    while (!signal.aborted) {
      try {
        if (!this.#lease) {
          await this.#session();
          campaign = true;
        }
        if (campaign) {
          campaign = false;
          await watcher?.cancel().catch(() => undefined);
          watcher = undefined;
          const rev = await this.#campaignOnce();
          if (!this.isLeader) {
            watchedLeader = true;
            watcher = await this.#client.watch().key(this.#electionKey).startRevision(String(Number(rev) + 1)).create();
            watcher.on('delete', () => {
              campaign = true;
              this.#wake?.();
            });
            watcher.on('put', (kv) => {
              const info = parse<LeaderInfo>(kv.value.toString());
              if (info) this.#leader = info;
            });
            watcher.on('error', () => undefined);
          } else watchedLeader = false;
        }
        // Renewed every sixth of the TTL: the lease is trusted for two thirds of it after a renewal
        // is sent, so an event loop busy for up to half the TTL (a thousand nodes registering on a
        // loaded machine) does not cost the leadership.
        await this.#sleep(Math.floor((this.#ttl * 1000) / 6), signal);
        if (signal.aborted) break;
        await this.#keepAlive();
        // A lost watch event must not leave the cluster leaderless for long.
        if (!this.isLeader && watchedLeader && !campaign) campaign = (await this.#client.get(this.#electionKey).string()) === null;
      } catch (err) {
        if (signal.aborted) break;
        this.#log.warn({ err: describeError(err) }, 'etcd call failed');
        if (leaseGone(err)) {
          // Our lease ran out while this process was stalled (a loaded machine, a long pause): every call
          // made with it fails from now on, so the next round starts a new session instead of retrying forever.
          if (this.#term) this.#lose();
          this.#lease = undefined;
        }
        this.#checkValid();
        await this.#sleep(Math.floor((this.#ttl * 1000) / 3), signal);
        campaign = true;
      }
    }
    await watcher?.cancel().catch(() => undefined);
  }

  /**
   * Renews the lease. A member that died fails the call (the etcd client then
   * avoids it), so attempts are repeated, each short, for as long as the
   * lease is still surely ours: losing one etcd member must not cost the
   * leadership.
   */
  async #keepAlive(): Promise<void> {
    const lease = this.#lease;
    if (!lease) return;
    this.#checkValid();
    const attemptMs = Math.max(200, Math.floor((this.#ttl * 1000) / 4));
    let lastErr: unknown;
    for (let attempt = 0; attempt < 8; attempt++) {
      const sentAt = this.#clock.now();
      if (attempt > 0 && this.#term && sentAt >= this.#validUntil) break;
      let res;
      try {
        res = await this.#within(lease.keepaliveOnce(), attemptMs);
      } catch (err) {
        lastErr = err;
        if (this.#stop.signal.aborted || this.#lease !== lease) return;
        continue;
      }
      if (Number(res.TTL) <= 0) {
        this.#log.warn('the lease expired');
        if (this.#term) this.#lose();
        this.#lease = undefined;
        return;
      }
      this.#renewed(sentAt + this.#margin());
      return;
    }
    throw lastErr instanceof Error ? lastErr : new Error('the lease could not be renewed');
  }

  /** Records a renewal and re-arms the step-down timer (which fires even while an etcd call hangs). */
  #renewed(validUntil: number): void {
    this.#validUntil = validUntil;
    this.#deadline?.abort();
    const ac = new AbortController();
    this.#deadline = ac;
    void this.#clock
      .sleep(Math.max(1, validUntil - this.#clock.now()), ac.signal)
      // Timers run before I/O in an event-loop turn: on a busy loop the renewal's answer may be
      // waiting behind this timer. Checking after the turn's I/O lets that answer count first.
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => {
        if (!ac.signal.aborted) this.#checkValid();
      })
      .catch(() => undefined);
  }

  /** `p`, or a rejection after `ms` (etcd streams carry no deadline of their own). */
  async #within<T>(p: Promise<T>, ms: number): Promise<T> {
    const ac = new AbortController();
    try {
      return await Promise.race([
        p,
        this.#clock.sleep(ms, ac.signal).then(() => {
          throw new Error(`etcd did not answer within ${ms} ms`);
        }),
      ]);
    } finally {
      ac.abort();
    }
  }

  /** Steps down once the lease may have run out without us hearing from etcd. */
  #checkValid(): void {
    if (this.#term && this.#clock.now() >= this.#validUntil) {
      this.#log.warn('lost contact with etcd for too long');
      this.#lose();
      this.#dropLease();
    }
  }

  #sleep(ms: number, signal: AbortSignal): Promise<void> {
    const inner = new AbortController();
    this.#wake = () => inner.abort();
    return this.#clock.sleep(ms, AbortSignal.any([signal, inner.signal])).catch(() => undefined);
  }
}

/** Whether etcd says the lease a call used no longer exists (expired or revoked). */
function leaseGone(err: unknown): boolean {
  return err instanceof EtcdLeaseInvalidError || /requested lease not found/.test(describeError(err));
}

function parse<T>(s: string): T | undefined {
  try {
    return JSON.parse(s) as T;
  } catch {
    return undefined;
  }
}
