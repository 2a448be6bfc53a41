// An allocation's status as the server sees it (Nomad's getClientStatus):
// derived from its tasks' states and its runner's record (a setup failure, a
// max_run_duration that ran out, the phase, the group's network). Pure; the
// runner (alloc-runner.ts) calls it whenever a task or the record changes.

import type { AllocClientStatus, TaskState } from '../../structs/index.js';
import type { AllocRunnerRecord } from './alloc-records.js';
import type { AllocRunnerStatus } from './alloc-runner-options.js';
import { MAX_RUN_EXCEEDED } from './max-run-duration.js';
import { withReason } from './task-setup.js';

/** The status of an allocation whose tasks are in `taskStates` (kept in the answer as given, not copied). Pure. */
export function allocStatus(record: AllocRunnerRecord, taskStates: Record<string, TaskState>): AllocRunnerStatus {
  const states = Object.values(taskStates);
  let clientStatus: AllocClientStatus;
  let clientDescription: string;
  if (record.failure) {
    clientStatus = 'failed';
    clientDescription = `Failed to set up the allocation: ${record.failure}`;
  } else if (record.maxRunExceeded && states.every((s) => s.state === 'dead')) {
    clientStatus = 'complete';
    clientDescription = MAX_RUN_EXCEEDED;
  } else if (states.length && states.every((s) => s.state === 'dead')) {
    const failed = Object.entries(taskStates).filter(([, s]) => s.failed).map(([n]) => n);
    clientStatus = failed.length ? 'failed' : 'complete';
    clientDescription = failed.length ? `Failed tasks: ${failed.map((n) => withReason(n, taskStates[n])).join(', ')}` : 'All tasks have completed';
  } else if (states.some((s) => s.state === 'running')) {
    clientStatus = 'running';
    clientDescription = 'Tasks are running';
  } else {
    clientStatus = 'pending';
    clientDescription = record.phase === 'prerun' ? 'Setting up the allocation' : 'No tasks have started';
  }
  const net = record.network;
  const network = net?.mode ? { network: { mode: net.mode, ...(net.address ? { address: net.address } : {}), ...(net.interface ? { interface: net.interface } : {}) } } : {};
  return { clientStatus, clientDescription, taskStates, ...network };
}
