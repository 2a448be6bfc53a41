// Hostile sizes and ordinary mistakes, as a user meets them through the real
// `berth` binary: each gets a clear error and a non-zero exit, and nothing
// changes on the server.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as nomad from '../../src/api/index.js';
import type { Node } from '../../src/structs/index.js';
import { reportAllocations, startCluster, TOKENS, type Cluster } from './_cluster.js';
import { nomadJob } from '../support/nomad-jobs.js';

let c: Cluster;
let node: Node;
let files: string;
const file = (name: string, text: string): string => {
  const path = join(files, name);
  writeFileSync(path, text);
  return path;
};
const jobJson = (extra: Record<string, unknown> = {}, task: Record<string, unknown> = { driver: 'raw_exec', config: { command: '/bin/true' } }): string =>
  JSON.stringify({ id: 'web', ...extra, groups: [{ name: 'g', tasks: [{ name: 't', ...task }], ...((extra['group'] as object) ?? {}) }] });

before(async () => {
  c = await startCluster();
  files = mkdtempSync(join(tmpdir(), 'berth-hostile-'));
  node = await c.registerNode('node-1', { nodePlugin: 'hostpath' });
});
after(async () => {
  await c.close();
  rmSync(files, { recursive: true, force: true });
});

async function noJobs(): Promise<void> {
  const { body } = await c.call<unknown[]>('GET', '/v1/jobs');
  assert.deepEqual(body, [], 'nothing was registered');
}

describe('berth with hostile files', () => {
  it('10,000-deep JSON: the place it nests too deep, not "Maximum call stack size exceeded"', async () => {
    const r = await c.cli(['job', 'run', file('deep.json', `{"id": "web",\n "x": ${'['.repeat(10_000)}${']'.repeat(10_000)}}`)]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /deep\.json:2:\d+: nesting deeper than 64 at line 2 col \d+/);
    assert.doesNotMatch(r.stderr + r.stdout, /call stack/);
    await noJobs();
  });

  it('a 5 MB job file is refused before anything is sent, naming the limit', async () => {
    const r = await c.cli(['job', 'run', file('big.json', jobJson({ padding: 'x'.repeat(5_000_000) }))]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /big\.json is too large: \d+ bytes; job and volume files are at most 1048576 bytes/);
    assert.doesNotMatch(r.stderr, /EPIPE/);
    await noJobs();
  });

  it('count = 1000000000000 is refused at validation, with the limit', async () => {
    const r = await c.cli(['job', 'run', file('count.hcl', 'job "web" {\n  group "g" {\n    count = 1000000000000\n    task "t" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/true"\n      }\n    }\n  }\n}\n')]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /count\.hcl:3:\d+: count: count is at most 1000 per group/);
    await noJobs();
  });

  it('job { ... } without a label is refused, not run as job "0"', async () => {
    const r = await c.cli(['job', 'validate', file('nolabel.hcl', 'job {\n  group "g" {\n    task "t" {\n      driver = "raw_exec"\n    }\n  }\n}\n')]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /nolabel\.hcl:1:1: job: the job block needs its ID as a label/);
  });

  it('a __proto__ key is refused like any unknown field', async () => {
    const r = await c.cli(['job', 'validate', file('proto.json', jobJson().replace('"id":"web",', '"id":"web","__proto__":{"type":"system"},'))]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /unknown field "__proto__"/);
  });

  it('a raw_exec task with no command fails job validate and job run, naming config.command', async () => {
    const f = file('nocmd.json', jobJson({}, { driver: 'raw_exec', config: { args: ['-c', 'true'] } }));
    for (const cmd of ['validate', 'run']) {
      const r = await c.cli(['job', cmd, f]);
      assert.notEqual(r.code, 0, cmd);
      assert.match(r.stderr, /groups\[0\]\.tasks\[0\]\.config\.command: is required/, cmd);
    }
    await noJobs();
  });
});

describe('berth with jobs nobody can run', () => {
  it('a system job nobody can run exits 1, as the same service job does', async () => {
    for (const type of ['service', 'system']) {
      const r = await c.cli(['job', 'run', file(`${type}.json`, JSON.stringify({ id: `nowhere-${type}`, type, groups: [{ name: 'g', tasks: [{ name: 't', driver: 'podman' }] }] }))]);
      assert.equal(r.code, 1, `${type}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /placement failed/, type);
    }
  });
});

describe('berth volume with oversized fields', () => {
  it('a 300-byte external_id and 5 KiB of secrets: HTTP 400 naming the field, not 503', async () => {
    const spec = (extra: string): string =>
      `id = "v1"\nplugin_id = "hostpath"\n${extra}\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\n`;
    const long = await c.cli(['volume', 'register', file('long.hcl', spec(`external_id = "${'x'.repeat(300)}"`))]);
    assert.notEqual(long.code, 0);
    assert.match(long.stderr, /externalId is 300 bytes; the CSI limit is 128/);
    const secret = 's'.repeat(5000);
    const big = await c.cli(['volume', 'register', file('secrets.hcl', spec(`external_id = "ext-1"\nsecrets {\n  key = "${secret}"\n}`))]);
    assert.notEqual(big.code, 0);
    assert.match(big.stderr, /secrets hold 5003 bytes; the CSI limit is 4096/);
    assert.ok(!(big.stderr + big.stdout).includes(secret), 'the secret is not shown');
    const api = await c.call<string>('PUT', '/v1/volume/csi/v1', {
      allowError: true,
      body: { Volumes: [{ ID: 'v1', PluginID: 'hostpath', ExternalID: 'x'.repeat(300), RequestedCapabilities: [{ AccessMode: 'single-node-writer', AttachmentMode: 'file-system' }] }] },
    });
    assert.equal(api.status, 400);
    assert.match(api.text, /externalId is 300 bytes; the CSI limit is 128/);
  });
});

describe('the API with hostile bodies', () => {
  it('a body nested 10,000 deep is 400 with the position; an oversized one is 413 naming the limit; __proto__ is 400', async () => {
    const post = (body: string): Promise<Response> =>
      fetch(`${c.url}/v1/jobs`, { method: 'PUT', headers: { authorization: `Bearer cli-mgmt-token-0123456789`, 'content-type': 'application/json', accept: 'application/json' }, body });
    const deep = await post(`{"Job": ${'['.repeat(10_000)}${']'.repeat(10_000)}}`);
    assert.equal(deep.status, 400);
    assert.match(((await deep.json()) as { message: string }).message, /^request body: nesting deeper than 64 at line 1 col \d+$/);
    const big = await post(JSON.stringify({ Job: { ID: 'x', Meta: { pad: 'x'.repeat(5 * 1024 * 1024) } } }));
    assert.equal(big.status, 413);
    assert.equal(((await big.json()) as { message: string }).message, 'request body too large (limit 4194304 bytes)');
    const proto = await post('{"Job": {"ID": "web", "__proto__": {"Type": "system"}, "TaskGroups": []}}');
    assert.equal(proto.status, 400);
    for (const count of [10_000_000, 1_000_000_000_000]) {
      const job = nomadJob({ id: 'web', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' } }] }] });
      (job.TaskGroups?.[0] as nomad.TaskGroup).Count = count;
      const huge = await post(JSON.stringify({ Job: job }));
      assert.equal(huge.status, 400);
      assert.match(((await huge.json()) as { message: string }).message, /Job\.TaskGroups\[0\]\.Count: count is at most 1000 per group/);
    }
    const { body } = await c.call<nomad.JobListStub[]>('GET', '/v1/jobs');
    assert.deepEqual(body.filter((j) => j.ID === 'x' || j.ID === 'web'), [], 'nothing was registered');
  });
});

describe('berth volume detach under a live writer', () => {
  it('is refused with the allocation named and a non-zero exit; nothing is released', async () => {
    const reg = await c.cli(['volume', 'register', file('held.hcl', 'id = "held"\nplugin_id = "hostpath"\nexternal_id = "held-ext"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\n')]);
    assert.equal(reg.code, 0, reg.stderr);
    const job = JSON.stringify({
      id: 'writer',
      groups: [{ name: 'g', volumes: { d: { type: 'csi', source: 'held' } }, tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' }, volumeMounts: [{ volume: 'd', destination: '/d' }] }] }],
    });
    const run = await c.cli(['job', 'run', '--detach', file('writer.json', job)]);
    assert.equal(run.code, 0, run.stderr);
    const [alloc] = (await c.call<nomad.AllocationListStub[]>('GET', '/v1/job/writer/allocations')).body;
    await c.call('POST', '/v1/volume/csi/held/claim', { token: TOKENS.node, body: { allocId: alloc!.ID, mode: 'write' } });
    await reportAllocations(c, node.id, 'running');
    const r = await c.cli(['volume', 'detach', 'held', node.id.slice(0, 8)]);
    assert.notEqual(r.code, 0, r.stdout);
    assert.match(r.stderr, new RegExp(`volume held is in use on node ${node.id} by allocation ${alloc!.ID} \\(job writer, running\\); stop it first, or detach with force`));
    const { body } = await c.call<nomad.CSIVolume>('GET', '/v1/volume/csi/held');
    assert.deepEqual(body.BerthClaims.map((cl) => cl.State), ['taken']);
    const help = await c.cli(['volume', 'detach', '--help']);
    assert.match(help.stdout, /--force/);
  });
});
