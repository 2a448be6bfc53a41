// The scheduler's configuration as the server stores it (one row of the
// `schedulerConfig` table), set with Nomad's
// `PUT /v1/operator/scheduler/configuration`.

/** The one row's ID. */
export const SCHEDULER_CONFIG_ID = 'config';

export type SchedulerAlgorithmName = 'binpack' | 'spread';

export interface SchedulerConfig {
  id: typeof SCHEDULER_CONFIG_ID;
  /** `binpack` fills nodes before it uses emptier ones; `spread` prefers the emptiest node. */
  algorithm: SchedulerAlgorithmName;
  /** Kept as set; Berth does not preempt allocations. */
  preemption: { system: boolean; sysbatch: boolean; batch: boolean; service: boolean };
  /** Kept as set; Berth does not oversubscribe memory. */
  memoryOversubscription: boolean;
  /** Kept as set; only management tokens register jobs in Berth anyway. */
  rejectJobRegistration: boolean;
  /** Kept as set; Berth's evaluations are never paused. */
  pauseEvalBroker: boolean;
  /** Kept as set (Nomad's default 100); Berth scores a bounded sample of nodes of its own. */
  nodeLimitForFeasibilityChecks: number;
  createIndex: number;
  modifyIndex: number;
}

/** What a server that never stored a configuration uses (Nomad's defaults), indexes 0. */
export const DEFAULT_SCHEDULER_CONFIG: Readonly<SchedulerConfig> = Object.freeze({
  id: SCHEDULER_CONFIG_ID,
  algorithm: 'binpack',
  preemption: Object.freeze({ system: true, sysbatch: false, batch: false, service: false }),
  memoryOversubscription: false,
  rejectJobRegistration: false,
  pauseEvalBroker: false,
  nodeLimitForFeasibilityChecks: 100,
  createIndex: 0,
  modifyIndex: 0,
});
