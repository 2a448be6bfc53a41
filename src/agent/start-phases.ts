// The agent's own start phases, for whoever profiles a start (bench
// `agent-start`): each a debug log line `start phase` with the phase's name
// and `ms`, the time since the process began (performance.now()), with the
// process's CPU (`cpuMs`) and minor page faults (`minorFaults`) so far, so a
// start reads as a timeline in the agent's log at `--log-level debug`.

import type { Logger } from '../lib/index.js';

/** Logs that the agent reached `phase` (at debug level), `at` ms since the process began (default now). */
export function startPhase(log: Logger, phase: string, at = performance.now()): void {
  if (!log.isLevelEnabled('debug')) return;
  const use = process.resourceUsage();
  // Minor page faults too: a fresh 4 KB page costs ~20-30 us of CPU at first touch on the VMs measured (issue 40),
  // a large share of a start's CPU, so a phase's faults say what its memory costs.
  log.debug({ phase, ms: Math.round(at * 10) / 10, cpuMs: Math.round((use.userCPUTime + use.systemCPUTime) / 1000), minorFaults: use.minorPageFault }, 'start phase');
}
