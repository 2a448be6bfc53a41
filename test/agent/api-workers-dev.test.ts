// A dev agent's API through its front workers (`server { api_workers = 2 }`):
// a task's logs, followed and whole, and an exec WebSocket, each checked on a
// request a worker relayed (the agent's request log names the worker); and a
// dev agent with `server { api_workers = 0 }` serving on its main thread
// alone, with the reader of registrations a dev agent has by default. Real
// agents, real sockets.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { AgentRun, killProcessesUnder, mountsUnder, ok, until } from '../support/agent-run.js';

const dir = mkdtempSync('/tmp/bapiw-');
const dev = new AgentRun(['--dev', '--data-dir', path.join(dir, 'dev'), '--port', '0', '--log-level', 'trace', '--config', path.join(dir, 'workers.hcl')]);
writeFileSync(path.join(dir, 'workers.hcl'), 'server {\n  api_workers = 2\n}\n');
writeFileSync(path.join(dir, 'alone.hcl'), 'server {\n  api_workers = 0\n}\n');
const alone = new AgentRun(['--dev', '--data-dir', path.join(dir, 'alone'), '--port', '0', '--log-level', 'debug', '--config', path.join(dir, 'alone.hcl')]);
let allocId = '';

interface LogLine {
  msg?: string;
  route?: string;
  path?: string;
  worker?: number;
}

/** The request log lines of an agent so far (`relayed`: the workers' trace of what they relayed). */
function requests(agentDir: string, msg = 'request'): LogLine[] {
  const file = path.join(agentDir, 'agent.log');
  if (!existsSync(file)) return [];
  const out: LogLine[] = [];
  for (const l of readFileSync(file, 'utf8').split('\n')) {
    if (!l.includes(`"msg":"${msg}"`)) continue;
    try {
      const line = JSON.parse(l) as LogLine;
      if (line.msg === msg) out.push(line);
    } catch {
      // the last line, half written
    }
  }
  return out;
}

/** Runs `call` until a worker relayed it (its trace has a line for a path containing `pathPart`). */
async function throughWorker<T>(pathPart: string, call: () => Promise<T>): Promise<T> {
  const agentDir = path.join(dir, 'dev');
  for (let i = 0; i < 100; i++) {
    const seen = requests(agentDir, 'relayed').filter((l) => l.path?.includes(pathPart)).length;
    const out = await call();
    // A line comes once the relayed request ended; main's own take leaves none (checked after a second's wait).
    const relayed = await until(`the relay's line for ${pathPart}`, () => requests(agentDir, 'relayed').filter((l) => l.path?.includes(pathPart))[seen], 2_000).catch(() => undefined);
    if (relayed) return out;
  }
  throw new Error(`no worker relayed ${pathPart} in 100 tries`);
}

before(async () => {
  await Promise.all([dev.start(), alone.start()]);
  writeFileSync(
    path.join(dir, 'job.hcl'),
    'job "talk" {\n  group "g" {\n    task "t" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/sh"\n        args    = ["-c", "echo hello-worker; exec sleep 600"]\n      }\n      resources {\n        cpu    = 20\n        memory = 16\n      }\n    }\n  }\n}\n',
  );
  ok(await dev.cli(['job', 'run', path.join(dir, 'job.hcl')], { timeoutMs: 120_000 }), 'job run talk');
  allocId = await until('the allocation running', async () => {
    const res = await fetch(`${dev.addr}/v1/job/talk/allocations`, { headers: { 'X-Nomad-Token': dev.token } });
    return ((await res.json()) as Array<{ ID: string; ClientStatus: string }>).find((a) => a.ClientStatus === 'running')?.ID;
  });
});

after(async () => {
  await dev.cli(['job', 'stop', '--purge', 'talk']).catch(() => undefined);
  await dev.stop('SIGINT').catch(() => undefined);
  await alone.stop('SIGINT').catch(() => undefined);
  killProcessesUnder(dir);
  for (const m of mountsUnder(dir).reverse()) spawnSync('umount', ['-l', m]);
  rmSync(dir, { recursive: true, force: true });
});

describe("a dev agent's API through its front workers", { timeout: 300_000 }, () => {
  it("streams a task's logs through a worker, whole and followed", async () => {
    const headers = { 'X-Nomad-Token': dev.token, connection: 'close' };
    await until('the task to have printed', async () => {
      const res = await fetch(`${dev.addr}/v1/client/fs/logs/${allocId}?task=t&type=stdout&plain=true`, { headers });
      return (await res.text()).includes('hello-worker') || undefined;
    });
    const whole = await throughWorker('fs/logs', async () => {
      const res = await fetch(`${dev.addr}/v1/client/fs/logs/${allocId}?task=t&type=stdout&plain=true`, { headers });
      return { status: res.status, text: await res.text() };
    });
    assert.deepEqual(whole, { status: 200, text: 'hello-worker\n' });
    // Followed: the stream stays open (the task sleeps); its first bytes come through the relay as they are written.
    const followed = await throughWorker('fs/logs', async () => {
      const ac = new AbortController();
      const res = await fetch(`${dev.addr}/v1/client/fs/logs/${allocId}?task=t&type=stdout&plain=true&follow=true`, { headers, signal: ac.signal });
      const reader = res.body!.getReader();
      let text = '';
      while (!text.includes('\n')) {
        const { value, done } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString();
      }
      ac.abort();
      return text;
    });
    assert.equal(followed, 'hello-worker\n');
  });

  it('runs a command over the exec WebSocket through a worker', async () => {
    const url = new URL(`${dev.addr.replace(/^http/, 'ws')}/v1/client/allocation/${allocId}/exec`);
    url.searchParams.set('task', 't');
    url.searchParams.set('command', JSON.stringify(['/bin/sh', '-c', 'read x; echo "got $x"']));
    url.searchParams.set('ws_handshake', 'true');
    const session = await throughWorker('exec', () =>
      new Promise<{ out: string; last: unknown; code: number }>((resolve, reject) => {
        const ws = new WebSocket(url);
        let text = '';
        let end: unknown;
        ws.on('open', () => {
          ws.send(JSON.stringify({ version: 1, auth_token: dev.token }));
          ws.send(JSON.stringify({ stdin: { data: Buffer.from('ping\n').toString('base64') } }));
        });
        ws.on('message', (m: Buffer) => {
          const f = JSON.parse(m.toString()) as { stdout?: { data?: string }; exited?: boolean };
          if (f.stdout?.data) text += Buffer.from(f.stdout.data, 'base64').toString();
          if (f.exited) end = f;
        });
        ws.on('close', (c) => resolve({ out: text, last: end, code: c }));
        ws.on('error', reject);
      }),
    );
    assert.deepEqual(session, { out: 'got ping\n', last: { exited: true, result: { exit_code: 0 } }, code: 1000 });
  });

  it('serves on the main thread alone with api_workers = 0', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${alone.addr}/v1/jobs`, { method: 'PUT', headers: { 'X-Nomad-Token': alone.token, connection: 'close' }, body: JSON.stringify({ Job: { ID: `alone-${i}`, Type: 'batch', Datacenters: ['dc1'], TaskGroups: [{ Name: 'g', Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: '/bin/true' } }] }] } }) });
      assert.equal(res.status, 200, await res.text());
    }
    const lines = await until('the request log', () => {
      const l = requests(path.join(dir, 'alone')).filter((x) => x.route === '/v1/jobs');
      return l.length >= 5 ? l : undefined;
    });
    assert.ok(lines.every((l) => l.worker === undefined), 'no worker served or relayed a request');
    assert.ok(!existsSync(path.join(dir, 'alone', 'server', 'run', 'api.sock')), 'no internal socket');
    assert.ok(existsSync(path.join(dir, 'dev', 'server', 'run', 'api.sock')), 'the agent with workers has its internal socket');
  });

  it('starts a reader of registrations by default on a machine of two cores or more, and none beside front workers', async (t) => {
    if (availableParallelism() < 2) return t.skip('one core: no reader by default');
    // The reader starts a second after the API listens, then warms.
    const warmed = await until('the reader warmed', () => requests(path.join(dir, 'alone'), 'API reader warmed')[0], 60_000);
    assert.ok(warmed);
    assert.equal(requests(path.join(dir, 'dev'), 'API reader started').length, 0, 'the agent with front workers has no reader');
  });
});
