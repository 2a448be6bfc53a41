// Operator routes, as Nomad's `api` package reads them: the scheduler's
// configuration (`GET`/`PUT`/`POST /v1/operator/scheduler/configuration`,
// api/operator.go) and the agent's metrics (`GET /v1/metrics`,
// api/operator_metrics.go). `PUT /v1/system/gc` answers Berth's own
// SystemGcResult (Nomad's answers nothing).

import { z } from 'zod';
import { lazySchema } from './lazy-schema.js';

/** api.PreemptionConfig: which schedulers may preempt lower-priority allocations. */
export const PreemptionConfig = lazySchema(() => z.object({
  SystemSchedulerEnabled: z.boolean(),
  SysBatchSchedulerEnabled: z.boolean(),
  BatchSchedulerEnabled: z.boolean(),
  ServiceSchedulerEnabled: z.boolean(),
}));
export type PreemptionConfig = z.infer<typeof PreemptionConfig>;

/** api.SchedulerAlgorithm. */
export const SchedulerAlgorithm = lazySchema(() => z.enum(['binpack', 'spread']));
export type SchedulerAlgorithm = z.infer<typeof SchedulerAlgorithm>;

/**
 * api.SchedulerConfiguration. Berth's scheduler applies SchedulerAlgorithm
 * (`spread` scores emptier nodes higher); the other settings are kept and
 * answered as set, with no effect (Berth does not preempt or oversubscribe
 * memory, only management tokens register jobs, and its evaluations are
 * never paused).
 */
export const SchedulerConfiguration = lazySchema(() => z.object({
  SchedulerAlgorithm: SchedulerAlgorithm,
  PreemptionConfig: PreemptionConfig,
  MemoryOversubscriptionEnabled: z.boolean(),
  RejectJobRegistration: z.boolean(),
  PauseEvalBroker: z.boolean(),
  NodeLimitForFeasibilityChecks: z.number().int(),
  CreateIndex: z.number().int(),
  ModifyIndex: z.number().int(),
}));
export type SchedulerConfiguration = z.infer<typeof SchedulerConfiguration>;

/** `GET /v1/operator/scheduler/configuration` (api.SchedulerConfigurationResponse, with Nomad's QueryMeta fields). */
export const SchedulerConfigurationResponse = lazySchema(() => z.object({
  SchedulerConfig: SchedulerConfiguration,
  Index: z.number().int(),
  /** Nanoseconds (Go's time.Duration); 0: this server's own state. */
  LastContact: z.number().int(),
  KnownLeader: z.boolean(),
  NextToken: z.string(),
}));
export type SchedulerConfigurationResponse = z.infer<typeof SchedulerConfigurationResponse>;

/** `PUT`/`POST /v1/operator/scheduler/configuration` (api.SchedulerSetConfigurationResponse): `Updated` is false when a `cas` index did not match. */
export const SchedulerSetConfigurationResponse = lazySchema(() => z.object({ Updated: z.boolean(), Index: z.number().int() }));
export type SchedulerSetConfigurationResponse = z.infer<typeof SchedulerSetConfigurationResponse>;

/** api.GaugeValue: a gauge's latest value. */
export const GaugeValue = lazySchema(() => z.object({ Name: z.string(), Value: z.number(), Labels: z.record(z.string(), z.string()) }));
export type GaugeValue = z.infer<typeof GaugeValue>;

/** api.PointValue. */
export const PointValue = lazySchema(() => z.object({ Name: z.string(), Points: z.array(z.number()) }));
export type PointValue = z.infer<typeof PointValue>;

/**
 * api.SampledValue: a counter (Count 1, Sum its total since the start) or a
 * histogram or summary (Count observations, Sum of them, Mean Sum/Count).
 * Min, Max, Rate and Stddev are 0: Prometheus' collectors keep no such figures.
 */
export const SampledValue = lazySchema(() => z.object({
  Name: z.string(),
  Count: z.number().int(),
  Rate: z.number(),
  Sum: z.number(),
  Min: z.number(),
  Max: z.number(),
  Mean: z.number(),
  Stddev: z.number(),
  Labels: z.record(z.string(), z.string()),
}));
export type SampledValue = z.infer<typeof SampledValue>;

/**
 * `GET /v1/metrics` (api.MetricsSummary): the agent's metrics, one entry per
 * series, named as in the Prometheus text `?format=prometheus` serves
 * (`berth_...`, prom-client's `process_...` and `nodejs_...`).
 * Timestamp is Go's time.String() of the moment of the scrape.
 */
export const MetricsSummary = lazySchema(() => z.object({
  Timestamp: z.string(),
  Gauges: z.array(GaugeValue),
  Points: z.array(PointValue),
  Counters: z.array(SampledValue),
  Samples: z.array(SampledValue),
}));
export type MetricsSummary = z.infer<typeof MetricsSummary>;

/**
 * Berth's answer to `PUT /v1/system/gc` (Nomad's has no body): what one
 * forced collection deleted. `Jobs` holds `namespace/id`; `Index` is the
 * write's store index (the latest index when nothing was deleted).
 */
export const SystemGcResult = lazySchema(() => z.object({
  Allocations: z.array(z.string()),
  Evaluations: z.array(z.string()),
  Jobs: z.array(z.string()),
  Index: z.number().int(),
}));
export type SystemGcResult = z.infer<typeof SystemGcResult>;

/** api.RaftServer: one server of the cluster as `nomad operator raft list-peers` lists it. */
export const RaftServer = lazySchema(() => z.strictObject({
  ID: z.string(),
  Node: z.string(),
  /** The server's `host:port`. */
  Address: z.string(),
  Leader: z.boolean(),
  Voter: z.boolean(),
  RaftProtocol: z.string(),
}));
export type RaftServer = z.infer<typeof RaftServer>;

/**
 * api.RaftConfiguration (`GET /v1/operator/raft/configuration`). Berth's
 * servers agree through etcd, not Raft: the servers are its members (every
 * live one a voter, as etcd's members are) and Index the store's latest.
 */
export const RaftConfiguration = lazySchema(() => z.strictObject({
  Servers: z.array(RaftServer),
  Index: z.number().int(),
}));
export type RaftConfiguration = z.infer<typeof RaftConfiguration>;

/**
 * api.AutopilotConfiguration (`GET /v1/operator/autopilot/configuration`),
 * durations as Go's `time.Duration.String()` ("200ms", "10s"). Berth's
 * servers run no autopilot (etcd keeps its own membership): the answer is
 * Nomad's defaults, and a PUT is refused.
 */
export const AutopilotConfiguration = lazySchema(() => z.strictObject({
  CleanupDeadServers: z.boolean(),
  LastContactThreshold: z.string(),
  MaxTrailingLogs: z.number().int(),
  MinQuorum: z.number().int(),
  ServerStabilizationTime: z.string(),
  EnableRedundancyZones: z.boolean(),
  DisableUpgradeMigration: z.boolean(),
  EnableCustomUpgrades: z.boolean(),
  CreateIndex: z.number().int(),
  ModifyIndex: z.number().int(),
}));
export type AutopilotConfiguration = z.infer<typeof AutopilotConfiguration>;
