// `berth namespace apply|list|status|inspect|delete` as the real binary
// against a real Server, in Nomad's output (Nomad 1.1.2's, checked by hand
// against its binary), and the namespace a job goes into: refused when it
// does not exist, listed only under its own (`-namespace`, $NOMAD_NAMESPACE,
// `*`), and holding its namespace until it has stopped.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Namespace } from '../../src/api/index.js';
import type { Allocation } from '../../src/structs/index.js';
import { json } from './_berth.js';
import { reportAllocations, startCluster, TOKENS, type Cluster } from './_cluster.js';

let c: Cluster;
let dir: string;
before(async () => {
  c = await startCluster();
  dir = mkdtempSync(join(tmpdir(), 'berth-ns-cli-'));
});
after(async () => {
  await c?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A raw_exec job file, in `namespace` when given. */
function jobFile(name: string, namespace?: string): string {
  const file = join(dir, `${name}-${namespace ?? 'none'}.hcl`);
  writeFileSync(
    file,
    `job "${name}" {\n${namespace ? `  namespace = "${namespace}"\n` : ''}  datacenters = ["dc1"]\n  group "g" {\n    task "t" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/sleep"\n        args    = ["60"]\n      }\n    }\n  }\n}\n`,
  );
  return file;
}

describe('berth namespace', () => {
  it('applies, lists, shows and inspects namespaces as Nomad does; apply by name keeps what the flags do not set', async () => {
    const first = await c.cli(['namespace', 'list']);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout, 'Name     Description\ndefault  Default shared namespace\n');

    const applied = await c.cli(['namespace', 'apply', '-description', 'Prod stuff', 'prod']);
    assert.equal(applied.code, 0, applied.stderr);
    assert.equal(applied.stdout, 'Successfully applied namespace "prod"!\n');
    assert.equal((await c.cli(['namespace', 'list'])).stdout, 'Name     Description\ndefault  Default shared namespace\nprod     Prod stuff\n');
    assert.equal((await c.cli(['namespace', 'status', 'prod'])).stdout, 'Name        = prod\nDescription = Prod stuff\nQuota       = <none>\n');

    // A JSON file is the whole namespace, meta too; status shows the meta sorted.
    const spec = join(dir, 'prod.json');
    writeFileSync(spec, JSON.stringify({ Name: 'prod', Description: 'Production', Meta: { team: 'web', owner: 'ops' } }));
    assert.equal((await c.cli(['namespace', 'apply', '-json', spec])).code, 0);
    // By name, only the description changes: the meta stays.
    assert.equal((await c.cli(['namespace', 'apply', '-description', 'Production services', 'prod'])).code, 0);
    const status = await c.cli(['namespace', 'status', 'pro']);
    assert.equal(status.code, 0, status.stderr);
    assert.equal(status.stdout, 'Name        = prod\nDescription = Production services\nQuota       = <none>\n\nMetadata\nowner = ops\nteam  = web\n');
    const inspected = json<Namespace>(await c.cli(['namespace', 'inspect', 'prod']));
    assert.deepEqual([inspected.Name, inspected.Meta], ['prod', { owner: 'ops', team: 'web' }]);
    assert.ok(inspected.ModifyIndex > inspected.CreateIndex, 'updated after it was created');
    assert.equal(json<Namespace[]>(await c.cli(['namespace', 'list', '--json'])).length, 2);
  });

  it("refuses what Nomad refuses, in Nomad's words, changing nothing", async () => {
    const bad = await c.cli(['namespace', 'apply', 'bad_name']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /Invalid namespace "bad_name": invalid name "bad_name". Must match regex \^\[a-zA-Z0-9-\]\{1,128\}\$/);
    const quota = await c.cli(['namespace', 'apply', '-quota', 'q', 'qq']);
    assert.match(quota.stderr, /namespace "qq" using non-existent quota "q"/);
    assert.match((await c.cli(['namespace', 'delete', 'default'])).stderr, /can not delete default namespace/);
    const missing = await c.cli(['namespace', 'status', 'nope']);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /Namespace "nope" matched no namespaces/);
    assert.equal((await c.cli(['namespace', 'apply', 'reader'], { token: TOKENS.readOnly })).code, 5, 'a read-only token may not');
    assert.deepEqual(json<Namespace[]>(await c.cli(['namespace', 'list', '--json'])).map((n) => n.Name), ['default', 'prod']);
  });

  it('refuses a job in an unknown namespace; one in a namespace that exists runs, is listed only there, and holds the namespace until it stops', async () => {
    const refused = await c.cli(['job', 'run', '-detach', jobFile('web', 'nope')]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /job "web" is in nonexistent namespace "nope"/);
    assert.match((await c.cli(['job', 'run', '-detach', jobFile('web')], { env: { NOMAD_NAMESPACE: 'elsewhere' } })).stderr, /job "web" is in nonexistent namespace "elsewhere"/);

    assert.equal((await c.cli(['namespace', 'apply', 'team-a'])).code, 0);
    const node = await c.registerNode('n1');
    const run = await c.cli(['job', 'run', '-detach', jobFile('web')], { env: { NOMAD_NAMESPACE: 'team-a' } });
    assert.equal(run.code, 0, run.stderr);
    await reportAllocations(c, node.id, 'running');

    assert.match((await c.cli(['job', 'status'])).stdout, /No running jobs/, 'not in default');
    assert.match((await c.cli(['job', 'status', '-namespace', 'team-a'])).stdout, /^web\s+service\s+50\s+running/m);
    const all = await c.cli(['job', 'status', '-namespace', '*']);
    assert.match(all.stdout, /^ID\s+Namespace\s+Type/m);
    assert.match(all.stdout, /^web\s+team-a\s+service/m);

    const held = await c.cli(['namespace', 'delete', 'team-a']);
    assert.notEqual(held.code, 0);
    assert.match(held.stderr, /namespace "team-a" has non-terminal jobs in regions: \[global\]/);
    assert.match(held.stderr, /namespace "team-a" has non-terminal allocations in regions: \[global\]/);

    assert.equal((await c.cli(['job', 'stop', '-namespace', 'team-a', 'web'])).code, 0);
    // The node agent reports the stopped allocation's task gone, as it would once it has killed it.
    const { body: allocs } = await c.call<Allocation[]>('GET', `/v1/internal/node/${node.id}/allocations`, { token: TOKENS.node });
    await c.call('POST', `/v1/internal/node/${node.id}/allocations`, { token: TOKENS.node, body: { allocations: allocs.map((a) => ({ id: a.id, clientStatus: 'complete', clientDescription: '' })) } });
    const deleted = await c.cli(['namespace', 'delete', 'team-a']);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal(deleted.stdout, 'Successfully deleted namespace "team-a"!\n');
    assert.deepEqual(json<Namespace[]>(await c.cli(['namespace', 'list', '--json'])).map((n) => n.Name), ['default', 'prod']);
  });
});
