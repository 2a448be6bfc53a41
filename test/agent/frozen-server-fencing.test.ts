// A server frozen (SIGSTOP) long enough that its client fences: the client
// stops the single-writer task on its own (stop_after_server_disconnect), as
// designed. Once the server is back, the replacement is placed as soon as
// the servers hear of the fenced stop: the job's reschedule delay (an hour
// here) does not apply, as a fenced stop is no failure of the task. The
// task's events say why it stopped and what comes next.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import { mountsUnder, pidsWith, until } from '../support/runtime-cluster.js';
import { BERTH, startAgent, tempDir, type AgentUnderTest, type Result } from './_agent.js';

const MGMT = 'x38f-mgmt-token-0123456789';
const NODE = 'x38f-node-token-0123456789';
const MARKER = `x38-fenced-writer-${process.pid}`;

function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

describe('a single-writer task fenced while its server was frozen', () => {
  let dir = '';
  let server: AgentUnderTest;
  let client: AgentUnderTest;

  before(async () => {
    dir = await tempDir('bxz-');
    writeFileSync(path.join(dir, 'nodes.tokens'), `${NODE}\n`);
    writeFileSync(path.join(dir, 'server.hcl'), `data_dir = "server-data"\nports {\n  http = 0\n}\ntokens {\n  management = ["${MGMT}"]\n  node_file  = "nodes.tokens"\n}\n`);
    server = await startAgent(['--server', '--config', path.join(dir, 'server.hcl')]).ready(false);
    server.token = MGMT;
    const config = path.join(dir, 'c1.json');
    writeFileSync(
      config,
      JSON.stringify({
        data_dir: path.join(dir, 'c1'),
        ports: { http: 0 },
        client: { node_name: 'z1', token: NODE, options: { 'driver.raw_exec.enable': true }, stop_after_server_disconnect: '3s' },
        csi: { probe_interval: '1s' },
      }),
    );
    client = await startAgent(['--client', '--server-address', server.addr, '--config', config]).ready(false);
    client.token = MGMT;
  });

  after(async () => {
    if (server?.running) server.child.kill('SIGCONT');
    await server?.cli(['job', 'stop', '--purge', 'writer']).catch(() => undefined);
    await client?.stop('SIGINT').catch(() => undefined);
    await server?.stop('SIGINT').catch(() => undefined);
    for (const pid of pidsWith(MARKER)) spawnSync('kill', ['-9', String(pid)]);
    for (const m of mountsUnder(dir)) spawnSync('umount', ['-l', m]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('its replacement is placed once the server is back, without the reschedule delay; the Fenced event says what comes next', { timeout: 240_000 }, async () => {
    await until('the client ready', async () => (await server.get<Api.NodeListStub[]>('/v1/nodes')).some((n) => n.Status === 'ready'), 60_000);
    const args = ['plugin', 'hostpath', '--endpoint', '"$CSI_ENDPOINT"', '--node-id', 'z1', '--data-dir', path.join(dir, 'hp')];
    writeFileSync(
      path.join(dir, 'plugin.hcl'),
      `job "hostpath-plugin" {\n  type = "system"\n  group "plugin" {\n    task "plugin" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/sh"\n        args    = ["-c", ${JSON.stringify(`exec ${process.execPath} ${BERTH} ${args.join(' ')}`)}]\n      }\n      csi_plugin {\n        id        = "hostpath"\n        type      = "monolith"\n        mount_dir = "/csi"\n      }\n    }\n  }\n}\n`,
    );
    ok(await server.cli(['job', 'run', path.join(dir, 'plugin.hcl')]), 'job run plugin');
    await until('the plugin healthy', async () => {
      const p = await server.get<Api.CSIPlugin>('/v1/plugin/csi/hostpath').catch(() => undefined);
      return p !== undefined && p.NodesHealthy === 1 && p.ControllersHealthy === 1;
    }, 90_000);
    writeFileSync(path.join(dir, 'volume.hcl'), `id = "fenced"\nname = "fenced"\ntype = "csi"\nplugin_id = "hostpath"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\n`);
    ok(await server.cli(['volume', 'create', path.join(dir, 'volume.hcl')]), 'volume create');
    writeFileSync(
      path.join(dir, 'writer.hcl'),
      `job "writer" {\n  group "w" {\n    reschedule {\n      delay     = "1h"\n      unlimited = true\n    }\n    volume "data" {\n      type = "csi"\n      source = "fenced"\n      access_mode = "single-node-writer"\n      attachment_mode = "file-system"\n    }\n    task "write" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/sh"\n        args = ["-c", "while :; do sleep 0.1; done # ${MARKER}"]\n      }\n      volume_mount {\n        volume = "data"\n        destination = "/data"\n      }\n    }\n  }\n}\n`,
    );
    ok(await server.cli(['job', 'run', '--detach', path.join(dir, 'writer.hcl')]), 'job run writer');
    const first = await until('the writer running', async () => (await server.get<Api.AllocationListStub[]>('/v1/job/writer/allocations')).find((a) => a.ClientStatus === 'running'), 60_000);
    await until('the writer process', () => pidsWith(MARKER).length > 0 || undefined);

    // The server freezes; the client, without it for 3 s, stops the writer itself.
    server.child.kill('SIGSTOP');
    await until('the client to fence the writer', () => pidsWith(MARKER).length === 0 || undefined, 60_000);
    server.child.kill('SIGCONT');

    const replacement = await until(
      'the replacement running',
      async () => (await server.get<Api.AllocationListStub[]>('/v1/job/writer/allocations')).find((a) => a.ID !== first.ID && a.ClientStatus === 'running'),
      90_000,
    ).catch(async (err: unknown) => {
      const seen = await Promise.all(['/v1/job/writer/allocations', '/v1/job/writer/evaluations'].map((p) => server.get(p).catch((e: unknown) => String(e))));
      throw new Error(`${String(err)}\n${JSON.stringify(seen, null, 1).slice(0, 8000)}`);
    });
    assert.ok(replacement);
    const old = await server.get<Api.Allocation>(`/v1/allocation/${first.ID}`);
    const fenced = old.TaskStates?.['write']?.Events?.find((e) => e.Type === 'Fenced');
    assert.ok(fenced, `the old task's events: ${JSON.stringify(old.TaskStates?.['write']?.Events?.map((e) => e.Type))}`);
    assert.match(fenced.DisplayMessage ?? fenced.Message ?? '', /place a replacement/);
    const status = ok(await server.cli(['alloc', 'status', first.ID]), 'alloc status');
    assert.match(status.stdout, /Fenced/);
    assert.match(status.stdout, /replaced at once: its node stopped its task after losing the servers|place a replacement/);
  });
});
