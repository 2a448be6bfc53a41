// Secrets given in a volume file never come back out (docs/csi-rules.md
// scenario 16): a dev agent (debug logging) runs the hostpath plugin, a volume is
// created from a file with `secrets`, a workload claims it, the volume is
// deleted; the secret is sent to the plugin on create, publish and delete,
// and yet it appears in no CLI output (text or --json), no API read, no
// event and no file of the agent, its log included. Malformed HCL and JSON
// files name file:line:col, never quote a value, and submit nothing.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AllocationListStub } from '../../src/api/index.js';
import { AgentRun, BERTH, freePort, mountsUnder, ok, until, type BerthResult } from '../support/agent-run.js';

const dir = mkdtempSync('/tmp/bsec-');
const agentDir = path.join(dir, 'agent');
const SECRET = `zq-secret-${process.pid}-7f3a9c`;
let agent: AgentRun;
/** Everything any command printed, kept to grep at the end. */
const printed: string[] = [];

async function cli(args: string[]): Promise<BerthResult> {
  const r = await agent.cli(args);
  printed.push(`$ berth ${args.join(' ')}\n${r.stdout}${r.stderr}`);
  return r;
}

function writeFile(name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

function filesUnder(root: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(root, { withFileTypes: true })) {
    const p = path.join(root, e.name);
    if (e.isDirectory() && !mountsUnder(p).includes(p)) out.push(...filesUnder(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

before(async () => {
  mkdirSync(agentDir);
  agent = new AgentRun(['--dev', '--data-dir', agentDir, '--port', String(await freePort()), '--log-level', 'debug']);
  await agent.start();
});

after(async () => {
  await agent?.stop('SIGINT').catch(() => undefined);
  for (const m of mountsUnder(dir).reverse()) spawnSync('umount', ['-l', m]);
  rmSync(dir, { recursive: true, force: true });
});

describe('secrets in a volume file', { timeout: 150_000 }, () => {
  it('a malformed HCL volume file names file:line:col, does not quote the secret, and submits nothing', async () => {
    const bad = writeFile('bad-volume.hcl', `id = "leaky"\nplugin_id = "hostpath"\nsecrets {\n  token = "${SECRET}"\n}\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = 42\n`);
    const r = await cli(['volume', 'create', bad]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /bad-volume\.hcl:\d+:\d+: /);
    const schema = writeFile('schema-volume.hcl', `id = "leaky"\nplugin_id = "hostpath"\nsecrets {\n  token = "${SECRET}"\n}\ncapability {\n  access_mode = "${SECRET}"\n  attachment_mode = "file-system"\n}\n`);
    const s = await cli(['volume', 'create', schema]);
    assert.equal(s.code, 2, s.stderr);
    assert.match(s.stderr, /schema-volume\.hcl:7:\d+: capability\.access_mode: /);
    assert.doesNotMatch(s.stderr, new RegExp(SECRET));
    const list = JSON.parse(ok(await cli(['volume', 'status', '--json']), 'volume status')) as unknown[];
    assert.deepEqual(list, [], 'nothing was submitted');
  });

  it('a malformed JSON job file names file:line:col and submits nothing', async () => {
    const bad = writeFile('bad-job.json', '{\n  "id": "broken",\n  "groups": [\n    { "name": "g" "tasks": [] }\n  ]\n}\n');
    const r = await cli(['job', 'run', bad]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /bad-job\.json:4:\d+: /);
    const schema = writeFile('schema-job.json', '{\n  "id": "broken",\n  "groups": [\n    {\n      "name": "g",\n      "count": -1,\n      "tasks": [{ "name": "t", "driver": "raw_exec" }]\n    }\n  ]\n}\n');
    const s = await cli(['job', 'run', schema]);
    assert.equal(s.code, 2, s.stderr);
    assert.match(s.stderr, /schema-job\.json:6:\d+: groups\[0\]\.count: /);
    assert.equal((await cli(['job', 'status', 'broken'])).code, 6, 'no such job was submitted');
  });

  it('the secret reaches the plugin through create, claim and delete', async () => {
    const plugin = {
      id: 'hostpath-plugin',
      type: 'system',
      groups: [
        {
          name: 'plugin',
          tasks: [
            {
              name: 'plugin',
              driver: 'raw_exec',
              config: { command: process.execPath, args: [BERTH, 'plugin', 'hostpath', '--node-id', 'sec-node', '--data-dir', path.join(agentDir, 'hostpath'), '--log-level', 'debug'] },
              csiPlugin: { id: 'hostpath', type: 'monolith', mountDir: '/csi' },
            },
          ],
        },
      ],
    };
    ok(await cli(['job', 'run', writeFile('plugin.json', JSON.stringify(plugin))]), 'job run plugin');
    await until('the plugin healthy', async () => {
      const p = JSON.parse((await cli(['plugin', 'status', 'hostpath', '--json'])).stdout) as { ControllersHealthy?: number; NodesHealthy?: number };
      return p.ControllersHealthy === 1 && p.NodesHealthy === 1;
    });
    const volume = writeFile(
      'volume.hcl',
      `id = "secret-vol"\nplugin_id = "hostpath"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\nsecrets {\n  token = "${SECRET}"\n}\nparameters {\n  tier = "local"\n}\n`,
    );
    ok(await cli(['volume', 'create', volume]), 'volume create');
    const job = {
      id: 'user',
      type: 'batch',
      groups: [
        {
          name: 'main',
          restart: { attempts: 0, mode: 'fail' },
          volumes: { data: { type: 'csi', source: 'secret-vol', accessMode: 'single-node-writer', attachmentMode: 'file-system' } },
          tasks: [
            {
              name: 'main',
              driver: 'raw_exec',
              config: { command: '/bin/sh', args: ['-c', 'echo used > "$BERTH_TASK_DIR/data/used.txt"; env | sort'] },
              volumeMounts: [{ volume: 'data', destination: '/data' }],
            },
          ],
        },
      ],
    };
    ok(await cli(['job', 'run', writeFile('user.json', JSON.stringify(job))]), 'job run user');
    const alloc = await until('the workload complete', async () => {
      // Nomad's `job status -json`: a list of one job, its allocations as AllocationListStub.
      const [st] = JSON.parse((await cli(['job', 'status', 'user', '--json'])).stdout) as Array<{ Allocations: AllocationListStub[] }>;
      return st?.Allocations.find((a) => a.ClientStatus === 'complete');
    });
    // Every read a user can make, as text and as JSON.
    for (const args of [
      ['volume', 'status'],
      ['volume', 'status', 'secret-vol'],
      ['job', 'status', 'user'],
      ['alloc', 'status', alloc.ID],
      ['alloc', 'logs', alloc.ID],
      ['alloc', 'logs', '--stderr', alloc.ID],
      ['plugin', 'status', 'hostpath'],
      ['node', 'status'],
    ]) {
      ok(await cli(args), args.join(' '));
      ok(await cli([...args, '--json']), `${args.join(' ')} --json`);
    }
    // The raw API, as any script would read it, while the volume exists and was claimed.
    for (const p of ['/v1/volumes?type=csi', '/v1/volume/csi/secret-vol', '/v1/jobs', '/v1/job/user', '/v1/allocations', `/v1/allocation/${alloc.ID}`, '/v1/plugins?type=csi', '/v1/plugin/csi/hostpath', '/v1/volumes/csi/claims', '/v1/volumes/external?plugin_id=hostpath', '/v1/nodes', '/v1/metrics', '/v1/metrics?format=prometheus', '/v1/agent/self', '/v1/acl/token/self']) {
      const res = await fetch(agent.addr + p, { headers: { authorization: `Bearer ${agent.token}` } });
      const text = await res.text();
      assert.equal(res.status, 200, `GET ${p}: ${text}`);
      printed.push(`GET ${p}\n${text}`);
    }
    ok(await cli(['job', 'stop', 'user']), 'job stop');
    await until('the claim released', async () => (JSON.parse((await cli(['volume', 'status', 'secret-vol', '--json'])).stdout) as { BerthClaims: unknown[] }).BerthClaims.length === 0);
    ok(await cli(['volume', 'delete', 'secret-vol']), 'volume delete');
  });

  it('the secret is in no CLI output, API read, event or agent file', async () => {
    // The whole event history (the stream follows until Ctrl-C).
    const events = spawnSync('timeout', ['-s', 'INT', '3', process.execPath, BERTH, 'event', 'stream', '-n', '*', '--index', '0', '--json'], {
      env: { ...process.env, BERTH_ADDR: agent.addr, BERTH_TOKEN: agent.token },
      encoding: 'utf8',
    });
    assert.match(events.stdout, /"Topic":"CSIVolume"/, 'the event history holds the volume');
    printed.push(events.stdout, events.stderr);
    const leaks = printed.filter((text) => text.includes(SECRET));
    assert.deepEqual(leaks, []);
    assert.ok(!agent.stdout.includes(SECRET) && !agent.stderr.includes(SECRET), 'agent output');

    // Stop the agent so that its log is complete, then read every file it left.
    assert.equal((await agent.stop('SIGINT')).code, 0);
    const files = filesUnder(agentDir);
    assert.ok(files.some((f) => f.endsWith('.log')), `the agent wrote a log file: ${files.join(', ')}`);
    // The server's state database is the one place that must hold the secret:
    // the server sends it to the plugin on publish and delete, possibly after
    // a restart. Every other file (client state, task logs, plugin state,
    // agent.env, the agent log) must not.
    const checked = files.filter((f) => !/\/state\.db(-wal|-shm|-journal)?$/.test(f));
    const holding = checked.filter((f) => statSync(f).size > 0 && readFileSync(f).includes(SECRET));
    assert.deepEqual(holding, []);
  });
});
