// The restart policy of a task group (Nomad's restart block): how many
// restarts are allowed within an interval, the delay between them, and what
// happens past the limit: `fail` the task, or `delay` until the interval ends.

import { durationMs, type JobType, type RestartPolicy } from '../../structs/index.js';
import type { Clock } from '../../lib/index.js';

/** What to do after a task exited. */
export type RestartDecision =
  | { kind: 'restart'; delayMs: number; reason: string }
  | { kind: 'fail'; reason: string }
  | { kind: 'complete'; reason: string };

/** The tracker's memory, persisted with the task so a restart keeps its count. */
export interface RestartTrackerState {
  /** Restarts counted in the current interval. */
  count: number;
  /** clock.now() when the current interval began; undefined before the first restart. */
  windowStart: number | undefined;
}

/** How the task ended, as the tracker weighs it. */
export interface TaskOutcome {
  exitCode: number;
  /** Set when a signal ended it. */
  signal?: string | number | null | undefined;
  /** The driver could not start it at all. */
  startError?: boolean;
}

/**
 * Decides, from the policy and the clock, whether an exited task restarts.
 * Pure apart from its counter; `state` round-trips through the client state.
 */
export class RestartTracker {
  readonly #attempts: number;
  readonly #intervalMs: number;
  readonly #delayMs: number;
  readonly #mode: 'fail' | 'delay';
  readonly #jobType: JobType;
  readonly #clock: Clock;
  readonly #ephemeral: boolean;
  #state: RestartTrackerState;

  /** Throws BerthError INVALID for a malformed duration in the policy. */
  /** `ephemeral`: a lifecycle task that runs to completion (not a sidecar): a clean exit completes it in any job type. */
  constructor(policy: RestartPolicy, jobType: JobType, clock: Clock, state?: RestartTrackerState, opts: { ephemeral?: boolean } = {}) {
    this.#ephemeral = opts.ephemeral === true;
    this.#attempts = policy.attempts;
    this.#intervalMs = durationMs(policy.interval);
    this.#delayMs = durationMs(policy.delay);
    this.#mode = policy.mode;
    this.#jobType = jobType;
    this.#clock = clock;
    this.#state = state ? { ...state } : { count: 0, windowStart: undefined };
  }

  /** A tracker with `policy` that keeps this one's job type, clock, count and interval. Pure. */
  withPolicy(policy: RestartPolicy): RestartTracker {
    return new RestartTracker(policy, this.#jobType, this.#clock, this.#state, { ephemeral: this.#ephemeral });
  }

  get state(): RestartTrackerState {
    return { ...this.#state };
  }

  /**
   * The decision for a task that just ended with `outcome`, counting it as
   * a restart when it restarts. A batch task that exited 0 is complete; a
   * service task restarts even after a clean exit (it should not end).
   */
  next(outcome: TaskOutcome): RestartDecision {
    const clean = !outcome.startError && outcome.exitCode === 0 && !outcome.signal;
    if (clean && (this.#jobType === 'batch' || this.#ephemeral)) return { kind: 'complete', reason: 'the task exited successfully' };
    const now = this.#clock.now();
    if (this.#state.windowStart === undefined || now - this.#state.windowStart >= this.#intervalMs) {
      this.#state = { count: 0, windowStart: now };
    }
    this.#state.count += 1;
    if (this.#state.count <= this.#attempts) {
      return { kind: 'restart', delayMs: this.#delayMs, reason: `restart ${this.#state.count} of ${this.#attempts} allowed within ${formatMs(this.#intervalMs)}` };
    }
    const exceeded = `exceeded the ${this.#attempts} restart${this.#attempts === 1 ? '' : 's'} allowed within ${formatMs(this.#intervalMs)}`;
    if (this.#mode === 'fail') return { kind: 'fail', reason: exceeded };
    const windowStart = this.#state.windowStart ?? now;
    const wait = Math.max(this.#delayMs, windowStart + this.#intervalMs - now);
    // The next failure after this delayed restart starts a new interval.
    this.#state = { count: 0, windowStart: undefined };
    return { kind: 'restart', delayMs: wait, reason: `${exceeded}; delaying the restart until the interval ends` };
  }
}

function formatMs(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
