// The client's side of service discovery: when an allocation's status
// changes, which of its services count now (alloc-services), its checks
// scheduled on the node's check runner, and the report to the server carrying
// both. A check's change re-sends the allocation's last status with the new
// results; check_restart restarts the task through its runner.

import { describeError, type Clock, type Logger } from '../lib/index.js';
import { isClientTerminal, type Allocation, type Job, type ServiceReport } from '../structs/index.js';
import type { AllocStatusUpdate } from './allocrunner/index.js';
import { allocServices, CheckRunner } from './checks/index.js';
import type { AllocStatusReport } from './serverconn/index.js';
import { TaskEnv } from './taskenv/index.js';

export interface ServiceChecksOptions {
  clock: Clock;
  logger: Logger;
  nodeAddress(): string;
  /** The allocation and job the node runs, by allocation ID. */
  lookup(allocId: string): { alloc: Allocation; job: Job; restartTask?: (task: string, reason: string) => Promise<void> } | undefined;
  report(update: AllocStatusReport): void;
  /** Node values for `${node.*}`/`${attr.*}` in service names. */
  nodeAttrs(): Record<string, string>;
}

/** Lifecycle: start()/stop() run the check runner (stop safe twice). */
export class ServiceChecks {
  readonly #o: ServiceChecksOptions;
  readonly #runner: CheckRunner;
  readonly #log: Logger;
  readonly #last = new Map<string, { status: AllocStatusUpdate; services: ServiceReport[] | undefined }>();

  constructor(opts: ServiceChecksOptions) {
    this.#o = opts;
    this.#log = opts.logger.child({ component: 'service-checks' });
    this.#runner = new CheckRunner({
      clock: opts.clock,
      logger: opts.logger,
      onChange: (allocId, checks) => {
        const last = this.#last.get(allocId);
        if (last) this.#o.report({ ...toReport(last.status), checks, ...(last.services ? { services: last.services } : {}) });
      },
      onRestart: (allocId, task, reason) => {
        const restart = this.#o.lookup(allocId)?.restartTask;
        void restart?.(task, reason).catch((err: unknown) => this.#log.warn({ allocId, task, err: describeError(err) }, 'check_restart could not restart the task'));
      },
    });
  }

  get runner(): CheckRunner {
    return this.#runner;
  }

  start(): Promise<void> {
    return this.#runner.start();
  }

  stop(): Promise<void> {
    return this.#runner.stop();
  }

  /** The report for a status change: with the allocation's services and check results while it runs. Never throws. */
  statusChanged(u: AllocStatusUpdate): AllocStatusReport {
    const base = toReport(u);
    const found = this.#o.lookup(u.allocId);
    if (!found || isClientTerminal(u.clientStatus) || found.alloc.desiredStatus !== 'run') {
      this.#runner.remove(u.allocId);
      this.#last.delete(u.allocId);
      return base;
    }
    const running = new Set(Object.entries(u.taskStates).filter(([, s]) => s.state === 'running').map(([name]) => name));
    const nodeAttrs = this.#o.nodeAttrs();
    let resolved;
    try {
      resolved = allocServices({
        // The allocation's own network (bridge/CNI address) comes with its status, not with the server's copy.
        alloc: u.network ? { ...found.alloc, network: u.network } : found.alloc,
        job: found.job,
        nodeAddress: this.#o.nodeAddress(),
        runningTasks: running,
        interpolate: (text, task) => serviceEnv(found.alloc, found.job, task, nodeAttrs).interpolate(text),
      });
    } catch (err) {
      this.#log.warn({ allocId: u.allocId, err: describeError(err) }, 'resolving services failed');
      return base;
    }
    for (const p of resolved.problems) this.#log.warn({ allocId: u.allocId, problem: p }, 'a service cannot be registered');
    this.#last.set(u.allocId, { status: u, services: resolved.reports });
    this.#runner.set(u.allocId, resolved.checks);
    return { ...base, services: resolved.reports, checks: this.#runner.results(u.allocId) };
  }
}

function toReport(u: AllocStatusUpdate): AllocStatusReport {
  return { id: u.allocId, clientStatus: u.clientStatus, clientDescription: u.clientDescription, taskStates: u.taskStates };
}

/** The variables a service name may use (Nomad interpolates them with the task's environment). */
function serviceEnv(alloc: Allocation, job: Job, task: string | undefined, nodeAttrs: Record<string, string>): TaskEnv {
  const env: Record<string, string> = {
    NOMAD_JOB_ID: job.id,
    NOMAD_JOB_NAME: job.name ?? job.id,
    NOMAD_NAMESPACE: job.namespace,
    NOMAD_GROUP_NAME: alloc.taskGroup,
    NOMAD_ALLOC_ID: alloc.id,
    NOMAD_ALLOC_NAME: alloc.name ?? '',
    NOMAD_ALLOC_INDEX: String(alloc.index ?? 0),
    NOMAD_REGION: job.region,
    JOB: job.name ?? job.id,
    TASKGROUP: alloc.taskGroup,
    BASE: `${job.name ?? job.id}-${alloc.taskGroup}${task ? `-${task}` : ''}`,
    ...(task ? { NOMAD_TASK_NAME: task, TASK: task } : {}),
  };
  for (const [k, v] of Object.entries({ ...job.meta, ...job.groups.find((g) => g.name === alloc.taskGroup)?.meta })) env[`NOMAD_META_${k}`] = v;
  const ports = (alloc as { ports?: Array<{ label: string; value: number; to: number }> }).ports ?? [];
  for (const p of ports) {
    env[`NOMAD_PORT_${p.label}`] = String(p.to || p.value);
    env[`NOMAD_HOST_PORT_${p.label}`] = String(p.value);
  }
  return new TaskEnv(env, nodeAttrs, { env: {}, taskDir: '', allocRoot: '' });
}
