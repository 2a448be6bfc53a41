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
   */
  sweep(): Promise<void>[] {
    const snap = this.#store.snapshot();
    const now = this.#clock.now();
    const started: Promise<void>[] = [];
    const live = new Set<string>();
    const fenced: Array<{ key: string; until?: number; reason?: string }> = [];
    this.#fenceEnds = undefined;
    for (const claim of snap.list('claims')) {
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
    for (const key of this.#retry.keys()) if (!live.has(key)) this.#retry.delete(key);
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
        this.#wake?.abort(WAIT_ENDED);
        this.#logger.warn({ claim: key, failures, delayMs: delay, err: describeError(err) }, 'claim release failed; backing off');
      },
    );
    return this.#life.track(real);
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
      while (!signal.aborted && !this.#store.closed) {
        const seen = this.#store.latestIndex();
        try {
          this.sweep();
        } catch (err) {
          if (this.#store.closed) break;
          this.#logger.error({ err: describeError(err) }, 'claim watcher pass failed');
        }
        const wake = new AbortController();
        this.#wake = wake;
        const both = linkSignals([signal, wake.signal]).signal; // unlinked by wake.abort()
        // A release that finishes changes claims, which wakes the blocking read;
        // one that fails wakes the loop (#wake) to schedule its backoff.
        const waits: Promise<unknown>[] = [this.#store.blockUntil(['claims', 'allocations', 'nodes'], seen, { signal: both })];
        const retries = [this.#nextRetry(), this.#fenceEnds].filter((t): t is number => t !== undefined);
        const retryAt = retries.length ? Math.min(...retries) : undefined;
        if (retryAt !== undefined) waits.push(this.#clock.sleep(Math.max(1, retryAt - this.#clock.now()), both));
        await Promise.race(waits).catch(() => undefined);
        wake.abort(WAIT_ENDED);
        await Promise.allSettled(waits);
      }
    })());
  }

  /** Aborts the loop and the releases it started and waits for them. Safe twice; never rejects. */
  stop(): Promise<void> {
    return this.#life.stop();
  }
}
