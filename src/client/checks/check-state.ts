// What a check reports, from its raw results: Nomad's success_before_passing
// and failures_before_critical thresholds, and check_restart's count of
// consecutive unhealthy results past its grace. Pure: a value in, a value out.

import type { CheckSpec, CheckStatus } from '../../structs/index.js';
import type { ProbeResult } from './_probe.js';

export interface CheckState {
  status: CheckStatus;
  output: string;
  at: number;
  /** Consecutive raw passes / failures (warning or critical). */
  successes: number;
  failures: number;
  /** Consecutive unhealthy results counted by check_restart (only past the grace). */
  unhealthy: number;
  /** Until when check_restart ignores results (ms since the epoch). */
  graceUntil: number;
}

/** The state of a check before its first run, registered at `now`. */
export function initialCheckState(check: Pick<CheckSpec, 'initialStatus' | 'checkRestart'>, now: number): CheckState {
  return { status: check.initialStatus ?? 'pending', output: '', at: now, successes: 0, failures: 0, unhealthy: 0, graceUntil: now + (check.checkRestart?.graceMs ?? 0) };
}

/**
 * The next state after a raw result at `now`, and whether check_restart asks
 * for the task to restart (the counter then starts again with a new grace).
 */
export function nextCheckState(
  state: CheckState,
  check: Pick<CheckSpec, 'successBeforePassing' | 'failuresBeforeCritical' | 'checkRestart'>,
  result: ProbeResult,
  now: number,
): { state: CheckState; restart: boolean } {
  const pass = result.status === 'passing';
  const successes = pass ? state.successes + 1 : 0;
  const failures = pass ? 0 : state.failures + 1;
  let status: CheckStatus = state.status;
  if (pass) {
    if (state.status === 'passing' || successes >= Math.max(1, check.successBeforePassing)) status = 'passing';
  } else if (result.status === 'warning') {
    status = state.status === 'passing' && failures < check.failuresBeforeCritical ? 'passing' : 'warning';
  } else {
    status = state.status === 'passing' && failures < check.failuresBeforeCritical ? 'passing' : 'critical';
  }
  const cr = check.checkRestart;
  let unhealthy = state.unhealthy;
  let graceUntil = state.graceUntil;
  let restart = false;
  if (cr && cr.limit > 0 && now >= state.graceUntil) {
    const bad = result.status === 'critical' || (result.status === 'warning' && !cr.ignoreWarnings);
    unhealthy = bad ? unhealthy + 1 : 0;
    if (unhealthy >= cr.limit) {
      restart = true;
      unhealthy = 0;
      graceUntil = now + cr.graceMs;
    }
  }
  return { state: { status, output: result.output, at: now, successes, failures, unhealthy, graceUntil }, restart };
}
