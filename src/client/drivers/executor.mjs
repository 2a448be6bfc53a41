// @ts-check
// The per-task executor: a small detached process (its own session) that
// starts one task, writes its stdout/stderr to rotated files, records how it
// ended in exit.json and answers a unix control socket (wait, signal, stop,
// status). It outlives the agent, so tasks survive agent restarts and logs
// keep flowing while no agent runs. Plain ESM with JSDoc types so that it
// starts in tens of milliseconds with no transpiler.
//
// Protocol: the driver writes the config as JSON on stdin and closes it; the
// executor answers one JSON line on fd 3 ({ ok, taskPid, taskStartTicks,
// executorStartTicks } or { ok: false, error }) and closes fd 3. The socket
// takes one JSON line per connection and answers one JSON line.
//
// Fencing: with `lease`, the agent touches the lease file while it can reach
// a server; when its mtime is older than lease.ms (the agent lost its
// servers, is frozen or dead), the executor stops the task itself (SIGTERM,
// SIGKILL after killTimeoutMs) and records the exit as fenced, so that a
// single-writer volume never has a writer the servers believe gone.
//
// Log files: `<dir>/<task>.<stdout|stderr>.<n>`, n growing; at most maxFiles
// kept per stream (src/client/logs reads them in the same order). When logs
// are disabled nothing is captured and a marker `.<task>.logs-disabled` is
// left in the log dir. With `logs.fifos` (a task of Berth's driver served as
// a plugin: Nomad's StdoutPath/StderrPath) the task writes straight into the
// host's FIFOs and the host's log monitor rotates.
//
// Shared mode (`mode: 'host'`, see host()): one process runs many tasks, each
// as above, started over the process's own socket instead of stdin and fd 3.
//
// Log monitor mode (`mode: 'logmon'`, Nomad's logmon, one per node): the
// same script, started by the host for the tasks of external driver plugins,
// holds each task's stdout/stderr FIFOs open (read-write, so a writer never
// blocks or gets SIGPIPE while no agent runs) and copies what arrives into
// rotated files; the host adds and removes tasks over its control socket.
//
// Files: this one (config, a task's life and its control socket, main);
// executor-host.mjs (shared mode: the process host that takes tasks over its
// socket); executor-spawn.mjs (how the task is started: raw_exec, exec's
// namespaces and root, its cgroup; executor-join.mjs the v1 join);
// executor-proc.mjs (the /proc and cgroup steps of a task's life: start
// times, exec's root entered, the join's report, OOM kills, the cgroup's
// kill); executor-logs.mjs (rotated log files, log monitor mode);
// executor-warm-start.mjs (how this process's code was loaded, and its code
// cache). Each is copied into dist beside it.

import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { logmon, RotatingFile } from './executor-logs.mjs';
import { host } from './executor-host.mjs';
import { childrenOf, chrooted, joined, killCgroup, oomKills, startTicks } from './executor-proc.mjs';
import { spawnTask } from './executor-spawn.mjs';
import { saveCodeCache, warmStart } from './executor-warm-start.mjs';

/**
 * @typedef {{ source: string, destination: string, readOnly: boolean, propagation: 'private'|'host-to-task'|'bidirectional' }} Mount
 * @typedef {{
 *   mode: 'raw_exec'|'exec', taskId: string, taskName: string, command: string, args: string[],
 *   env: Record<string,string>, taskDir: string, allocDir: string, secretsDir: string, mounts: Mount[],
 *   networkNamespacePath?: string, logs: { disabled: boolean, dir: string, maxFiles: number, maxFileBytes: number, fifos?: { stdout: string, stderr: string } },
 *   stateDir: string, socketPath: string, cgroup?: TaskCgroup,
 *   lease?: { file: string, ms: number, killTimeoutMs: number }
 * }} ExecutorConfig
 * @typedef {{ version: 'v1'|'v2', name: string, dirs: string[], freezerDir?: string, memoryDir?: string }} TaskCgroup
 * @typedef {{ exitCode: number, signal: string|null, oomKilled: boolean, message: string, finishedAt: number }} ExitRecord
 */

/** @param {string} dir @param {string} msg */
function note(dir, msg) {
  try {
    fs.appendFileSync(path.join(dir, 'executor.log'), `${new Date().toISOString()} ${msg}\n`);
  } catch {
    // nowhere left to tell
  }
}

/** @param {number | null} code @param {NodeJS.Signals | null} signal */
function exitRecord(code, signal, oomKilled = false) {
  const message = oomKilled ? 'OOM Killed: the task went past its memory limit' : signal ? `killed by ${signal}` : `exited with code ${code}`;
  return { exitCode: code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : -1), signal, oomKilled, message, finishedAt: Date.now() };
}

/** Milliseconds since the lease file was last touched (Infinity when it is gone). @param {string} file */
function leaseAge(file) {
  try {
    return Date.now() - fs.statSync(file).mtimeMs;
  } catch {
    return Infinity;
  }
}

/**
 * Replaces `file` with `value` as JSON, whole or not at all (temp file, rename).
 * With `sync`, the data is fsynced before the rename, so that a power cut too
 * leaves the old or the new content. Without it the record survives a crash
 * or SIGKILL of the agent and of this process (the kernel's page cache), not
 * a power cut: right for a record that a power cut makes moot anyway.
 * @param {string} file @param {unknown} value @param {{ sync: boolean }} opts
 */
function writeJsonAtomic(file, value, { sync }) {
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(value));
  if (sync) {
    const fd = fs.openSync(tmp, 'r');
    fs.fsyncSync(fd);
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

/**
 * Runs one task under this process: starts it, calls `report` once with the
 * start report, answers the task's control socket and records its exit,
 * then calls `ended` with that record (as a `wait` on the socket gets it).
 * Resolves with 1 when the start failed, 0 once the exit is recorded and the
 * task's socket closed. Never rejects for the task's own failures.
 * @param {ExecutorConfig} cfg @param {(msg: unknown) => void} report
 * @param {(exit: ExitRecord) => void} [ended] @returns {Promise<number>}
 */
async function runTask(cfg, report, ended) {
  fs.mkdirSync(cfg.stateDir, { recursive: true });
  const oomBaseline = oomKills(cfg.cgroup);

  /** @type {RotatingFile[]} */
  const files = [];
  /** @type {import('node:child_process').ChildProcess} */
  let child;
  try {
    fs.mkdirSync(cfg.logs.dir, { recursive: true });
    const marker = path.join(cfg.logs.dir, `.${cfg.taskName}.logs-disabled`);
    if (cfg.logs.disabled) fs.writeFileSync(marker, '');
    else fs.rmSync(marker, { force: true });
    child = spawnTask(cfg);
    await new Promise((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
  } catch (err) {
    note(cfg.stateDir, `start failed: ${/** @type {Error} */ (err).message}`);
    report({ ok: false, error: /** @type {Error} */ (err).message });
    return 1;
  }
  const pid = /** @type {number} */ (child.pid);
  // Catch the exit even if it comes before the socket is up.
  /** @type {Promise<[number | null, NodeJS.Signals | null]>} */
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve([code, signal])));
  if (!cfg.logs.disabled && !cfg.logs.fifos) {
    for (const [stream, name] of /** @type {const} */ ([[child.stdout, 'stdout'], [child.stderr, 'stderr']])) {
      const file = new RotatingFile(cfg.logs.dir, `${cfg.taskName}.${name}`, cfg.logs.maxFiles, cfg.logs.maxFileBytes);
      files.push(file);
      stream?.on('data', (/** @type {Buffer} */ chunk) => {
        try {
          file.write(chunk);
        } catch (err) {
          note(cfg.stateDir, `log write failed: ${/** @type {Error} */ (err).message}`);
        }
      });
    }
  }

  /** @type {ExitRecord | null} */
  let exit = null;
  let exitedEarly = false;
  void exited.then(() => {
    exitedEarly = true;
  });
  /** @type {Array<(r: ExitRecord) => void>} */
  const waiters = [];
  /** @type {NodeJS.Timeout | undefined} */
  let killTimer;

  // Graceful signals go to the task itself: for exec that is pid 1 of its
  // namespace (unshare ignores SIGTERM and would hold it up); SIGKILL goes to
  // the whole process group.
  /** @param {string} signal */
  const sendSignal = (signal) => {
    if (exit) throw new Error('task has exited');
    if (signal === 'SIGKILL') {
      process.kill(-pid, 'SIGKILL');
      if (cfg.cgroup) void killCgroup(cfg.cgroup);
      return;
    }
    if (cfg.mode === 'exec') {
      const init = childrenOf(pid);
      for (const p of init) process.kill(p, /** @type {NodeJS.Signals} */ (signal));
      if (init.length === 0) process.kill(-pid, /** @type {NodeJS.Signals} */ (signal));
    } else {
      process.kill(-pid, /** @type {NodeJS.Signals} */ (signal));
    }
  };

  const server = net.createServer((conn) => {
    let buf = '';
    conn.on('error', () => {});
    conn.on('data', (d) => {
      buf += d.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      let req;
      try {
        req = JSON.parse(buf.slice(0, nl));
      } catch {
        conn.end(`${JSON.stringify({ error: 'bad request' })}\n`);
        return;
      }
      /** @param {unknown} msg */
      const answer = (msg) => conn.end(`${JSON.stringify(msg)}\n`);
      const whenExited = () => (exit ? answer({ exit }) : waiters.push((r) => answer({ exit: r })));
      try {
        if (req.op === 'status') answer({ running: !exit, taskPid: pid, exit });
        else if (req.op === 'wait') whenExited();
        else if (req.op === 'signal') {
          sendSignal(String(req.signal));
          answer({ ok: true });
        } else if (req.op === 'stop') {
          if (!exit) {
            try {
              sendSignal(String(req.signal || 'SIGTERM'));
            } catch {
              // exited meanwhile
            }
            if (!killTimer) {
              killTimer = setTimeout(() => {
                try {
                  process.kill(-pid, 'SIGKILL');
                } catch {
                  // already gone
                }
                if (cfg.cgroup) void killCgroup(cfg.cgroup);
              }, Math.max(0, Number(req.timeoutMs) || 0));
            }
          }
          whenExited();
        } else answer({ error: `unknown op ${String(req.op)}` });
      } catch (err) {
        answer({ error: /** @type {Error} */ (err).message });
      }
    });
  });
  fs.rmSync(cfg.socketPath, { force: true });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(cfg.socketPath, () => resolve(undefined));
  });
  fs.chmodSync(cfg.socketPath, 0o600);

  if (cfg.cgroup) await joined(child);
  if (cfg.mode === 'exec') {
    await chrooted(pid, () => exitedEarly);
    if (exitedEarly && !fs.existsSync(path.join(cfg.stateDir, 'setup-done'))) {
      // The namespace setup itself failed (a mount refused): a start failure, not a task exit.
      const [code, signal] = await exited;
      report({ ok: false, error: `setting up the task's namespaces and root failed (${signal ?? `exit code ${code}`}); its stderr log has the reason` });
      server.close();
      fs.rmSync(cfg.socketPath, { force: true });
      return 1;
    }
  }

  let taskStartTicks = 0;
  try {
    taskStartTicks = startTicks(pid);
  } catch {
    // exited already; exit.json will tell
  }
  const started = { taskPid: pid, taskStartTicks, executorStartTicks: startTicks(process.pid) };
  // Written before the agent hears of it: an agent killed before it recorded the task finds it here.
  // Not fsynced: it is on every task start's path (an fsync is milliseconds), and only a power cut
  // could lose it, which ends the task it names too (as the agent's own store, synchronous=NORMAL).
  try {
    writeJsonAtomic(path.join(cfg.stateDir, 'started.json'), started, { sync: false });
  } catch (err) {
    note(cfg.stateDir, `cannot record the start: ${/** @type {Error} */ (err).message}`);
  }
  report({ ok: true, ...started });

  /** @type {string | null} */
  let fencedBecause = null;
  if (cfg.lease) {
    const lease = cfg.lease;
    const timer = setInterval(() => {
      if (exit || fencedBecause) return;
      const age = leaseAge(lease.file);
      if (age <= lease.ms) return;
      fencedBecause = `no server reached for ${Math.round(age / 1000)} s (stop_after_server_disconnect is ${Math.round(lease.ms / 1000)} s): the task was stopped so that its single-writer volume has no writer the servers believe gone`;
      note(cfg.stateDir, `fenced: ${fencedBecause}`);
      try {
        sendSignal('SIGTERM');
      } catch {
        // exited meanwhile
      }
      if (!killTimer) {
        killTimer = setTimeout(() => {
          try {
            process.kill(-pid, 'SIGKILL');
          } catch {
            // already gone
          }
          if (cfg.cgroup) void killCgroup(cfg.cgroup);
        }, lease.killTimeoutMs);
      }
    }, Math.max(50, Math.min(1000, Math.floor(lease.ms / 4))));
    void exited.then(() => clearInterval(timer));
  }

  /** @type {(code: number) => void} */
  let finished = () => {};
  /** @type {Promise<number>} */
  const over = new Promise((resolve) => (finished = resolve));
  void exited.then(async ([code, signal]) => {
    if (killTimer) clearTimeout(killTimer);
    // The task is over: whatever it left in its cgroup goes with it.
    if (cfg.cgroup) await killCgroup(cfg.cgroup);
    const record = exitRecord(code, signal, oomKills(cfg.cgroup) > oomBaseline);
    if (fencedBecause) Object.assign(record, { fenced: true, message: `${record.message}; ${fencedBecause}` });
    // Let the pipes drain, unless a leftover grandchild holds them open.
    const finish = () => {
      for (const f of files) f.close();
      try {
        writeJsonAtomic(path.join(cfg.stateDir, 'exit.json'), record, { sync: true });
      } catch (err) {
        note(cfg.stateDir, `cannot record the exit: ${/** @type {Error} */ (err).message}`);
      }
      exit = record;
      for (const w of waiters.splice(0)) w(record);
      ended?.(record);
      server.close();
      fs.rmSync(cfg.socketPath, { force: true });
      finished(0);
    };
    if (cfg.logs.disabled || cfg.logs.fifos) return finish();
    let pending = 2;
    const done = () => {
      if (--pending === 0) {
        clearTimeout(t);
        finish();
      }
    };
    const t = setTimeout(() => {
      child.stdout?.destroy();
      child.stderr?.destroy();
      pending = 1;
      done();
    }, 1000);
    if (child.stdout?.readableEnded || child.stdout?.destroyed) done();
    else child.stdout?.once('close', done);
    if (child.stderr?.readableEnded || child.stderr?.destroyed) done();
    else child.stderr?.once('close', done);
  });
  return over;
}

async function main() {
  process.on('SIGHUP', () => {});
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => {});
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const cfg = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  /** @param {unknown} msg */
  const report = (msg) => {
    try {
      fs.writeSync(3, `${JSON.stringify(msg)}\n`);
      fs.closeSync(3);
    } catch {
      // the agent went away before reading; the socket and exit.json still tell
    }
  };
  if (cfg.mode === 'logmon') {
    process.removeAllListeners('SIGTERM');
    logmon(cfg, report);
    return;
  }
  if (cfg.mode === 'host') {
    host(cfg, report, { runTask, note, warmStart, started: saveCodeCache });
    return;
  }
  const code = await runTask(/** @type {ExecutorConfig} */ (cfg), (/** @type {any} */ msg) => {
    if (!msg?.ok) return report(msg);
    report({ ...msg, warmStart: warmStart() });
    saveCodeCache();
  });
  if (code !== 0) process.exit(code);
  setTimeout(() => process.exit(0), 50).unref();
}

main().catch((err) => {
  try {
    fs.writeSync(3, `${JSON.stringify({ ok: false, error: String(err?.message ?? err) })}\n`);
  } catch {
    // nobody listens
  }
  process.exit(1);
});
