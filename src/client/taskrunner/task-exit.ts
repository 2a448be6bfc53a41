// How a run of a task ends and what follows (Nomad's taskrunner after
// WaitTask, with its restart tracker's verdict applied): the max_run_duration
// watch that ends a run that went on too long; what an exit means (killed,
// past max_run_duration, fenced, OOM killed, exited), as task events; and
// whether the task starts again: at once after an operator's restart, after
// the restart policy's delay, or never. TaskRunner's run loop
// (task-runner.ts) calls it for each run; the loop, the start (task-start.ts)
// and the kill path stay apart.

import { AbortedError, type Clock } from '../../lib/index.js';
import { durationMs, type Task } from '../../structs/index.js';
import type { RunnerExitResult } from './driver-port.js';
import type { RestartTracker } from './restart-tracker.js';
import { describeExit, TASK_EVENTS } from './task-events.js';
import type { TaskRunnerRecord } from './task-runner-options.js';

/** What an exit's handling needs of its TaskRunner (read when used: kill() and job updates change them meanwhile). */
export interface TaskExitPort {
  readonly task: Task;
  readonly record: TaskRunnerRecord;
  readonly clock: Clock;
  /** The restart tracker now (a job update replaces it with one of the new policy). */
  readonly tracker: RestartTracker;
  readonly killing: boolean;
  /** Why kill() was called. */
  readonly killReason: string;
  /** Aborted by kill(). */
  readonly killSignal: AbortSignal;
  /** Aborted by detach(). */
  readonly detachSignal: AbortSignal;
  /** The reason of the restart() that stopped this run, cleared as it is taken; undefined when none was asked. */
  takeRestartReason(): string | undefined;
  event(type: string, message: string, details?: Record<string, string>): void;
  persist(): void;
  stopProcess(): Promise<void>;
}

/** With a max_run_duration: kills this run once it ran that long (from its start, across agent restarts); the flag says whether it did. */
export function watchRunDuration(p: TaskExitPort, signal: AbortSignal): { value: boolean } | undefined {
  const max = p.task.maxRunDuration;
  if (!max) return undefined;
  const flag = { value: false };
  const ranMs = p.clock.now() - (p.record.state.startedAt ?? p.clock.now());
  void p.clock.sleep(Math.max(0, durationMs(max) - ranMs), signal).then(
    async () => {
      if (signal.aborted || p.killing) return;
      flag.value = true;
      p.event(TASK_EVENTS.maxRunDurationExceeded, `The task ran for its max_run_duration of ${max}; stopping it`, { maxRunDuration: max });
      await p.stopProcess();
    },
    () => undefined,
  );
  return flag;
}

/**
 * Records what the run's `exit` means (as task events) and resolves whether
 * the task starts again (after the restart policy's delay, if any). `overran`
 * is watchRunDuration's flag. Throws what the clock's sleep throws other than
 * AbortedError.
 */
export async function afterExit(p: TaskExitPort, exit: RunnerExitResult, overran: { value: boolean } | undefined): Promise<boolean> {
  const details: Record<string, string> = { exitCode: String(exit.exitCode) };
  if (exit.signal) details['signal'] = String(exit.signal);
  if (p.killing) {
    p.event(TASK_EVENTS.killed, `Task killed: ${p.killReason} (${describeExit(exit)})`, details);
    return false;
  }
  if (overran?.value) {
    p.record.state.failed = true;
    p.event(TASK_EVENTS.notRestarting, `Not restarting: the task ran past its max_run_duration of ${p.task.maxRunDuration}`, details);
    return false;
  }
  if (exit.fenced) {
    // Not restarted: the servers may have handed its volume to a replacement meanwhile.
    p.record.state.failed = true;
    p.event(
      TASK_EVENTS.fenced,
      `Task stopped on the node: ${exit.message ?? 'its lease ran out'}. Not restarted here (the servers may have handed its volume on); ` +
        'the servers place a replacement as soon as they hear from this node again',
      details,
    );
    return false;
  }
  if (exit.oomKilled) {
    const limit = p.task.resources.memoryMaxMb ?? p.task.resources.memoryMb;
    p.event(TASK_EVENTS.oomKilled, `OOM Killed: the task went past its memory limit of ${limit} MB`, { memoryLimitMb: String(limit) });
  }
  p.event(TASK_EVENTS.terminated, `Task exited: ${describeExit(exit)}`, details);
  const reason = p.takeRestartReason();
  if (reason !== undefined) {
    p.record.state.restarts += 1;
    p.record.state.state = 'pending';
    p.event(TASK_EVENTS.restarting, `Task restarting: ${reason}`);
    return true;
  }
  const decision = p.tracker.next({ exitCode: exit.exitCode, signal: exit.signal });
  return applyRestartDecision(p, decision);
}

/** Applies a restart decision; returns whether to start again. */
export async function applyRestartDecision(p: TaskExitPort, decision: ReturnType<RestartTracker['next']>): Promise<boolean> {
  p.record.restart = p.tracker.state;
  if (decision.kind === 'complete') {
    p.persist();
    return false;
  }
  if (decision.kind === 'fail') {
    p.record.state.failed = true;
    p.event(TASK_EVENTS.notRestarting, `Not restarting: ${decision.reason}`);
    return false;
  }
  p.record.state.restarts += 1;
  p.record.state.state = 'pending';
  p.event(TASK_EVENTS.restarting, `Task restarting in ${decision.delayMs} ms: ${decision.reason}`, { delayMs: String(decision.delayMs) });
  try {
    await p.clock.sleep(decision.delayMs, AbortSignal.any([p.killSignal, p.detachSignal]));
  } catch (err) {
    if (err instanceof AbortedError) return false;
    throw err;
  }
  return !p.killing;
}
