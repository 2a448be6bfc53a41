// The agent's own start phases, for whoever profiles a start (bench
// `agent-start`): each a debug log line `start phase` with the phase's name
// and `ms`, the time since the process began (performance.now()), so a
// start reads as a timeline in the agent's log at `--log-level debug`.

import type { Logger } from '../lib/index.js';

/** Logs that the agent reached `phase` (at debug level), `at` ms since the process began (default now). */
export function startPhase(log: Logger, phase: string, at = performance.now()): void {
  if (!log.isLevelEnabled('debug')) return;
  const cpu = process.cpuUsage();
  log.debug({ phase, ms: Math.round(at * 10) / 10, cpuMs: Math.round((cpu.user + cpu.system) / 1000) }, 'start phase');
}
