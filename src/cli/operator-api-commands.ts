// `berth operator scheduler get-config|set-config` and `berth operator
// metrics`: Nomad's operator commands over the API
// (`/v1/operator/scheduler/configuration`, `/v1/metrics`).

import { Command } from 'commander';
import type { MetricsSummary, SchedulerConfiguration, SchedulerConfigurationResponse, SchedulerSetConfigurationResponse } from '../api/index.js';
import { ApiClientError } from './api-client.js';
import { apiAction, apiCommand, type ApiSession } from './api-command.js';
import type { CommandContext } from './command-context.js';
import { UsageError } from './usage-error.js';

const PATH = '/v1/operator/scheduler/configuration';

function parseBool(flag: string): (value: string) => boolean {
  return (value) => {
    if (value === 'true') return true;
    if (value === 'false') return false;
    throw new UsageError(`--${flag} takes true or false, got "${value}"`);
  };
}

/** The set-config flags: flag name -> how it changes the configuration. */
const BOOL_FLAGS: ReadonlyArray<readonly [flag: string, key: string, describe: string, apply: (c: SchedulerConfiguration, v: boolean) => void]> = [
  ['memory-oversubscription', 'memoryOversubscription', 'allow tasks to use more memory than they reserve (kept; no effect in Berth)', (c, v) => (c.MemoryOversubscriptionEnabled = v)],
  ['reject-job-registration', 'rejectJobRegistration', 'refuse job registrations but from management tokens (kept; only management tokens register jobs in Berth)', (c, v) => (c.RejectJobRegistration = v)],
  ['pause-eval-broker', 'pauseEvalBroker', 'pause the evaluation broker (kept; no effect in Berth)', (c, v) => (c.PauseEvalBroker = v)],
  ['preempt-batch-scheduler', 'preemptBatchScheduler', 'preemption by batch jobs (kept; Berth does not preempt)', (c, v) => (c.PreemptionConfig.BatchSchedulerEnabled = v)],
  ['preempt-service-scheduler', 'preemptServiceScheduler', 'preemption by service jobs (kept; Berth does not preempt)', (c, v) => (c.PreemptionConfig.ServiceSchedulerEnabled = v)],
  ['preempt-sysbatch-scheduler', 'preemptSysbatchScheduler', 'preemption by sysbatch jobs (kept; Berth does not preempt)', (c, v) => (c.PreemptionConfig.SysBatchSchedulerEnabled = v)],
  ['preempt-system-scheduler', 'preemptSystemScheduler', 'preemption by system jobs (kept; Berth does not preempt)', (c, v) => (c.PreemptionConfig.SystemSchedulerEnabled = v)],
];

/** Adds `scheduler` and `metrics` to `berth operator`. */
export function addOperatorApiCommands(operator: Command, ctx: CommandContext): void {
  const scheduler = new Command('scheduler').description("Read and change the scheduler's configuration");
  apiCommand(scheduler.command('get-config').description("Show the scheduler's configuration"), ['operator scheduler get-config', 'operator scheduler get-config --json']).action(
    apiAction(ctx, getConfig),
  );
  const set = scheduler
    .command('set-config')
    .description("Change the scheduler's configuration: only the settings given change (management token)")
    .option('--scheduler-algorithm <binpack|spread>', 'binpack fills nodes before it uses emptier ones; spread prefers the emptiest node')
    .option('--check-index <index>', "change only if the configuration's modify index is still this one (check-and-set)");
  for (const [flag, , describe] of BOOL_FLAGS) set.option(`--${flag} <true|false>`, describe, parseBool(flag));
  apiCommand(set, ['operator scheduler set-config --scheduler-algorithm spread', 'operator scheduler set-config --scheduler-algorithm binpack --check-index 42']).action(
    apiAction(ctx, setConfig),
  );
  operator.addCommand(scheduler);
  apiCommand(
    operator
      .command('metrics')
      .description("Print the agent's metrics: Nomad's JSON summary, or the Prometheus text with --format prometheus")
      .option('--format <json|prometheus>', 'json (default) or prometheus'),
    ['operator metrics', 'operator metrics --format prometheus'],
  ).action(apiAction(ctx, metrics));
}

async function getConfig(s: ApiSession): Promise<void> {
  const { body } = await s.api.get<SchedulerConfigurationResponse>(PATH);
  if (s.out.json) return s.out.document(body);
  const c = body.SchedulerConfig;
  s.out.fields([
    ['Scheduler Algorithm', c.SchedulerAlgorithm],
    ['Memory Oversubscription', String(c.MemoryOversubscriptionEnabled)],
    ['Reject Job Registration', String(c.RejectJobRegistration)],
    ['Pause Eval Broker', String(c.PauseEvalBroker)],
    ['Preemption System Scheduler', String(c.PreemptionConfig.SystemSchedulerEnabled)],
    ['Preemption Service Scheduler', String(c.PreemptionConfig.ServiceSchedulerEnabled)],
    ['Preemption Batch Scheduler', String(c.PreemptionConfig.BatchSchedulerEnabled)],
    ['Preemption SysBatch Scheduler', String(c.PreemptionConfig.SysBatchSchedulerEnabled)],
    ['Modify Index', c.ModifyIndex],
  ]);
}

async function setConfig(s: ApiSession, _args: string[], opts: Record<string, unknown>): Promise<void> {
  const algorithm = opts['schedulerAlgorithm'] as string | undefined;
  if (algorithm !== undefined && algorithm !== 'binpack' && algorithm !== 'spread') throw new UsageError(`--scheduler-algorithm takes binpack or spread, got "${algorithm}"`);
  const checkIndex = opts['checkIndex'] as string | undefined;
  if (checkIndex !== undefined && !/^\d+$/.test(checkIndex)) throw new UsageError('--check-index must be a non-negative integer');
  const { body: current } = await s.api.get<SchedulerConfigurationResponse>(PATH);
  const next: SchedulerConfiguration = { ...current.SchedulerConfig, PreemptionConfig: { ...current.SchedulerConfig.PreemptionConfig } };
  if (algorithm) next.SchedulerAlgorithm = algorithm;
  for (const [, key, , apply] of BOOL_FLAGS) {
    const v = opts[key];
    if (typeof v === 'boolean') apply(next, v);
  }
  const { body } = await s.api.request<SchedulerSetConfigurationResponse>('PUT', PATH, { body: next, ...(checkIndex !== undefined ? { query: { cas: checkIndex } } : {}) });
  if (s.out.json) return s.out.document(body);
  if (body.Updated) s.out.line('Scheduler configuration updated!');
  else throw new ApiClientError('CLI_CAS_MISMATCH', `the scheduler configuration changed since index ${checkIndex}: nothing was updated; read it again and retry`, 409);
}

async function metrics(s: ApiSession, _args: string[], opts: Record<string, unknown>): Promise<void> {
  const format = (opts['format'] as string | undefined) ?? 'json';
  if (format !== 'json' && format !== 'prometheus') throw new UsageError(`--format takes json or prometheus, got "${format}"`);
  if (format === 'json') {
    const { body } = await s.api.get<MetricsSummary>('/v1/metrics');
    return s.out.document(body);
  }
  const res = await s.api.stream('/v1/metrics', { format: 'prometheus' });
  s.out.line((await res.text()).trimEnd());
}
