// Who leads the cluster. With one server on SQLite the server always leads
// (SoloLeadership). With several servers on etcd (EtcdLeadership) each server
// holds an etcd lease, publishes itself as a member under that lease, and
// campaigns for one election key; the server whose transaction created the
// key leads until its lease ends. The key's create_revision is the term: the
// leader's store writes are fenced on it, so a paused old leader cannot write
// once another server created the key again.

import { BerthError, type Logger } from '../../lib/index.js';

/** The leader as it publishes itself in the election key. */
export interface LeaderInfo {
  /** The server's ID (stable across restarts when configured). */
  id: string;
  /** The server's advertised HTTP base URL, where followers forward writes. */
  address: string;
}

/** One server of the cluster as `berth server members` shows it. */
export interface ServerMember extends LeaderInfo {
  leader: boolean;
  /**
   * `alive`: its lease holds (it published itself and keeps it alive);
   * `failed`: it joined once and its lease ran out without it leaving (killed,
   * paused, cut off); `left`: the leader's key outlived its member key.
   */
  status: 'alive' | 'left' | 'failed';
  /** For `failed`: when a server saw its lease end (ms since epoch); absent when none saw it. */
  failedAt?: number;
  /** When the server started (ms since epoch). */
  startedAt: number;
}

/** What a leader's writes compare against (part of every store Txn). */
export interface Fence {
  key: string;
  /** The election key's create_revision (decimal string) of this term. */
  createRevision: string;
}

/**
 * SERVER_NOT_LEADER: a leader-only action on a follower (forward it);
 * SERVER_LEADER_UNAVAILABLE: no leader is known now (retry soon);
 * SERVER_LEADERSHIP: the election itself failed (etcd unreachable at start).
 */
export type LeaderErrorCode = 'SERVER_NOT_LEADER' | 'SERVER_LEADER_UNAVAILABLE' | 'SERVER_LEADERSHIP';

export class LeaderError extends BerthError<LeaderErrorCode> {
  /** Whether the same request may succeed shortly (once a leader is elected or known). */
  get retryable(): boolean {
    return this.code !== 'SERVER_LEADERSHIP';
  }
}

/**
 * The leadership the server follows. `start()` returns once the first
 * campaign round is done (this server leads or knows it follows, or no
 * leader could be found yet); `stop()` steps down (listeners hear `false`
 * first), leaves the cluster and is safe twice. Listeners are called on
 * every change of `isLeader`, in order, never concurrently with each other:
 * the server starts its leader loops on `true` and stops them on `false`.
 */
export interface Leadership {
  readonly isLeader: boolean;
  /** The current leader as last seen; undefined while none is known. */
  readonly leader: LeaderInfo | undefined;
  /** This server. */
  readonly self: LeaderInfo;
  /**
   * The fence for the store's writes: the current term's while leading, a
   * never-matching one otherwise (a follower must not write). Undefined
   * for a solo server (nothing to fence against).
   */
  fence(): Fence | undefined;
  /** Calls `fn(leading)` on each change; returns the unsubscribe function. */
  onChange(fn: (leading: boolean) => void | Promise<void>): () => void;
  /** The known servers, the leader marked. */
  members(opts?: { signal?: AbortSignal }): Promise<ServerMember[]>;
  /**
   * Resolves when the store the election runs on answers a quorum read
   * now; rejects otherwise (within a few seconds). Used to tell "no leader
   * because etcd has no quorum" from "no leader elected yet".
   */
  checkQuorum(opts?: { signal?: AbortSignal }): Promise<void>;
  /** Gives up leadership now (the loops stop) and campaigns again later; for a failed fence. */
  stepDown(reason: string): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The single server on SQLite: always the leader, nothing to elect. */
export class SoloLeadership implements Leadership {
  readonly self: LeaderInfo;
  readonly #startedAt = Date.now();
  readonly #listeners = new Set<(leading: boolean) => void | Promise<void>>();
  #leading = false;

  constructor(self: LeaderInfo, _opts: { logger?: Logger } = {}) {
    this.self = self;
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  get leader(): LeaderInfo | undefined {
    return this.#leading ? this.self : undefined;
  }

  fence(): Fence | undefined {
    return undefined;
  }

  onChange(fn: (leading: boolean) => void | Promise<void>): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  async members(): Promise<ServerMember[]> {
    return [{ ...this.self, leader: this.#leading, status: 'alive', startedAt: this.#startedAt }];
  }

  stepDown(): void {
    // A solo server has no one to hand over to.
  }

  async checkQuorum(): Promise<void> {
    // Nothing to reach: SQLite is local.
  }

  async start(): Promise<void> {
    if (this.#leading) return;
    this.#leading = true;
    for (const l of this.#listeners) await l(true);
  }

  async stop(): Promise<void> {
    if (!this.#leading) return;
    this.#leading = false;
    for (const l of this.#listeners) await l(false);
  }
}
