// The allocation page's calls to the public API (Nomad's paths and shapes):
// the resource usage of its tasks, its service checks' latest results, and
// the operator's actions on it (stop, restart, signal).

import type { AllocCheckStatuses, AllocResourceUsage, AllocStopResponse, GenericResponse } from '../../src/api/index.js';
import { getJson, sendJson } from './api';

export type AllocStats = AllocResourceUsage;
export type CheckStatuses = AllocCheckStatuses;

const enc = encodeURIComponent;

/** The signals the page offers (Nomad's UI offers a free field; these are what a task handles). */
export const SIGNALS = ['SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', 'SIGTERM', 'SIGKILL'] as const;

export const allocApi = {
  /** The running tasks' usage, from their cgroups (served by the agent that runs the allocation). */
  stats: (id: string, signal?: AbortSignal) => getJson<AllocStats>(`/v1/client/allocation/${enc(id)}/stats`, signal),
  /** The latest result of each of the allocation's service checks, by check ID (Nomad 1.4's checks route). */
  checks: (id: string) => getJson<CheckStatuses>(`/v1/client/allocation/${enc(id)}/checks`),
};

export const allocActions = {
  /** Stops the allocation (the scheduler places a replacement for a service job). */
  stop: (id: string) => sendJson<AllocStopResponse>('PUT', `/v1/allocation/${enc(id)}/stop`),
  /** Restarts one task, or every running task when `task` is undefined. */
  restart: (id: string, task: string | undefined) =>
    sendJson<GenericResponse>('PUT', `/v1/client/allocation/${enc(id)}/restart`, task ? { TaskName: task } : { AllTasks: true }),
  /** Sends `signal` to one task, or to every running task when `task` is undefined. */
  signal: (id: string, signal: string, task: string | undefined) =>
    sendJson<GenericResponse>('PUT', `/v1/client/allocation/${enc(id)}/signal`, task ? { Signal: signal, Task: task } : { Signal: signal }),
};
