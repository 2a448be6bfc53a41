import {
  BACKOFF,
  backoffDelay,
  describeError,
  Lifecycle,
  linkSignals, WAIT_ENDED,
  silentLogger,
  systemClock,
  type BackoffPolicy,
  type Clock,
  type LifecycleState,
  type Logger,
} from '../../lib/index.js';
import { rowKey, type StateStore } from '../state/index.js';
import type { ClaimRelease } from './claim-release.js';

/** What the watcher needs of the release state machine (a ClaimRelease, or the VolumeService door over one). */
export type ClaimReleaser = Pick<ClaimRelease, 'releaseReason' | 'releasing' | 'releaseByKey'> & Partial<Pick<ClaimRelease, 'fence'>>;

export interface ClaimWatcherOptions {
  store: StateStore;
  volumes: ClaimReleaser;
  clock?: Clock;
  logger?: Logger;
  /** Backoff between failed releases of one claim. Default 1 s doubling to 2 min, 20 % jitter. */
  backoff?: Partial<BackoffPolicy>;
  /** Randomness for jitter; injectable for tests. */
  random?: () => number;
}

export type ClaimWatcherState = LifecycleState;

/** A pass over every claim at least this often while changes keep waking the watcher (clock ms); between, a pass looks only at the claims the changes concern. */
export const FULL_PASS_MS = 5_000;

/** What the writes since a pass touched: claims of these allocations and of these nodes may have to go. */
interface ChangedScope {
  allocIds: Set<string>;
  nodeIds: Set<string>;
}

/**
 * Releases every claim that must go: its allocation is client-terminal or
 * gone, its node is down or gone, or a release was left half done (by a
 * crash, or a failure). Never while the allocation still runs on a live
 * node, nor while a write claim of a silent node is fenced (it records the
 * fence on the claim and wakes on the clock when it ends). Wakes on changes to claims, allocations and nodes (blocking reads),
 * and on the clock when a failed release's backoff ends.
 *
 * Lifecycle (lib Lifecycle): start() returns once the first pass was
 * started; a second start is a no-op, a start after stop rejects with
 * LIFECYCLE_STOPPED. stop() is safe twice, aborts the releases it started
 * (each stays at its last checkpoint, to be resumed by the next server
 * start) and waits for them.
 */
export class ClaimWatcher {
  readonly #store: StateStore;
  readonly #volumes: ClaimReleaser;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #backoff: BackoffPolicy;
  readonly #random: () => number;
  /** Claim key -> failed attempts and when the next may start (clock ms). */
  readonly #retry = new Map<string, { failures: number; notBefore: number }>();
  readonly #mine = new Set<string>();
  readonly #life: Lifecycle;
  #wake: AbortController | undefined;
  /** When the earliest fence seen by the last pass ends (clock ms). */
  #fenceEnds: number | undefined;
  /** A release failed since the loop last woke: its backoff is scheduled by a pass over every claim. */
  #failed = false;

  constructor(opts: ClaimWatcherOptions) {
    this.#store = opts.store;
    this.#volumes = opts.volumes;
    this.#clock = opts.clock ?? systemClock;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'claim-watcher' });
    this.#backoff = { ...BACKOFF.claimRelease, ...opts.backoff };
    this.#random = opts.random ?? Math.random;
    this.#life = new Lifecycle({ logger: this.#logger });
  }

  get state(): ClaimWatcherState {
    return this.#life.state;
  }

  /**
   * One pass: starts the release of every claim that must go and is not
   * backing off or already releasing. Returns the releases it started (they
   * never reject; failures back off). Synchronous apart from the releases.
   * `scope`: look only at the claims of those allocations and nodes (what
   * the writes since the last pass touched); absent: at every claim.
   */
  sweep(scope?: ChangedScope): Promise<void>[] {
    const snap = this.#store.snapshot();
    const now = this.#clock.now();
    const started: Promise<void>[] = [];
    const live = new Set<string>();
    const fenced: Array<{ key: string; until?: number; reason?: string }> = [];
    // A partial pass only adds fences it saw; a fence that ended makes the next wake-up a full pass.
    if (!scope) this.#fenceEnds = undefined;
    const claims = scope ? snap.list('claims', { filter: (c) => scope.allocIds.has(c.allocId) || scope.nodeIds.has(c.nodeId) }) : snap.list('claims');
    for (const claim of claims) {
      const key = rowKey(claim.namespace, claim.volumeId, claim.allocId);
      live.add(key);
      const reason = this.#volumes.releaseReason(snap, claim);
      if (!reason && this.#volumes.fence) {
        const fence = this.#volumes.fence(snap, claim);
        if (fence) {
          this.#fenceEnds = Math.min(this.#fenceEnds ?? fence.until, fence.until);
          if (claim.fencedUntil !== fence.until) fenced.push({ key, ...fence });
        } else if (claim.fencedUntil !== undefined && claim.state === 'taken') {
          // The node came back and the claim holds again as any other: no wait to show.
          fenced.push({ key });
        }
      }
      if (!reason || this.#volumes.releasing(key)) continue;
      const retry = this.#retry.get(key);
      if (retry && retry.notBefore > now) continue;
      // Started by this watcher and not yet settled here (its backoff is being scheduled).
      if (this.#mine.has(key)) continue;
      const run = this.#release(key, reason);
      started.push(run);
    }
    if (!scope) for (const key of this.#retry.keys()) if (!live.has(key)) this.#retry.delete(key);
    if (fenced.length) started.push(this.#life.track(this.#recordFences(fenced)));
    return started;
  }

  /** Writes each fence onto its claim (or clears one that no longer holds), so that volume and allocation status show the wait and its reason. Never rejects. */
  async #recordFences(fences: ReadonlyArray<{ key: string; until?: number; reason?: string }>): Promise<void> {
    try {
      await this.#store.write((txn) => {
        for (const f of fences) {
          const cur = txn.get('claims', f.key);
          if (!cur || cur.state !== 'taken' || cur.fencedUntil === f.until) continue;
          const { fencedUntil: _u, fenceReason: _r, ...rest } = cur;
          txn.put('claims', f.until === undefined ? rest : { ...rest, fencedUntil: f.until, fenceReason: f.reason ?? '' });
        }
      });
      for (const f of fences) {
        if (f.until !== undefined) this.#logger.warn({ claim: f.key, until: new Date(f.until).toISOString(), reason: f.reason }, 'write claim fenced: its node is silent');
      }
    } catch (err) {
      if (!this.#store.closed) this.#logger.warn({ err: describeError(err) }, 'recording a claim fence failed');
    }
  }

  #release(key: string, reason: string): Promise<void> {
    this.#mine.add(key);
    const signal = this.#life.signal;
    const real = this.#volumes.releaseByKey(key, reason, signal).then(
      () => {
        this.#mine.delete(key);
        this.#retry.delete(key);
      },
      (err: unknown) => {
        if (signal.aborted) {
          this.#mine.delete(key);
          return;
        }
        const failures = (this.#retry.get(key)?.failures ?? 0) + 1;
        const delay = backoffDelay(this.#backoff, failures, this.#random);
        this.#retry.set(key, { failures, notBefore: this.#clock.now() + delay });
        this.#mine.delete(key);
        this.#failed = true;
        this.#wake?.abort(WAIT_ENDED);
        this.#logger.warn({ claim: key, failures, delayMs: delay, err: describeError(err) }, 'claim release failed; backing off');
      },
    );
    return this.#life.track(real);
  }

  /**
   * The allocations and nodes the writes after `after` touched (a claim's
   * write counts for its allocation), or undefined when that cannot be told
   * (the event history no longer reaches back, or a deleted row is unknown):
   * the pass then looks at every claim.
   */
  #changedSince(after: number): ChangedScope | undefined {
    const snap = this.#store.snapshot();
    const oldest = snap.oldestEventIndex;
    if (oldest <= 0 || oldest > after + 1) return undefined;
    const scope: ChangedScope = { allocIds: new Set(), nodeIds: new Set() };
    for (const e of snap.events(after, { topics: ['claims', 'allocations', 'nodes'] })) {
      const row = e.row as { id?: unknown; allocId?: unknown } | null;
      const id = e.topic === 'claims' ? row?.allocId : row?.id;
      if (typeof id !== 'string') return undefined;
      (e.topic === 'nodes' ? scope.nodeIds : scope.allocIds).add(id);
    }
    return scope;
  }

  /** When the earliest backoff ends (clock ms), or undefined when none is pending. */
  #nextRetry(): number | undefined {
    let next: number | undefined;
    for (const r of this.#retry.values()) next = next === undefined ? r.notBefore : Math.min(next, r.notBefore);
    return next;
  }

  start(): Promise<void> {
    return this.#life.start((signal) => this.#start(signal));
  }

  #start(signal: AbortSignal): void {
    // Failures before a restart are known only from the claims: retry those at once, then back off from there.
    const now = this.#clock.now();
    for (const claim of this.#store.snapshot().list('claims', { filter: (c) => c.releaseAttempts > 0 })) {
      this.#retry.set(rowKey(claim.namespace, claim.volumeId, claim.allocId), { failures: claim.releaseAttempts, notBefore: now });
    }
    void this.#life.track((async () => {
      /** The index the writes of a partial pass come after; undefined: the next pass looks at every claim. */
      let after: number | undefined;
      let lastFull = 0;
      while (!signal.aborted && !this.#store.closed) {
        const seen = this.#store.latestIndex();
        try {
          const scope = after !== undefined && this.#clock.now() - lastFull < FULL_PASS_MS ? this.#changedSince(after) : undefined;
          if (!scope) lastFull = this.#clock.now();
          this.sweep(scope);
        } catch (err) {
          if (this.#store.closed) break;
          this.#logger.error({ err: describeError(err) }, 'claim watcher pass failed');
        }
        const wake = new AbortController();
        this.#wake = wake;
        const both = linkSignals([signal, wake.signal]).signal; // unlinked by wake.abort()
        // A release that finishes changes claims, which wakes the blocking read;
        // one that fails wakes the loop (#wake) to schedule its backoff.
        let byWrites = false;
        let byClock = false;
        const waits: Promise<unknown>[] = [this.#store.blockUntil(['claims', 'allocations', 'nodes'], seen, { signal: both }).then(() => (byWrites = true))];
        const retries = [this.#nextRetry(), this.#fenceEnds].filter((t): t is number => t !== undefined);
        const retryAt = retries.length ? Math.min(...retries) : undefined;
        if (retryAt !== undefined) waits.push(this.#clock.sleep(Math.max(1, retryAt - this.#clock.now()), both).then(() => (byClock = true)));
        await Promise.race(waits).catch(() => undefined);
        wake.abort(WAIT_ENDED);
        await Promise.allSettled(waits);
        // Only writes woke it: the next pass looks at what they touched. A backoff or fence that ended, or a failed release: every claim.
        after = byWrites && !byClock && !this.#failed ? seen : undefined;
        this.#failed = false;
      }
    })());
  }

  /** Aborts the loop and the releases it started and waits for them. Safe twice; never rejects. */
  stop(): Promise<void> {
    return this.#life.stop();
  }
}
