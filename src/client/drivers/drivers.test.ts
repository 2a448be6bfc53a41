// raw_exec and exec with real processes: start, wait, stop, kill after a
// timeout, signal, stats, exec streaming (pipes and tty), shut down, logs.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { followTaskLogs, readTaskLogs, type LogsError } from '../logs/index.js';
import { Collect, DriverHarness, eventually, execIn } from '../../../test/support/client-drivers.js';
import { DriverError } from './driver-error.js';
import { ExecDriver } from './exec-driver.js';
import { RawExecDriver } from './raw-exec-driver.js';
import type { TaskDriver } from './task-driver.js';

const KINDS = [
  ['raw_exec', (stateDir: string) => new RawExecDriver({ stateDir })],
  ['exec', (stateDir: string) => new ExecDriver({ stateDir })],
] as const;

for (const [kind, make] of KINDS) {
  describe(`${kind} driver`, () => {
    let h: DriverHarness;
    let driver: TaskDriver;

    beforeEach(() => {
      h = new DriverHarness();
      driver = make(h.stateDir);
      h.drivers.push(driver);
    });
    afterEach(() => h.cleanup());

    it('fingerprints as healthy and runs a task to its exit code, with its env and stdout/stderr in the log files', async () => {
      const info = await driver.fingerprint();
      assert.equal(info.detected, true);
      assert.equal(info.healthy, true);
      assert.deepEqual(info.networkModes, ['host', 'none', 'bridge', 'cni/*']);
      await h.start(driver, h.config('web', 'echo "$GREETING from $(pwd)"; echo oops >&2; exit 3'));
      const exit = await driver.waitTask('alloc-1/web/0');
      assert.deepEqual(exit, { exitCode: 3, signal: null, oomKilled: false, message: 'exited with code 3' });
      // As in Nomad: the task runs in its task directory, the parent of local/.
      const where = kind === 'exec' ? '/' : path.dirname(h.taskDir('web'));
      assert.equal((await readTaskLogs({ dir: h.logDir, taskName: 'web', stream: 'stdout' })).toString(), `hello from ${where}\n`);
      assert.equal((await readTaskLogs({ dir: h.logDir, taskName: 'web', stream: 'stderr' })).toString(), 'oops\n');
      assert.equal(driver.inspectTask('alloc-1/web/0').state, 'exited');
      // Waiting again gives the same answer.
      assert.equal((await driver.waitTask('alloc-1/web/0')).exitCode, 3);
    });

    it('waits on and stops twelve tasks at once without a MaxListenersExceededWarning (one listener on its stop signal, not one per task)', async () => {
      const warnings: string[] = [];
      const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
      process.on('warning', onWarning);
      try {
        const cfgs = Array.from({ length: 12 }, (_, i) => h.config(`t${i}`, 'while :; do sleep 0.05; done'));
        for (const cfg of cfgs) await h.start(driver, cfg);
        const waits = cfgs.map((cfg) => driver.waitTask(cfg.id));
        await Promise.all(cfgs.map((cfg) => driver.stopTask(cfg.id, { timeoutMs: 5_000 })));
        await Promise.all(waits);
        await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
        assert.deepEqual(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning')), []);
      } finally {
        process.off('warning', onWarning);
      }
    });

    it('stops a task with its signal: a task that handles SIGTERM exits on its own', async () => {
      const cfg = h.config('web', 'trap "echo got-term; exit 7" TERM; echo ready; while :; do sleep 0.05; done');
      await h.start(driver, cfg);
      await eventually('task ready', () => existsSync(path.join(h.logDir, 'web.stdout.0')) && readFileSync(path.join(h.logDir, 'web.stdout.0'), 'utf8').includes('ready'));
      assert.equal(driver.inspectTask(cfg.id).state, 'running');
      await driver.stopTask(cfg.id, { timeoutMs: 30_000 });
      const exit = await driver.waitTask(cfg.id);
      assert.equal(exit.exitCode, 7);
      assert.equal(exit.signal, null);
      assert.match(readFileSync(path.join(h.logDir, 'web.stdout.0'), 'utf8'), /got-term/);
    });

    it('kills a task that ignores the stop signal once the timeout passes', async () => {
      const cfg = h.config('stubborn', 'trap "" TERM; echo ready; while :; do sleep 0.05; done');
      await h.start(driver, cfg);
      await eventually('task ready', () => readFileSync(path.join(h.logDir, 'stubborn.stdout.0'), 'utf8').includes('ready'));
      await driver.stopTask(cfg.id, { timeoutMs: 200 });
      const exit = await driver.waitTask(cfg.id);
      assert.equal(exit.signal, 'SIGKILL');
      assert.equal(exit.message, 'killed by SIGKILL');
      // Stopping an exited task is a no-op.
      await driver.stopTask(cfg.id, { timeoutMs: 0 });
    });

    it('delivers a signal to the task, and refuses one after it exited', async () => {
      const cfg = h.config('sig', 'trap "echo usr1 >> local/got" USR1; echo ready; while :; do sleep 0.05; done');
      await h.start(driver, cfg);
      await eventually('task ready', () => readFileSync(path.join(h.logDir, 'sig.stdout.0'), 'utf8').includes('ready'));
      await assert.rejects(driver.signalTask(cfg.id, 'SIGNOPE'), (e: DriverError) => e.code === 'DRIVER_INVALID_SIGNAL');
      await driver.signalTask(cfg.id, 'SIGUSR1');
      await eventually('the task saw SIGUSR1', () => existsSync(path.join(cfg.taskDir, 'got')));
      await driver.stopTask(cfg.id, { timeoutMs: 0, signal: 'SIGKILL' });
      await assert.rejects(driver.signalTask(cfg.id, 'SIGUSR1'), (e: DriverError) => e.code === 'DRIVER_TASK_NOT_RUNNING');
    });

    it('reports CPU and memory of the whole process tree from the kernel', async () => {
      // A child that burns CPU: its time counts for the task.
      const cfg = h.config('burn', 'sh -c "while :; do :; done" & wait');
      const handle = await h.start(driver, cfg);
      const first = await driver.taskStats(cfg.id);
      assert.ok(first.pids.includes(handle.taskPid));
      assert.ok(first.memory.rssBytes > 0);
      const later = await eventually('CPU time grows', async () => {
        const s = await driver.taskStats(cfg.id);
        return s.cpu.totalMs > first.cpu.totalMs + 50 ? s : undefined;
      });
      assert.ok(later.pids.length >= 2, 'the burning child is part of the tree');
      assert.ok(later.cpu.percent > 0);
      await driver.stopTask(cfg.id, { timeoutMs: 0, signal: 'SIGKILL' });
      await assert.rejects(driver.taskStats(cfg.id), (e: DriverError) => e.code === 'DRIVER_TASK_NOT_RUNNING');
    });

    it('execs a command in the task with pipes (stdin, stdout, stderr, exit code) and the task env', async () => {
      const cfg = h.config('shell', 'echo ready; exec sleep 1000');
      await h.start(driver, cfg);
      const r = await execIn(driver, cfg.id, ['/bin/sh', '-c', 'cat; echo "$GREETING" >&2; pwd; exit 4'], 'from stdin\n');
      assert.equal(r.exitCode, 4);
      assert.equal(r.out, `from stdin\n${kind === 'exec' ? '/' : path.dirname(cfg.taskDir)}\n`);
      assert.equal(r.err, 'hello\n');
    });

    it('execs with a tty: a terminal of the asked size, resized on request', async () => {
      const cfg = h.config('tty', 'exec sleep 1000');
      await h.start(driver, cfg);
      const out = new Collect();
      const resize = (async function* () {
        yield { cols: 100, rows: 40 };
      })();
      const { exitCode } = await driver.execTaskStreaming(cfg.id, {
        command: ['/bin/sh', '-c', 'test -t 0 && echo is-a-tty; sleep 0.3; stty size; exit 5'],
        tty: true,
        size: { cols: 80, rows: 24 },
        resize,
        stdout: out,
      });
      assert.equal(exitCode, 5);
      assert.match(out.text, /is-a-tty/);
      assert.match(out.text, /40 100/);
    });

    it('after shutdown every call fails with DRIVER_SHUT_DOWN, a pending wait included, and the task keeps running', async () => {
      const cfg = h.config('long', 'exec sleep 1000');
      const handle = await h.start(driver, cfg);
      const pending = driver.waitTask(cfg.id);
      await driver.shutdown();
      const shutDown = (e: DriverError): boolean => e instanceof DriverError && e.code === 'DRIVER_SHUT_DOWN' && /shut down/.test(e.message);
      await assert.rejects(pending, shutDown);
      await assert.rejects(driver.taskStats(cfg.id), shutDown);
      await assert.rejects(driver.startTask(h.config('other', 'true')), shutDown);
      await assert.rejects(driver.stopTask(cfg.id, { timeoutMs: 0 }), shutDown);
      await assert.rejects(driver.recoverTask(handle), shutDown);
      assert.throws(() => driver.inspectTask(cfg.id), shutDown);
      await driver.shutdown();
      process.kill(handle.taskPid, 0); // still there
    });

    it('with log collection disabled captures nothing and says so when asked for logs', async () => {
      const cfg = h.config('quiet', 'echo should-not-be-kept', { logs: { disabled: true, dir: h.logDir, maxFiles: 3, maxFileSizeMb: 1 } });
      await h.start(driver, cfg);
      assert.equal((await driver.waitTask(cfg.id)).exitCode, 0);
      assert.deepEqual(readdirSync(h.logDir).filter((f) => f.startsWith('quiet.')), []);
      await assert.rejects(readTaskLogs({ dir: h.logDir, taskName: 'quiet', stream: 'stdout' }), (e: LogsError) => {
        return e.code === 'LOGS_DISABLED' && e.message === 'log collection is disabled for this task';
      });
    });

    it('rotates log files at the size limit and keeps at most maxFiles of them', async () => {
      // 3.5 MiB of numbered lines through files of 1 MiB, keeping 2.
      const cfg = h.config('chatty', 'i=0; while [ $i -lt 3584 ]; do printf "%01023d\\n" $i; i=$((i+1)); done', {
        logs: { disabled: false, dir: h.logDir, maxFiles: 2, maxFileSizeMb: 1 },
      });
      await h.start(driver, cfg);
      assert.equal((await driver.waitTask(cfg.id)).exitCode, 0);
      const files = readdirSync(h.logDir).filter((f) => f.startsWith('chatty.stdout.')).sort();
      assert.deepEqual(files, ['chatty.stdout.2', 'chatty.stdout.3']);
      assert.equal(statSync(path.join(h.logDir, 'chatty.stdout.2')).size, 1024 * 1024);
      const kept = (await readTaskLogs({ dir: h.logDir, taskName: 'chatty', stream: 'stdout' })).toString();
      assert.equal(kept.length, 1024 * 1024 + 512 * 1024);
      assert.ok(kept.endsWith(`${'3583'.padStart(1023, '0')}\n`));
      const tail = (await readTaskLogs({ dir: h.logDir, taskName: 'chatty', stream: 'stdout' }, { tail: 2048 })).toString();
      assert.equal(tail, `${'3582'.padStart(1023, '0')}\n${'3583'.padStart(1023, '0')}\n`);
    });

    it('follows logs as the task writes them', async () => {
      const cfg = h.config('ticker', 'i=0; while [ $i -lt 1000 ]; do echo tick-$i; i=$((i+1)); sleep 0.02; done');
      await h.start(driver, cfg);
      const ac = new AbortController();
      let seen = '';
      for await (const chunk of followTaskLogs({ dir: h.logDir, taskName: 'ticker', stream: 'stdout' }, { signal: ac.signal, pollMs: 20 })) {
        seen += chunk.toString();
        if (seen.includes('tick-5\n')) ac.abort();
      }
      assert.match(seen, /^tick-0\ntick-1\n/);
    });

    it('refuses a second start of the same task id and unknown task ids', async () => {
      const cfg = h.config('dup', 'exec sleep 1000');
      await h.start(driver, cfg);
      await assert.rejects(driver.startTask(cfg), (e: DriverError) => e.code === 'DRIVER_TASK_EXISTS');
      await assert.rejects(driver.waitTask('nope'), (e: DriverError) => e.code === 'DRIVER_TASK_NOT_FOUND');
      await assert.rejects(driver.destroyTask(cfg.id), (e: DriverError) => e.code === 'DRIVER_TASK_RUNNING');
      await driver.destroyTask(cfg.id, { force: true });
      await driver.destroyTask(cfg.id);
      assert.throws(() => driver.inspectTask(cfg.id), (e: DriverError) => e.code === 'DRIVER_TASK_NOT_FOUND');
    });
  });
}
