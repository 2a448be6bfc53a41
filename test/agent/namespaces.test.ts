// Namespaces through a real dev agent: Nomad's namespace routes in Nomad's
// shapes (strict), and a Nomad job file in its own namespace
// (test/nomad-corpus/namespaced.hcl) refused while the namespace does not
// exist, then run, listed only under its namespace, and holding it until it
// has stopped.

import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { Namespace, type AllocationListStub, type JobListStub } from '../../src/api/index.js';
import { killProcessesUnder } from '../support/agent-run.js';
import { until } from '../support/runtime-cluster.js';
import { assertShape } from '../support/strict-schema.js';
import { REPO, startAgent, tempDir, type AgentUnderTest } from './_agent.js';

const JOB = path.join(REPO, 'test', 'nomad-corpus', 'namespaced.hcl');

describe('namespaces on a dev agent', () => {
  let dir = '';
  let agent: AgentUnderTest;

  before(async () => {
    dir = await tempDir('bns-');
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'a'), '--port', '0']).ready(true);
  });

  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    killProcessesUnder(dir);
    rmSync(dir, { recursive: true, force: true });
  });

  /** A request to the agent as Nomad's clients send it (X-Nomad-Token), the body as text and, when it is JSON, decoded. */
  async function call(method: string, p: string, body?: unknown): Promise<{ status: number; text: string; json: unknown; index: number }> {
    const res = await fetch(agent.addr + p, { method, headers: { 'X-Nomad-Token': agent.token }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, text, json, index: Number(res.headers.get('x-nomad-index')) };
  }

  it("serves Nomad's namespace routes: create (PUT and POST, by path or body), read, list with prefix and a blocking query, delete", async () => {
    const first = await call('GET', '/v1/namespaces');
    assert.deepEqual(assertShape(z.array(Namespace), first.json).map((n) => [n.Name, n.Description, n.CreateIndex]), [['default', 'Default shared namespace', 1]]);
    const woke = call('GET', `/v1/namespaces?index=${first.index}&wait=30s`);
    const put = await call('PUT', '/v1/namespace/web-team', { Name: 'web-team', Description: 'the web team', Meta: { owner: 'web' } });
    assert.equal(put.status, 200, put.text);
    assert.equal(put.text, '', "Nomad answers a write with an empty body and the index");
    assert.ok(put.index > first.index);
    const after = await woke;
    assert.ok(after.index >= put.index, 'the blocking query woke on the new namespace');
    assert.deepEqual(assertShape(z.array(Namespace), after.json).map((n) => n.Name), ['default', 'web-team']);

    const one = assertShape(Namespace, (await call('GET', '/v1/namespace/web-team')).json);
    assert.deepEqual({ ...one }, {
      Name: 'web-team',
      Description: 'the web team',
      Quota: '',
      Capabilities: null,
      NodePoolConfiguration: null,
      VaultConfiguration: null,
      ConsulConfiguration: null,
      Meta: { owner: 'web' },
      CreateIndex: put.index,
      ModifyIndex: put.index,
    });
    assert.equal((await call('POST', '/v1/namespace', { Name: 'batch' })).status, 200, 'the name in the body');
    assert.deepEqual(assertShape(z.array(Namespace), (await call('GET', '/v1/namespaces?prefix=we')).json).map((n) => n.Name), ['web-team']);

    const mismatch = await call('PUT', '/v1/namespace/web-team', { Name: 'other' });
    assert.deepEqual([mismatch.status, mismatch.text], [400, 'Namespace name does not match request path']);
    const badName = await call('PUT', '/v1/namespace', { Description: 'x' });
    assert.deepEqual([badName.status, badName.text], [400, 'Invalid namespace "": invalid name "". Must match regex ^[a-zA-Z0-9-]{1,128}$']);
    const missing = await call('GET', '/v1/namespace/nope');
    assert.deepEqual([missing.status, missing.text], [404, 'Namespace not found']);

    const deleted = await call('DELETE', '/v1/namespace/batch');
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal((await call('GET', '/v1/namespace/batch')).status, 404);
    const again = await call('DELETE', '/v1/namespace/batch');
    assert.deepEqual([again.status, again.text], [404, 'namespace not found']);
    const def = await call('DELETE', '/v1/namespace/default');
    assert.deepEqual([def.status, def.text], [400, 'can not delete default namespace']);
  });

  it('refuses the corpus job until its namespace exists; then it runs in it, is listed only there, and holds the namespace until stopped', async () => {
    const refused = await agent.cli(['job', 'run', '-detach', JOB]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /job "ticker" is in nonexistent namespace "ops"/);
    assert.equal((await call('GET', '/v1/job/ticker?namespace=ops')).status, 404, 'nothing registered');
    const listedUnknown = await call('GET', '/v1/jobs?namespace=ops');
    assert.deepEqual([listedUnknown.status, listedUnknown.json], [200, []], 'a list in an unknown namespace is empty, as Nomad answers');

    const applied = await agent.cli(['namespace', 'apply', '-description', 'operations', 'ops']);
    assert.equal(applied.code, 0, applied.stderr);
    const run = await agent.cli(['job', 'run', '-detach', JOB]);
    assert.equal(run.code, 0, run.stderr + run.stdout);
    const alloc = await until('the ticker to run', async () => {
      const allocs = await agent.get<AllocationListStub[]>('/v1/job/ticker/allocations?namespace=ops');
      return allocs.find((a) => a.ClientStatus === 'running');
    }, 90_000);
    assert.equal(alloc.Namespace, 'ops');
    const nsFile = path.join(dir, 'a', 'client', 'alloc', alloc.ID, 'alloc', 'ns.txt');
    await until('the task to write its namespace', () => {
      try {
        return readFileSync(nsFile, 'utf8').trim() === 'ops';
      } catch {
        return false;
      }
    }, 30_000);

    const ids = async (p: string): Promise<string[]> => (await agent.get<Array<{ ID: string }>>(p)).map((x) => x.ID);
    assert.deepEqual(await ids('/v1/jobs'), [], 'not in default');
    assert.deepEqual(await ids('/v1/jobs?namespace=ops'), ['ticker']);
    assert.deepEqual((await agent.get<JobListStub[]>('/v1/jobs?namespace=*')).map((j) => [j.ID, j.Namespace]), [['ticker', 'ops']]);
    assert.deepEqual(await ids('/v1/allocations'), []);
    assert.deepEqual(await ids('/v1/allocations?namespace=ops'), [alloc.ID]);
    assert.equal((await ids('/v1/evaluations?namespace=ops')).length > 0, true);
    assert.deepEqual(await ids('/v1/evaluations'), []);
    assert.equal((await call('GET', '/v1/job/ticker')).status, 404, 'not found in default');
    const statusDefault = await agent.cli(['job', 'status']);
    assert.match(statusDefault.stdout, /No running jobs/);
    assert.match((await agent.cli(['job', 'status', '-namespace', 'ops'])).stdout, /^ticker\s+service\s+50\s+running/m);

    const held = await agent.cli(['namespace', 'delete', 'ops']);
    assert.notEqual(held.code, 0);
    assert.match(held.stderr, /namespace "ops" has non-terminal jobs in regions: \[global\]/);
    assert.equal((await call('GET', '/v1/namespace/ops')).status, 200, 'still there');

    const stop = await agent.cli(['job', 'stop', '-namespace', 'ops', 'ticker']);
    assert.equal(stop.code, 0, stop.stderr);
    await until('the ticker job to be dead', async () => (await agent.get<{ Status: string }>('/v1/job/ticker?namespace=ops')).Status === 'dead', 60_000);
    const deleted = await agent.cli(['namespace', 'delete', 'ops']);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal(deleted.stdout, 'Successfully deleted namespace "ops"!\n');
    const again = await agent.cli(['job', 'run', '-detach', JOB]);
    assert.match(again.stderr, /job "ticker" is in nonexistent namespace "ops"/, 'refused again once the namespace is gone');
  });
});
