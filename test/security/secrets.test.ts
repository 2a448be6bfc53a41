// A secret given in a volume file (`secrets { ... }`) never comes back out
// (issue 12), on a server + client pair logging at debug: the volume's whole
// life (create, snapshot, expand, a claim by a job, detach, delete) and its
// refusals (oversized secrets, a bad external_id next to a secret) go through
// the CLI (text and --json) and the API, and then the secret is in no output,
// no API answer, no event, no agent log and no file under the data dirs, the
// server's state database excepted (the server must keep it to send it to
// the plugin on publish and delete, possibly after a restart).

import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { until } from '../support/agent-run.js';
import { filesUnder, READER, SecurityCluster } from './_cluster.js';

const SECRET = `zq-vol-secret-${process.pid}-b41e7`;
let c: SecurityCluster;

function volumeFile(id: string, extra = ''): string {
  return `id = "${id}"\nname = "${id}"\ntype = "csi"\nplugin_id = "hostpath"\ncapacity_min = "10MiB"\ncapacity_max = "1GiB"\ncapability {\n  access_mode     = "single-node-writer"\n  attachment_mode = "file-system"\n}\nsecrets {\n  token = "${SECRET}"\n}\n${extra}`;
}

before(async () => {
  c = await new SecurityCluster().start();
  await c.runPlugin();
});

after(async () => {
  await c?.destroy();
});

describe('a volume secret stays secret', { timeout: 240_000 }, () => {
  it('through create, snapshot, expand, a claim, detach and delete', async () => {
    assert.equal((await c.cli(['volume', 'create', c.file('vol.hcl', volumeFile('sec-vol'))])).code, 0, c.printed.at(-1));
    const snap = await c.cli(['volume', 'snapshot', 'create', 'sec-vol', 'nightly', '--json']);
    await c.cli(['volume', 'snapshot', 'list', '--plugin', 'hostpath']);
    await c.cli(['volume', 'snapshot', 'list', '--plugin', 'hostpath', '--json']);
    await c.cli(['volume', 'expand', 'sec-vol', '20MiB']);
    const job = {
      id: 'sec-user',
      type: 'batch',
      groups: [
        {
          name: 'main',
          restart: { attempts: 0, mode: 'fail' },
          volumes: { data: { type: 'csi', source: 'sec-vol', accessMode: 'single-node-writer', attachmentMode: 'file-system' } },
          tasks: [{ name: 'main', driver: 'raw_exec', config: { command: '/bin/sh', args: ['-c', 'echo used > "$BERTH_TASK_DIR/data/used.txt"; env | sort'] }, volumeMounts: [{ volume: 'data', destination: '/data' }] }],
        },
      ],
    };
    assert.equal((await c.cli(['job', 'run', c.file('user.json', JSON.stringify(job))])).code, 0, c.printed.at(-1));
    const [alloc] = (await c.get<Array<{ ID: string; NodeID: string }>>('/v1/job/sec-user/allocations')).body ?? [];
    assert.ok(alloc, 'the job was placed');
    await until('the claim released', async () => ((await c.get<{ BerthClaims: unknown[] }>('/v1/volume/csi/sec-vol')).body?.BerthClaims ?? [1]).length === 0);

    // Every read a user can make, as text and as JSON, with both tokens.
    for (const args of [
      ['volume', 'status'],
      ['volume', 'status', 'sec-vol'],
      ['job', 'status', 'sec-user'],
      ['alloc', 'status', alloc.ID],
      ['alloc', 'logs', alloc.ID],
      ['alloc', 'logs', '--stderr', alloc.ID],
      ['plugin', 'status', 'hostpath'],
      ['node', 'status'],
      ['node', 'status', alloc.NodeID],
    ]) {
      assert.equal((await c.cli(args)).code, 0, c.printed.at(-1));
      assert.equal((await c.cli([...args, '--json'])).code, 0, c.printed.at(-1));
      await c.cli(args, { token: READER });
    }
    for (const p of [
      '/v1/volumes?type=csi',
      '/v1/volume/csi/sec-vol',
      '/v1/volumes/snapshot?plugin_id=hostpath',
      '/v1/volumes/csi/claims',
      '/v1/volume/csi/sec-vol/usage',
      '/v1/jobs',
      '/v1/job/sec-user',
      '/v1/allocations',
      `/v1/allocation/${alloc.ID}`,
      '/v1/evaluations',
      '/v1/plugins?type=csi',
      '/v1/plugin/csi/hostpath',
      '/v1/volumes/external?plugin_id=hostpath',
      '/v1/nodes',
      `/v1/node/${alloc.NodeID}`,
      `/v1/node/${alloc.NodeID}/allocations`,
      '/v1/metrics',
      '/v1/metrics?format=prometheus',
      '/v1/agent/self',
      '/v1/acl/token/self',
    ]) {
      const r = await c.get(p);
      assert.equal(r.status, 200, `GET ${p}: ${r.text}`);
    }
    for (const p of ['/v1/metrics?format=prometheus', `/v1/client/fs/logs/${alloc.ID}?task=main&type=stdout`]) {
      const r = await c.request('GET', p, { base: c.client.addr });
      assert.equal(r.status, 200, `client GET ${p}: ${r.text}`);
    }

    const snapshotId = (JSON.parse(snap.stdout || '{}') as { snapshot?: { id?: string }; id?: string }).snapshot?.id ?? (JSON.parse(snap.stdout || '{}') as { id?: string }).id;
    if (snapshotId) await c.cli(['volume', 'snapshot', 'delete', '--plugin', 'hostpath', snapshotId]);
    await c.cli(['volume', 'detach', 'sec-vol', alloc.NodeID]);
    assert.equal((await c.cli(['job', 'stop', '--purge', 'sec-user'])).code, 0, c.printed.at(-1));
    assert.equal((await c.cli(['volume', 'delete', 'sec-vol'])).code, 0, c.printed.at(-1));
  });

  it('through refusals: secrets over the limit, a bad external_id, a malformed file', async () => {
    const big = c.file('big-secret.hcl', volumeFile('sec-big').replace(`token = "${SECRET}"`, `token = "${SECRET}"\n  padding = "${'x'.repeat(5000)}"`));
    const r1 = await c.cli(['volume', 'create', big]);
    assert.notEqual(r1.code, 0, 'secrets over 4 KiB are refused');
    assert.match(r1.stderr, /secret/i, 'the refusal names the secrets');
    const bad = c.file('bad.hcl', `${volumeFile('sec-bad')}capability {\n  access_mode = "${SECRET}"\n  attachment_mode = "file-system"\n}\n`);
    const r3 = await c.cli(['volume', 'create', bad]);
    assert.equal(r3.code, 2, r3.stderr);
    assert.match(r3.stderr, /bad\.hcl:\d+:\d+: /);
    assert.deepEqual((await c.get<unknown[]>('/v1/volumes?type=csi')).body, [], 'nothing was registered');
    const reg = c.file('bad-ext.hcl', volumeFile('sec-ext', `external_id = "${'e'.repeat(300)}"\n`));
    const r2 = await c.cli(['volume', 'register', reg]);
    assert.notEqual(r2.code, 0, 'a 300-byte external_id is refused');
    assert.match(r2.stderr, /external_?id/i, 'the refusal names external_id');
  });

  it('is in no output, answer, event, log or file (the state database excepted)', async () => {
    // The whole event history.
    const ev = await c.cli(['event', 'stream', '-n', '*', '--index', '0', '--until-now', '--json']);
    assert.equal(ev.code, 0, ev.stderr);
    assert.match(ev.stdout, /"Topic":"CSIVolume"/, 'the event history holds the volume');
    const leaks = c.printed.filter((t) => t.includes(SECRET)).map((t) => t.slice(0, 300));
    assert.deepEqual(leaks, [], 'CLI outputs and API answers');
    assert.ok(c.printed.length > 60, `${c.printed.length} outputs checked`);

    assert.deepEqual(await c.stop(), [0, 0], 'both agents drained');
    for (const a of [c.server, c.client]) assert.ok(!a.stdout.includes(SECRET) && !a.stderr.includes(SECRET), `agent output ${a.args.join(' ')}`);
    const files = [...filesUnder(c.serverDir), ...filesUnder(c.clientDir), ...filesUnder(c.hostpathDir)];
    assert.ok(files.some((f) => f.endsWith('.log')), `the agents wrote logs: ${files.map((f) => path.relative(c.root, f)).join(', ')}`);
    const checked = files.filter((f) => !(f.startsWith(c.serverDir) && /\/state\.db(-wal|-shm|-journal)?$/.test(f)));
    const holding = checked.filter((f) => statSync(f).size > 0 && readFileSync(f).includes(SECRET)).map((f) => path.relative(c.root, f));
    assert.deepEqual(holding, [], `${checked.length} files checked`);
  });
});
