// @ts-check
// The executor's shared mode (`mode: 'host'`): one detached process that
// takes tasks over its own unix socket and runs each as a per-task executor
// would (executor.mjs), until it has had none for a while. Plain ESM with
// JSDoc types, as the executor, copied into dist beside it.

import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { startTicks } from './executor-proc.mjs';

/**
 * Shared executor mode (`mode: 'host'`): one process runs the tasks the
 * agent hands it, each exactly as a per-task executor would (its own control
 * socket, started.json, exit.json, logs, lease), so that a task start costs
 * a spawn of the task and not a Node start. Its socket takes one JSON line
 * per connection, `{ op: 'start', config }`, and answers with that task's
 * start report; with `follow: true` a report of a started task keeps the
 * connection open, and a second line `{ exit }` (what the task's own socket
 * answers `wait`) comes once its exit is recorded; `{ op: 'status' }`
 * answers `{ ok, tasks }`. With no task left
 * for idleExitMs (0: at once) it removes its socket and exits; a start that
 * reaches it then is answered `{ ok: false, retry: true }`. Reports `{ ok: true, pid,
 * executorStartTicks }` on fd 3 once it listens. A spare (`spare: true`, started
 * ahead of need) waits for its first task as long as its agent lives: fd 4 is
 * a pipe the agent holds open, and when it closes (the agent stopped or died)
 * a spare that never got a task exits; once one came it is a host as any other.
 * `task` is what the per-task executor does (executor.mjs): run one task
 * and answer its start report; `note` its executor.log line; `warmStart`
 * how its code was loaded (in the report once it listens); `started` is
 * told after a task's report went.
 * @param {{ socketPath: string, idleExitMs: number, spare?: boolean }} cfg
 * @param {(msg: unknown) => void} report
 * @param {{ runTask: (config: any, report: (msg: unknown) => void, ended?: (exit: unknown) => void) => Promise<number>, note: (dir: string, msg: string) => void, warmStart: () => unknown, started: () => void }} task
 */
export function host(cfg, report, { runTask, note, warmStart, started }) {
  let tasks = 0;
  let idleSince = Date.now();
  let closing = false;
  let idle = () => {};
  /** The agent's end of a spare's pipe while no task has come. @type {net.Socket | undefined} */
  let lifeline;
  // One task's fault must not take down the others it supervises.
  process.on('uncaughtException', (err) => note(path.dirname(cfg.socketPath), `host: ${err?.stack ?? err}`));
  const server = net.createServer((conn) => {
    let buf = '';
    conn.setEncoding('utf8');
    conn.on('error', () => undefined);
    /** @param {unknown} msg */
    const answer = (msg) => {
      if (!conn.destroyed) conn.end(`${JSON.stringify(msg)}\n`);
    };
    conn.on('data', (/** @type {string} */ d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      let msg;
      try {
        msg = JSON.parse(buf.slice(0, nl));
      } catch {
        return answer({ ok: false, error: 'bad request' });
      }
      if (msg.op === 'status') return answer({ ok: true, tasks });
      if (msg.op !== 'start') return answer({ ok: false, error: `unknown op ${String(msg.op)}` });
      if (closing) return answer({ ok: false, retry: true, error: 'the executor is exiting' });
      lifeline?.destroy();
      lifeline = undefined;
      tasks++;
      // With `follow` a started task's report leaves the connection open for its exit, told as a
      // `wait` on its own socket tells it: the agent needs no second connection to learn it.
      /** @param {any} report */
      const reported = (report) => {
        if (report?.ok) started();
        if (!report?.ok || !msg.follow) return answer(report);
        if (!conn.destroyed) conn.write(`${JSON.stringify(report)}\n`);
      };
      /** @param {unknown} exit */
      const ended = (exit) => (msg.follow ? answer({ exit }) : undefined);
      void runTask(msg.config, reported, ended)
        .catch((err) => answer({ ok: false, error: String(err?.message ?? err) }))
        .finally(() => {
          if (--tasks > 0) return;
          idleSince = Date.now();
          idle();
        });
    });
  });
  fs.rmSync(cfg.socketPath, { force: true });
  server.listen(cfg.socketPath, () => {
    fs.chmodSync(cfg.socketPath, 0o600);
    report({ ok: true, pid: process.pid, executorStartTicks: startTicks(process.pid), warmStart: warmStart() });
  });
  const exitIfIdle = () => {
    if (closing || tasks > 0 || lifeline || Date.now() - idleSince < cfg.idleExitMs) return;
    leave();
  };
  const leave = () => {
    closing = true;
    // New starts find no socket (and go to another executor); one already accepted is answered `retry`.
    fs.rmSync(cfg.socketPath, { force: true });
    server.close(() => process.exit(0));
    // A connection that never sends its line does not hold the exit up.
    setTimeout(() => process.exit(0), 5000);
  };
  idle = () => setTimeout(exitIfIdle, cfg.idleExitMs);
  if (cfg.spare) {
    lifeline = new net.Socket({ fd: 4, readable: true, writable: false });
    lifeline.on('error', () => undefined).on('close', () => {
      if (lifeline) leave();
    });
    lifeline.resume();
    return;
  }
  // A new executor waits a little longer for its first task.
  setTimeout(exitIfIdle, Math.max(cfg.idleExitMs, 5000));
}
