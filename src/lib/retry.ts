import { systemClock, type Clock } from './clock.js';
import { AbortedError, throwIfAborted } from './errors.js';

/** How long to wait between attempts and when to give up. */
export interface BackoffPolicy {
  /** Attempts in all, the first included. `Infinity` retries until aborted. */
  maxAttempts: number;
  /** Delay before the second attempt. */
  initialDelayMs: number;
  /** Ceiling for any single delay. */
  maxDelayMs: number;
  /** Each delay is the previous one times this. */
  multiplier: number;
  /**
   * Fraction of each delay that is random, 0..1. With 0.2 a 1 s delay lands
   * anywhere in 0.8..1 s, so that many callers backing off together spread out.
   */
  jitter: number;
}

export const defaultBackoff: BackoffPolicy = {
  maxAttempts: 5,
  initialDelayMs: 200,
  maxDelayMs: 10_000,
  multiplier: 2,
  jitter: 0.2,
};

/**
 * The backoff policies Berth's components use, named once so the numbers
 * are compared and changed in one place. Components take `Partial<BackoffPolicy>`
 * or a whole policy in their options to override them (tests shorten them).
 */
export const BACKOFF = {
  /**
   * Reconnecting to the server, re-registering, re-watching allocations and
   * re-sending node status: forever, 200 ms doubling to 10 s.
   */
  reconnect: { maxAttempts: Infinity, initialDelayMs: 200, maxDelayMs: 10_000, multiplier: 2, jitter: 0.2 },
  /** Re-dialling a CSI plugin's socket and re-probing it: forever, 250 ms doubling to 10 s. */
  pluginDial: { maxAttempts: Infinity, initialDelayMs: 250, maxDelayMs: 10_000, multiplier: 2, jitter: 0.2 },
  /** One stage/publish/unpublish/unstage step on a node plugin: 5 attempts, 500 ms doubling to 15 s. */
  csiStep: { maxAttempts: 5, initialDelayMs: 500, maxDelayMs: 15_000, multiplier: 2, jitter: 0.2 },
  /** The server's release of one claim (detach, unpublish): forever, 1 s doubling to 2 min. */
  claimRelease: { maxAttempts: Infinity, initialDelayMs: 1000, maxDelayMs: 120_000, multiplier: 2, jitter: 0.2 },
} as const satisfies Record<string, BackoffPolicy>;

/**
 * The delay before attempt `attempt + 1`, after `attempt` failed attempts
 * (attempt >= 1). Pure given `random`.
 */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.multiplier ** Math.max(0, attempt - 1));
  const jitter = Math.min(1, Math.max(0, policy.jitter));
  return Math.round(base * (1 - jitter * random()));
}

export interface RetryOptions {
  policy?: BackoffPolicy;
  /** Whether the error of a failed attempt may be retried. Default: never. */
  shouldRetry?: (err: unknown, attempt: number) => boolean;
  /** Stops waiting and retrying; the current attempt sees it too. */
  signal?: AbortSignal;
  clock?: Clock;
  /** Source of randomness for jitter, injectable for tests. */
  random?: () => number;
  /** Called before each wait, with the error that caused it. */
  onRetry?: (info: { err: unknown; attempt: number; delayMs: number }) => void;
}

/**
 * Runs `fn` until it resolves, its error is not retryable, the attempts run
 * out or `signal` fires. Rejects with the last attempt's error, or with
 * AbortedError when aborted while waiting. `fn` gets the 1-based attempt
 * number. Safe to call concurrently; holds no state between calls.
 */
export async function retry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const policy = opts.policy ?? defaultBackoff;
  const clock = opts.clock ?? systemClock;
  const shouldRetry = opts.shouldRetry ?? (() => false);
  for (let attempt = 1; ; attempt++) {
    throwIfAborted(opts.signal);
    try {
      return await fn(attempt);
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      if (attempt >= policy.maxAttempts || !shouldRetry(err, attempt)) throw err;
      const delayMs = backoffDelay(policy, attempt, opts.random);
      opts.onRetry?.({ err, attempt, delayMs });
      try {
        await clock.sleep(delayMs, opts.signal);
      } catch (sleepErr) {
        if (sleepErr instanceof AbortedError) throw new AbortedError(sleepErr.message, { cause: err });
        throw sleepErr;
      }
    }
  }
}
