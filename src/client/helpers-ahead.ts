// The client's helper processes started ahead of the client (issue 40): the
// mount helper, which makes every allocation directory, and the spare shared
// executor, which runs a node's first raw_exec task. Each is a Node start,
// 110-160 ms of wall time on a quiet machine. Started by the client's own
// start, after the agent's server part, they were still starting when a
// dev agent's first allocation came, and the first job waited on them; started
// by the agent before its server part, they run on another core while this
// one builds the server and the client.

import { mountHelper } from './allocdir/index.js';
import type { Logger } from '../lib/index.js';
import { driverExecutorHosts, type ExecutorHosts } from './drivers/index.js';

/**
 * Starts the mount helper and, when `spareExecutor` (and raw_exec, whose
 * fingerprint would start it at the client's start anyway), the spare of the
 * shared executors createDrivers would make under `stateDir`; returns those
 * executors, to be handed to createDrivers as `executorHosts` (whose first
 * driver to shut down closes them), or closed by the caller if no client
 * takes them. Does not block (two spawns); never throws; call once.
 */
export function startClientHelpers(opts: { stateDir: string; tasksPerExecutor: number; spareExecutor: boolean; rawExec: boolean; logger?: Logger }): ExecutorHosts | undefined {
  mountHelper().warm();
  const hosts = driverExecutorHosts({ stateDir: opts.stateDir, tasksPerExecutor: opts.tasksPerExecutor, spareExecutor: opts.spareExecutor, ...(opts.logger ? { logger: opts.logger } : {}) });
  if (opts.rawExec) hosts?.warm();
  return hosts;
}
