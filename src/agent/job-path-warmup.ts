// A dev agent's job-path warm-up: once the agent is idle, a sample job's
// registration path runs in the server without writing anything
// (Server.warmJobPath), so the first job a user submits costs what the later
// ones do; then the same round again, a round a turn of the event loop, so
// that V8 has optimized the path before a first burst of submissions.

import type { Logger } from '../lib/index.js';
import type { Server } from '../server/index.js';

/**
 * Rounds of the warm-up after the first (one a turn of the event loop, until
 * a user's write has come), and the CPU they may take in all. One round
 * compiles the path to bytecode; V8 optimizes a function only after it ran
 * many times, so a first burst of registrations ran in the interpreter: in
 * process, 200 registrations after one round cost 1.2-1.5 ms each, after 300
 * rounds 0.6-0.8 ms.
 */
const WARM_ROUNDS = 300;
const WARM_CPU_BUDGET_MS = 1500;

/**
 * Runs the first round now (the caller waits for the agent to be idle), then
 * schedules the others. Nothing runs once a user's write has come since the
 * start: that write (a first job submitted while the agent started) ran the
 * path itself, and a round would only add its CPU to that job's way to
 * running (the agent-start bench submits at the first answer, before the
 * client is up). Never throws; a round that fails ends the warm-up (logged
 * at debug). Off the start's critical path.
 */
export function warmJobPath(server: Server | undefined, log: Logger): void {
  if (server?.state !== 'running') return;
  if (server.userWritesSeen > 0) {
    log.debug({ userWrites: server.userWritesSeen }, 'job path warm-up skipped: a user write came first');
    return;
  }
  const began = process.cpuUsage();
  try {
    server.warmJobPath();
    const cpu = process.cpuUsage(began);
    log.debug({ cpuMs: Math.round((cpu.user + cpu.system) / 1000) }, 'job path warmed');
    warmMore(server, log, 1, process.cpuUsage());
  } catch (err) {
    log.debug({ err }, 'job path warm-up failed');
  }
}

/**
 * Runs the round again, a round a turn of the event loop (so a request never
 * waits behind more than one), until WARM_ROUNDS, the CPU budget, or a user's
 * write request, begun now or ever since the start: the requests then have
 * the loop, and the warm-up does not come back (a first job submitted during
 * the start would otherwise be placed and started beside it: 273 -> 537 ms
 * from submit to running, CPU 930 -> 1,240 ms by then, in the agent-start
 * bench). Never holds the process open.
 */
function warmMore(server: Server, log: Logger, rounds: number, began: NodeJS.CpuUsage): void {
  setImmediate(() => {
    const cpu = process.cpuUsage(began);
    const cpuMs = Math.round((cpu.user + cpu.system) / 1000);
    const stop = server.state !== 'running' || server.userWritesSeen > 0 || rounds >= WARM_ROUNDS || cpuMs >= WARM_CPU_BUDGET_MS;
    if (stop) {
      log.debug({ rounds, cpuMs }, 'job path warm-up ended');
      return;
    }
    try {
      server.warmJobPath();
    } catch (err) {
      log.debug({ err }, 'job path warm-up failed');
      return;
    }
    warmMore(server, log, rounds + 1, began);
  }).unref();
}
