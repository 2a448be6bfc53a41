// The node's log monitor as an agent uses it: a task's output written into
// its FIFO lands in the task's log file; once the agent holds no task any
// more, stop() ends the monitor process, so an agent that stopped its
// allocations (a dev agent's Ctrl-C) leaves no process behind.
import assert from 'node:assert/strict';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { EXECUTOR_PATH } from '../drivers/index.js';
import { eventually } from '../../../test/support/eventually.js';
import { LogMonitor } from './index.js';

const root = mkdtempSync(path.join(tmpdir(), 'blm-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** The processes whose command line names `socketPath` (the monitor serving it). */
function monitorPids(socketPath: string): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        return readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0').includes(socketPath);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** The process is gone, or dead and waiting for its parent (this test started it) to reap it. */
function ended(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[2] === 'Z';
  } catch {
    return true;
  }
}

describe('the log monitor', () => {
  it('collects a task’s output from its FIFO, and stop() ends the process once no task is left', async () => {
    const socketPath = path.join(root, 'logmon.sock');
    const monitor = new LogMonitor({ socketPath, script: EXECUTOR_PATH });
    const dir = path.join(root, 'alloc', 'logs');
    const fifos = await monitor.add({ dir, taskName: 'web', maxFiles: 2, maxFileSizeMb: 1 });
    const [pid, ...others] = monitorPids(socketPath);
    assert.ok(pid, 'one monitor process serves the socket');
    assert.deepEqual(others, []);
    const fd = openSync(fifos.stdoutPath, 'w');
    writeSync(fd, 'hello from the container\n');
    closeSync(fd);
    const logFile = path.join(dir, 'web.stdout.0');
    await eventually('the line in web.stdout.0', () => existsSync(logFile) && readFileSync(logFile, 'utf8').includes('hello from the container'));

    await monitor.remove({ dir, taskName: 'web' });
    monitor.stop();
    assert.equal(existsSync(socketPath), false, 'its socket is removed');
    await eventually('the monitor process to end', () => ended(pid));
  });

  it('starts with PATH and the cache home alone: the agent’s tokens and Node start-up variables stay with the agent', async () => {
    // A detached monitor outlives the agent: it must not keep the agent's
    // secrets, nor pay Node's start-up work for variables meant for the agent
    // (NODE_EXTRA_CA_CERTS has every Node process parse a CA bundle at start).
    // HOME and XDG_CACHE_HOME say where its code cache is (beside the agent's).
    const saved = { token: process.env['BERTH_TOKEN'], certs: process.env['NODE_EXTRA_CA_CERTS'], cache: process.env['XDG_CACHE_HOME'] };
    process.env['BERTH_TOKEN'] = 'agent-secret-token-0001';
    process.env['NODE_EXTRA_CA_CERTS'] = '/etc/ssl/certs/ca-certificates.crt';
    process.env['XDG_CACHE_HOME'] = path.join(root, 'cache-home');
    const socketPath = path.join(root, 'env.sock');
    const monitor = new LogMonitor({ socketPath, script: EXECUTOR_PATH });
    try {
      await monitor.add({ dir: path.join(root, 'env-alloc', 'logs'), taskName: 'web', maxFiles: 1, maxFileSizeMb: 1 });
      const [pid] = monitorPids(socketPath);
      assert.ok(pid, 'a monitor process serves the socket');
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
      const want = ['PATH', ...(process.env['HOME'] ? ['HOME'] : []), 'XDG_CACHE_HOME'];
      assert.deepEqual(environ.map((kv) => kv.slice(0, kv.indexOf('='))), want);
      assert.ok(environ.includes(`XDG_CACHE_HOME=${path.join(root, 'cache-home')}`));
      await monitor.remove({ dir: path.join(root, 'env-alloc', 'logs'), taskName: 'web' });
    } finally {
      monitor.stop();
      for (const [k, v] of [['BERTH_TOKEN', saved.token], ['NODE_EXTRA_CA_CERTS', saved.certs], ['XDG_CACHE_HOME', saved.cache]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it('stop() with no monitor running does nothing', () => {
    const monitor = new LogMonitor({ socketPath: path.join(root, 'none.sock'), script: EXECUTOR_PATH });
    monitor.stop();
    assert.equal(existsSync(path.join(root, 'none.sock')), false);
  });
});
