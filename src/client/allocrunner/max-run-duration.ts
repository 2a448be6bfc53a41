// Nomad's group `max_run_duration` (batch jobs): an allocation that has run
// this long since it was created is stopped, its poststop tasks that have not
// started are skipped, and it completes with "allocation exceeded
// max_run_duration". The deadline hangs on the allocation's create time, so
// an agent restart or a task's restarts do not move it.

import type { Clock } from '../../lib/index.js';
import { durationMs, type Allocation, type TaskGroup } from '../../structs/index.js';

/** The allocation's description once its max_run_duration stopped it (Nomad's AllocTimeoutReasonMaxRunDuration). */
export const MAX_RUN_EXCEEDED = 'allocation exceeded max_run_duration';

/** When the allocation must stop (ms since the epoch), or undefined when its group sets no max_run_duration. Pure. */
export function maxRunDeadline(alloc: Pick<Allocation, 'createTime'>, group: Pick<TaskGroup, 'maxRunDuration'>): number | undefined {
  return group.maxRunDuration ? alloc.createTime + durationMs(group.maxRunDuration) : undefined;
}

/** Calls `onTimeout` at `deadline` on `clock` (at once when it has passed), unless `signal` fired first. */
export function armMaxRunDuration(deadline: number | undefined, clock: Clock, signal: AbortSignal, onTimeout: () => void): void {
  if (deadline === undefined || signal.aborted) return;
  void clock.sleep(Math.max(0, deadline - clock.now()), signal).then(
    () => {
      if (!signal.aborted) onTimeout();
    },
    () => undefined,
  );
}
