// A dev agent (server and client in one process) serves its own node's
// allocations itself and forwards the client routes of another node's
// allocation to that node's agent: a dev agent and a client agent that
// joined it, real processes; every call goes to the DEV agent's address.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { AgentRun, freePort, killProcessesUnder, mountsUnder, ok, until } from '../support/agent-run.js';

const dir = mkdtempSync('/tmp/bfwd-');
const dev = new AgentRun(['--dev', '--data-dir', path.join(dir, 'dev'), '--port', '0']);
let away: AgentRun | undefined;
let allocId = '';

const job = `job "away" {
  group "g" {
    constraint {
      attribute = "\${node.unique.name}"
      value     = "away-node"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello-away; exec sleep 600"]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
`;

before(async () => {
  await dev.start();
  const { node } = JSON.parse(readFileSync(path.join(dir, 'dev', 'dev-tokens.json'), 'utf8')) as { node: string };
  const config = path.join(dir, 'away.hcl');
  writeFileSync(
    config,
    `data_dir = "${dir}/away"
ports {
  http = ${await freePort()}
}
client {
  node_name = "away-node"
  servers   = ["${dev.addr}"]
  token     = "${node}"
  options = {
    "driver.raw_exec.enable" = true
  }
}
`,
  );
  away = new AgentRun(['--client', '--config', config]);
  await away.start();
  writeFileSync(path.join(dir, 'away.job.hcl'), job);
  ok(await dev.cli(['job', 'run', path.join(dir, 'away.job.hcl')], { timeoutMs: 120_000 }), 'job run away');
  const res = await fetch(`${dev.addr}/v1/job/away/allocations`, { headers: { 'X-Nomad-Token': dev.token } });
  const allocs = (await res.json()) as Array<{ ID: string; ClientStatus: string; NodeName: string }>;
  allocId = allocs.find((a) => a.ClientStatus === 'running' && a.NodeName === 'away-node')?.ID ?? '';
  assert.ok(allocId, JSON.stringify(allocs));
});

after(async () => {
  await dev.cli(['job', 'stop', '--purge', 'away']).catch(() => undefined);
  await away?.stop('SIGINT').catch(() => undefined);
  await dev.stop('SIGINT').catch(() => undefined);
  killProcessesUnder(dir);
  for (const m of mountsUnder(dir).reverse()) spawnSync('umount', ['-l', m]);
  rmSync(dir, { recursive: true, force: true });
});

describe("a dev agent forwards another node's allocation routes", { timeout: 180_000 }, () => {
  it("reads the logs and files of an allocation on the joined node's agent", async () => {
    const get = async (p: string): Promise<{ status: number; text: string }> => {
      const res = await fetch(dev.addr + p, { headers: { 'X-Nomad-Token': dev.token } });
      return { status: res.status, text: await res.text() };
    };
    const logs = await until('the task to have printed', async () => {
      const r = await get(`/v1/client/fs/logs/${allocId}?task=t&type=stdout&plain=true`);
      assert.equal(r.status, 200, r.text);
      return r.text.includes('hello-away') ? r.text : undefined;
    });
    assert.equal(logs, 'hello-away\n');
    const ls = await get(`/v1/client/fs/ls/${allocId}?path=/t`);
    assert.equal(ls.status, 200, ls.text);
    assert.ok((JSON.parse(ls.text) as Array<{ Name: string }>).some((f) => f.Name === 'local'), ls.text);
  });

  it("runs a command in that allocation over the dev agent's exec WebSocket (a browser's handshake token)", async () => {
    const url = new URL(`${dev.addr.replace(/^http/, 'ws')}/v1/client/allocation/${allocId}/exec`);
    url.searchParams.set('task', 't');
    url.searchParams.set('command', JSON.stringify(['/bin/sh', '-c', 'echo "on $NOMAD_ALLOC_ID"']));
    url.searchParams.set('ws_handshake', 'true');
    const { out, last, code } = await new Promise<{ out: string; last: unknown; code: number }>((resolve, reject) => {
      const ws = new WebSocket(url);
      let text = '';
      let end: unknown;
      ws.on('open', () => ws.send(JSON.stringify({ version: 1, auth_token: dev.token })));
      ws.on('message', (m: Buffer) => {
        const f = JSON.parse(m.toString()) as { stdout?: { data?: string }; exited?: boolean };
        if (f.stdout?.data) text += Buffer.from(f.stdout.data, 'base64').toString();
        if (f.exited) end = f;
      });
      ws.on('close', (c) => resolve({ out: text, last: end, code: c }));
      ws.on('error', reject);
    });
    assert.equal(out, `on ${allocId}\n`);
    assert.deepEqual(last, { exited: true, result: { exit_code: 0 } });
    assert.equal(code, 1000);
  });
});
