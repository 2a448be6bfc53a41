// The task event trail: what happened to a task, in words a user reads in
// `alloc status` (Nomad's TaskEvent types).

import type { TaskState } from '../../structs/index.js';

/** Event types a task runner records. */
export const TASK_EVENTS = {
  received: 'Received',
  settingUp: 'Setting Up',
  started: 'Started',
  terminated: 'Terminated',
  restarting: 'Restarting',
  notRestarting: 'Not Restarting',
  restartSignaled: 'Restart Signaled',
  signaling: 'Signaling',
  /** A template was rendered again (its source changed). */
  templateRendered: 'Template Rendered',
  artifactsFetched: 'Downloading Artifacts',
  killing: 'Killing',
  killed: 'Killed',
  oomKilled: 'OOM Killed',
  driverFailure: 'Driver Failure',
  setupFailure: 'Setup Failure',
  taskLost: 'Task Lost',
  reattached: 'Reattached',
  pluginRegistered: 'Plugin Registered',
  pluginDeregistered: 'Plugin Deregistered',
  pluginHealthy: 'Plugin Healthy',
  pluginUnhealthy: 'Plugin Unhealthy',
  volumeMounted: 'Volume Mounted',
  volumeUnmounted: 'Volume Unmounted',
  volumeWaiting: 'Volume Waiting',
  /** The volume's plugin reports it abnormal (VOLUME_CONDITION). */
  volumeAbnormal: 'Volume Abnormal',
  volumeNormal: 'Volume Normal',
  resourcesUpdated: 'Resources Updated',
  /** Stopped on the node because no server was reached for stop_after_server_disconnect. */
  fenced: 'Fenced',
  /** A run lasted past the task's max_run_duration and was killed. */
  maxRunDurationExceeded: 'Max Run Duration Exceeded',
  /** The task's stop waits for its shutdown_delay before the kill signal. */
  waitingShutdownDelay: 'Waiting for shutdown delay',
  /** A `${...}` in the task's spec named nothing known and was left as written. */
  interpolationUnresolved: 'Interpolation Unresolved',
  /** The group's leader task is dead for good: this task is stopped (Nomad's TaskLeaderDead). */
  leaderDead: 'Leader Task Dead',
  /** A lifecycle task waits for its turn (main tasks wait for prestart tasks; poststop tasks for the main tasks). */
  lifecycleWaiting: 'Lifecycle Waiting',
} as const;

export type TaskEventType = (typeof TASK_EVENTS)[keyof typeof TASK_EVENTS];

/** Events kept per task; older ones are dropped (the first, Received, stays). */
export const MAX_TASK_EVENTS = 50;

/** A fresh task state: pending, with a Received event. */
export function newTaskState(at: number): TaskState {
  return {
    state: 'pending',
    failed: false,
    restarts: 0,
    startedAt: 0,
    finishedAt: 0,
    events: [{ at, type: TASK_EVENTS.received, message: 'Task received by the client', details: {} }],
  };
}

/** Appends an event, keeping the trail bounded. Details must never carry a secret. */
export function appendEvent(state: TaskState, at: number, type: string, message: string, details: Record<string, string> = {}): void {
  state.events.push({ at, type, message, details });
  if (state.events.length > MAX_TASK_EVENTS) state.events.splice(1, state.events.length - MAX_TASK_EVENTS);
}

/** A readable description of how a task ended. */
export function describeExit(exit: { exitCode: number; signal?: string | number | null | undefined; oomKilled?: boolean | undefined; message?: string | undefined }): string {
  const parts: string[] = [];
  if (exit.signal) parts.push(`killed by signal ${String(exit.signal)}`);
  else parts.push(`exit code ${exit.exitCode}`);
  if (exit.oomKilled) parts.push('out of memory');
  if (exit.message) parts.push(exit.message);
  return parts.join(', ');
}
