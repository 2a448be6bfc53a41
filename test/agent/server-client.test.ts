// `berth agent --server` and `berth agent --client --server-address` as two
// processes with config files (HCL for the server, JSON for the client): the
// client joins, runs a raw_exec task (enabled by its config), and serves that
// task's logs and exec on its own listener, found through the server. The
// client's config holds no API tokens: its listener asks the server.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import { mountsUnder, pidsWith, until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest, type Result } from './_agent.js';

const MGMT = 'x2-mgmt-token-0123456789';
const READER = 'x2-read-token-0123456789';
const NODE = 'x2-node-token-0123456789';
const MARKER = `x2-joined-task-${process.pid}`;

function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

describe('berth agent --server and --client with config files', () => {
  let dir = '';
  let server: AgentUnderTest;
  let client: AgentUnderTest;

  before(async () => {
    dir = await tempDir('bxs-');
    writeFileSync(path.join(dir, 'nodes.tokens'), `# node agents\n${NODE}\n`);
    writeFileSync(
      path.join(dir, 'server.hcl'),
      `data_dir = "server-data"\nports {\n  http = 0\n}\ntokens {\n  management = ["${MGMT}"]\n  read_only  = ["${READER}"]\n  node_file  = "nodes.tokens"\n}\n`,
    );
    server = await startAgent(['--server', '--config', path.join(dir, 'server.hcl')]).ready(false);
    writeFileSync(
      path.join(dir, 'client.json'),
      JSON.stringify({
        data_dir: path.join(dir, 'c1'),
        ports: { http: 0 },
        client: { node_name: 'x2-client-1', token: NODE, options: { 'driver.raw_exec.enable': true } },
        csi: { probe_interval: '1s' },
      }),
    );
    client = await startAgent(['--client', '--server-address', server.addr, '--config', path.join(dir, 'client.json')]).ready(false);
    server.token = MGMT;
    client.token = MGMT;
  });

  after(async () => {
    await client?.stop('SIGINT').catch(() => undefined);
    await server?.stop('SIGINT').catch(() => undefined);
    for (const m of mountsUnder(dir)) spawnSync('umount', ['-l', m]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('the client joins the server and reports its own listener as the node address', async () => {
    assert.notEqual(client.addr, server.addr);
    const stub = await until('the client node to be ready', async () => (await server.get<Api.NodeListStub[]>('/v1/nodes')).find((n) => n.Name === 'x2-client-1' && n.Status === 'ready'));
    const node = await server.get<Api.Node>(`/v1/node/${stub.ID}`);
    assert.equal(`http://${node.HTTPAddr}`, client.addr);
    assert.equal(node.Drivers?.['raw_exec']?.Detected, true, 'raw_exec enabled by the config');
    const status = ok(await server.cli(['node', 'status']), 'node status');
    assert.match(status.stdout, /\sdc1\s+x2-client-1\s+<none>\s+false\s+eligible\s+ready$/m);
  });

  it('runs a job there; alloc logs and alloc exec reach the task through the client agent', async () => {
    const job = path.join(dir, 'hello.hcl');
    writeFileSync(
      job,
      `job "hello" {\n  group "g" {\n    task "hi" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/sh"\n        args    = ["-c", "echo hello from $BERTH_TASK_NAME; while true; do sleep 1; done # ${MARKER}"]\n      }\n    }\n  }\n}\n`,
    );
    ok(await server.cli(['job', 'run', job]), 'job run');
    const [alloc] = await server.get<Api.AllocationListStub[]>('/v1/job/hello/allocations');
    await until('the task to print', async () => (await server.cli(['alloc', 'logs', alloc!.ID])).stdout === 'hello from hi\n');
    const exec = await server.cli(['alloc', 'exec', alloc!.ID, '--', 'sh', '-c', 'echo "$BERTH_ALLOC_ID"; exit 3']);
    assert.equal(exec.code, 3, exec.stderr);
    assert.equal(exec.stdout, `${alloc!.ID}\n`);
    const berth = await server.cli(['alloc', 'exec', alloc!.ID, '--', 'sh', '-c', 'berth --version']);
    assert.equal(berth.code, 0, `a client agent's task has berth on its PATH (as a dev agent's has): ${berth.stderr}`);
    assert.match(berth.stdout, /^\d+\.\d+\.\d+/);
    const reader = await server.cli(['alloc', 'exec', alloc!.ID, 'true'], { token: READER });
    assert.equal(reader.code, 5, 'a read-only token may not exec');
    assert.match(reader.stderr, /^error: permission denied/);
  });

  it("the client's listener takes the cluster's tokens (asking the server) and serves its own /v1/metrics", async () => {
    assert.equal((await fetch(`${client.addr}/v1/metrics?format=prometheus`)).status, 401);
    assert.equal((await fetch(`${client.addr}/v1/metrics?format=prometheus`, { headers: { authorization: 'Bearer not-a-token-of-this-cluster' } })).status, 401);
    const res = await fetch(`${client.addr}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${READER}` } });
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /^berth_client_allocations\{status="running"\} 1$/m);
    assert.match(text, /^# HELP berth_csi_calls_total /m);
    assert.match(text, /^berth_agent_memory_reclaims \d+$/m);
  });

  it('SIGTERM stops a client agent leaving its task running; the restarted agent reattaches and serves it on its new address', async () => {
    const before = pidsWith(MARKER);
    assert.ok(before.length > 0);
    const stopped = await client.stop('SIGTERM');
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.match(stopped.stdout, /Caught SIGTERM; stopping the agent, leaving tasks running/);
    assert.deepEqual(pidsWith(MARKER), before, 'the task kept running without its agent');
    const oldAddr = client.addr;
    client = await startAgent(['--client', '--server-address', server.addr, '--config', path.join(dir, 'client.json')]).ready(false);
    client.token = MGMT;
    await until('the node to report the new listener', async () => {
      const stub = (await server.get<Api.NodeListStub[]>('/v1/nodes')).find((n) => n.Name === 'x2-client-1');
      const node = stub && (await server.get<Api.Node>(`/v1/node/${stub.ID}`));
      const addr = node ? `http://${node.HTTPAddr}` : '';
      return node?.Status === 'ready' && addr === client.addr && addr !== oldAddr;
    });
    const [alloc] = await server.get<Api.AllocationListStub[]>('/v1/job/hello/allocations');
    await until('the reattached task to serve its logs', async () => (await server.cli(['alloc', 'logs', alloc!.ID])).stdout === 'hello from hi\n');
    assert.deepEqual(pidsWith(MARKER), before, 'the same process');
  });

  it('SIGINT drains the client (its task stopped) and both agents exit 0', async () => {
    assert.ok(pidsWith(MARKER).length > 0);
    const c = await client.stop('SIGINT');
    assert.equal(c.code, 0, c.stderr);
    assert.deepEqual(pidsWith(MARKER), [], 'the task was stopped');
    assert.deepEqual(mountsUnder(path.join(dir, 'c1')), [], 'nothing left mounted');
    const s = await server.stop('SIGTERM');
    assert.equal(s.code, 0, s.stderr);
  });
});
