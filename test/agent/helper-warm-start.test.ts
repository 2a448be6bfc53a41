// The helpers `berth agent` starts from its build load their code through a
// V8 code cache beside the agent's (src/warm-start/helper-main.ts, issue 40):
// a first executor compiles its bundle and, once it started a task, writes
// the cache; the next executor takes it, as its start report says. A torn
// cache, or one V8 refuses, is never handed over as it is: the executor
// compiles, still runs its task, and writes a sound cache again. The API's
// front workers do the same, and the agent's debug log says which way each
// loaded (`API worker accepting`, and `executor started` for its executors);
// the mount helper writes its cache once it answered its first request. Real processes from dist/ (build first).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { seal } from '../../src/warm-start/index.js';
import { AgentRun, freePort, REPO, until } from '../support/agent-run.js';
import { registration } from '../support/nomad-jobs.js';

const dir = mkdtempSync(path.join(tmpdir(), 'bhws-'));
const cacheHome = path.join(dir, 'xdg-cache');
const EXECUTOR = path.join(REPO, 'dist', 'executor.cjs');
const pids: number[] = [];

/** This build's cache files of helper `kind` (`executor`, `api-worker`) in the cache dir. */
function cacheFilesOf(kind: string): string[] {
  try {
    return readdirSync(path.join(cacheHome, 'berth')).filter((f) => f.startsWith(`${kind}-bundle-`) && f.endsWith('.v8cache'));
  } catch {
    return [];
  }
}

interface Report {
  ok: boolean;
  pid?: number;
  taskPid?: number;
  error?: string;
  warmStart?: { path: string; reason: string };
}

/** Starts dist/executor.cjs in shared mode as the agent does (config on stdin, its report on fd 3) with `env`. */
async function startExecutor(name: string): Promise<{ report: Report; socketPath: string }> {
  const home = path.join(dir, name);
  mkdirSync(home, { recursive: true });
  const socketPath = path.join(home, 'h.sock');
  const child = spawn(process.execPath, [EXECUTOR], { detached: true, stdio: ['pipe', 'ignore', 'ignore', 'pipe'], env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', XDG_CACHE_HOME: cacheHome }, cwd: home });
  child.unref();
  pids.push(child.pid!);
  child.stdin!.end(JSON.stringify({ mode: 'host', socketPath, idleExitMs: 60_000 }));
  const line = await new Promise<string>((resolve) => {
    let out = '';
    (child.stdio[3] as Readable).setEncoding('utf8').on('data', (d: string) => (out += d)).on('close', () => resolve(out));
  });
  return { report: JSON.parse(line || '{"ok":false,"error":"no report"}') as Report, socketPath };
}

/** Starts a raw_exec `/bin/sleep 3600` on the executor at `socketPath`; its start report. */
function startTask(socketPath: string, name: string): Promise<Report> {
  const task = path.join(dir, name);
  mkdirSync(path.join(task, 'logs'), { recursive: true });
  const config = {
    mode: 'raw_exec', taskId: name, taskName: 't', command: '/bin/sleep', args: ['3600'], env: { PATH: '/usr/bin:/bin' },
    taskDir: task, allocDir: task, secretsDir: task, mounts: [], logs: { disabled: false, dir: path.join(task, 'logs'), maxFiles: 2, maxFileBytes: 1 << 20 },
    stateDir: task, socketPath: path.join(task, 'c.sock'),
  };
  return new Promise((resolve, reject) => {
    const conn = net.connect(socketPath);
    let out = '';
    conn.setEncoding('utf8').on('data', (d: string) => (out += d)).on('error', reject).on('close', () => {
      const r = JSON.parse(out.split('\n')[0] || '{"ok":false,"error":"no answer"}') as Report;
      if (r.taskPid) pids.push(r.taskPid);
      resolve(r);
    });
    conn.write(`${JSON.stringify({ op: 'start', config })}\n`);
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A new executor, one task started on it (running), its report's warm start. */
async function executorRunningATask(name: string): Promise<{ path: string; reason: string }> {
  const { report, socketPath } = await startExecutor(name);
  assert.equal(report.ok, true, report.error);
  const task = await startTask(socketPath, `${name}-task`);
  assert.equal(task.ok, true, task.error);
  assert.ok(alive(task.taskPid!), 'the task runs');
  assert.ok(report.warmStart, 'the report says how the executor loaded its code');
  return report.warmStart;
}

describe('the helpers of a build through their code caches', () => {
  after(() => {
    for (const pid of pids.reverse()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('a first executor compiles, runs a task and then writes its cache; the next executor takes that cache', async () => {
    const first = await executorRunningATask('e1');
    assert.equal(first.path, 'compiled');
    assert.match(first.reason, /no cache yet/);
    await until('the executor to write its cache', () => cacheFilesOf('executor').length === 1 || undefined);
    const second = await executorRunningATask('e2');
    assert.equal(second.path, 'code-cache', second.reason);
  });

  it('a torn executor cache is not handed to V8: the executor compiles, runs its task, and writes a sound cache again', async () => {
    const file = path.join(cacheHome, 'berth', cacheFilesOf('executor')[0]!);
    const bytes = readFileSync(file);
    bytes[bytes.length >> 1] = (bytes[bytes.length >> 1] as number) ^ 0x10;
    writeFileSync(file, bytes);
    const torn = await executorRunningATask('e3');
    assert.equal(torn.path, 'compiled');
    assert.match(torn.reason, /mismatch \(torn or corrupt\)/);
    await until('a sound cache again', async () => (await executorRunningATask(`e4-${pids.length}`)).path === 'code-cache' || undefined);
  });

  it('a sealed cache V8 refuses is said so, and the executor runs its task', async () => {
    writeFileSync(path.join(cacheHome, 'berth', cacheFilesOf('executor')[0]!), seal(Buffer.from('not V8 code cache bytes, as another Node would have made them')));
    const refused = await executorRunningATask('e5');
    assert.equal(refused.path, 'compiled');
    assert.match(refused.reason, /rejected by V8/);
  });

  it("an agent's API workers compile on a first start and take their cache on the next, serving registrations either way", async () => {
    const config = path.join(dir, 'workers.hcl');
    writeFileSync(config, 'server {\n  api_workers = 1\n}\n');
    const workerLoads: string[] = [];
    for (const run of [1, 2]) {
      const dataDir = path.join(dir, `agent-${run}`);
      const agent = await new AgentRun(['--dev', '--data-dir', dataDir, '--port', String(await freePort()), '--config', config, '--log-level', 'debug'], { env: { XDG_CACHE_HOME: cacheHome } }).start();
      try {
        const lines = (msg: string): Record<string, unknown>[] =>
          readFileSync(path.join(dataDir, 'agent.log'), 'utf8').split('\n').filter((l) => l.includes(`"msg":"${msg}"`)).map((l) => JSON.parse(l) as Record<string, unknown>);
        const accepting = await until('the worker to accept', () => lines('API worker accepting')[0]);
        workerLoads.push(`${(accepting['warmStart'] as { path: string }).path}`);
        // Once its warm-up ended the worker has written (or kept) its cache, and says so.
        await until('the worker warmed', () => lines('API worker warmed')[0]);
        const spec = { id: `w${run}`, type: 'batch', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' }, resources: { cpuMhz: 5, memoryMb: 10 } }] }] };
        const put = await fetch(`${agent.addr}/v1/jobs`, { method: 'PUT', headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' }, body: JSON.stringify(registration(spec)) });
        assert.equal(put.status, 200, await put.text());
        // The allocation's directory is the mount helper's first request: it writes its cache once it answered.
        if (run === 1) await until('the mount helper to write its cache', () => cacheFilesOf('mount-helper').length === 1 || undefined);
        // The agent's spare executor (started with it) says at debug how it loaded: from the cache, once one was written.
        const executor = await until('an executor started', () => lines('executor started')[0]);
        if (run === 2) assert.equal((executor['warmStart'] as { path: string } | undefined)?.path, 'code-cache', JSON.stringify(executor));
      } finally {
        assert.equal((await agent.stop('SIGINT')).code, 0, agent.stderr);
      }
    }
    assert.deepEqual(workerLoads, ['compiled', 'code-cache']);
    assert.equal(cacheFilesOf('api-worker').length, 1);
  });
});
