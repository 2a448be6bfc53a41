// The node commands on a real dev agent (its own client node), as an
// operator runs them: `node status` (-self, -os, -verbose), `node meta
// apply|read` over the agent's `/v1/client/metadata` in Nomad's shapes (the
// server seeing the new meta), `node eligibility` and `node drain` with a
// message kept in the drain's meta.

import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as Api from '../../src/api/index.js';
import { assertShape } from '../support/api-contract.js';
import { until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest, type Result } from './_agent.js';

function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

describe('node commands on a dev agent', () => {
  let dir = '';
  let agent: AgentUnderTest;
  let nodeId = '';

  const call = async (method: string, p: string, body?: unknown): Promise<{ status: number; body: unknown; text: string }> => {
    const res = await fetch(agent.addr + p, {
      method,
      headers: { 'X-Nomad-Token': agent.token, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* plain text */
    }
    return { status: res.status, body: parsed, text };
  };

  before(async () => {
    dir = await tempDir('bnc-');
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'a'), '--port', '0']).ready(true);
    const [node] = await until('the node ready', async () => (await agent.get<Api.NodeListStub[]>('/v1/nodes')).filter((n) => n.Status === 'ready'));
    nodeId = node!.ID;
  });

  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('node status -self shows the agent\'s own node in Nomad\'s layout; -os adds its OS; -verbose its drivers and attributes', async () => {
    const self = ok(await agent.cli(['node', 'status', '-self']), 'node status -self');
    assert.match(self.stdout, new RegExp(`^ID\\s+= ${nodeId}$`, 'm'));
    assert.match(self.stdout, /^Status\s+= ready$/m);
    assert.match(self.stdout, /^Driver Status\s+= .*raw_exec/m);
    assert.match(self.stdout, /^Node Events\n/m);
    const node = assertShape(Api.Node, await agent.get(`/v1/node/${nodeId}`), 'the dev node');
    const os = ok(await agent.cli(['node', 'status', '-os']), 'node status -os');
    assert.match(os.stdout, /^ID\s+Node Pool\s+DC\s+Name\s+Class\s+OS\s+Drain\s+Eligibility\s+Status$/m);
    assert.ok(node.Attributes?.['os.name'], 'the node reports os.name');
    assert.match(os.stdout, new RegExp(`\\s${node.Attributes?.['os.name']}\\s+false\\s+eligible\\s+ready$`, 'm'));
    const verbose = ok(await agent.cli(['node', 'status', '-verbose', nodeId.slice(0, 6)]), 'node status -verbose');
    assert.match(verbose.stdout, /^Drivers\nDriver\s+Detected\s+Healthy\s+Message\s+Time$/m);
    assert.match(verbose.stdout, /^Attributes\n/m);
    assert.match(verbose.stdout, /^cpu\.numcores\s+= \d+$/m);
  });

  it("reads and applies the node's meta over /v1/client/metadata in Nomad's shapes; the server sees it", async () => {
    const read = await call('GET', '/v1/client/metadata');
    assert.equal(read.status, 200, read.text);
    assertShape(Api.NodeMetaResponse, read.body, 'GET /v1/client/metadata');
    const applied = await call('POST', '/v1/client/metadata', { NodeID: nodeId, Meta: { rack: 'r2', zone: 'z1' } });
    assert.equal(applied.status, 200, applied.text);
    const meta = assertShape(Api.NodeMetaResponse, applied.body, 'POST /v1/client/metadata');
    assert.equal(meta.Meta?.['rack'], 'r2');
    assert.deepEqual(meta.Dynamic, { rack: 'r2', zone: 'z1' });
    await until('the server to see the new meta', async () => (await agent.get<Api.Node>(`/v1/node/${nodeId}`)).Meta?.['rack'] === 'r2');
    // A null removes the key.
    const removed = assertShape(Api.NodeMetaResponse, (await call('POST', '/v1/client/metadata', { Meta: { zone: null } })).body, 'a removal');
    assert.equal(removed.Meta?.['zone'], undefined);
    assert.equal(removed.Dynamic?.['zone'], undefined, 'not a static key: nothing to remember');
    const other = await call('GET', '/v1/client/metadata?node_id=00000000-0000-4000-8000-000000000000');
    assert.equal(other.status, 404, 'another node is asked at its own agent');
  });

  it('node meta apply and read, by node ID prefix', async () => {
    ok(await agent.cli(['node', 'meta', 'apply', '-node-id', nodeId.slice(0, 6), 'tier=gold']), 'node meta apply');
    const read = ok(await agent.cli(['node', 'meta', 'read', '-node-id', nodeId.slice(0, 6)]), 'node meta read');
    assert.match(read.stdout, /^All Meta\n(.*\n)*tier\s+= gold$/m);
    assert.match(read.stdout, /^Dynamic Meta\n(.*\n)*tier\s+= gold$/m);
    const json = assertShape(Api.NodeMetaResponse, JSON.parse(ok(await agent.cli(['node', 'meta', 'read', '--json']), 'node meta read --json').stdout), 'node meta read --json');
    assert.equal(json.Meta?.['tier'], 'gold');
    ok(await agent.cli(['node', 'meta', 'apply', '-unset', 'tier,rack']), 'node meta apply -unset');
    const after = assertShape(Api.NodeMetaResponse, JSON.parse((await agent.cli(['node', 'meta', 'read', '--json'])).stdout), 'after -unset');
    assert.equal(after.Meta?.['tier'], undefined);
  });

  it('node eligibility and node drain -self, the drain message kept in its meta', async () => {
    const off = ok(await agent.cli(['node', 'eligibility', '-disable', '-self']), 'node eligibility -disable');
    assert.match(off.stdout, new RegExp(`Node "${nodeId}" scheduling eligibility set: ineligible for scheduling`));
    assert.equal((await agent.get<Api.Node>(`/v1/node/${nodeId}`)).SchedulingEligibility, 'ineligible');
    ok(await agent.cli(['node', 'eligibility', '-enable', '-self']), 'node eligibility -enable');

    const drain = ok(await agent.cli(['node', 'drain', '-enable', '-self', '-yes', '-m', 'kernel upgrade', '-meta', 'ticket=OPS-1']), 'node drain -enable');
    assert.match(drain.stdout, /Drain complete for node/, 'a node with nothing to move drains at once');
    const drained = await agent.get<Api.Node>(`/v1/node/${nodeId}`);
    assert.equal(drained.LastDrain?.Status, 'complete');
    assert.deepEqual(drained.LastDrain?.Meta, { message: 'kernel upgrade', ticket: 'OPS-1' });
    assert.equal(drained.SchedulingEligibility, 'ineligible', 'a drained node stays ineligible');
    const status = ok(await agent.cli(['node', 'status', nodeId]), 'node status');
    assert.match(status.stdout, /Drain\s+Node drain complete$/m);
    ok(await agent.cli(['node', 'eligibility', '-enable', nodeId]), 'node eligibility -enable');
  });
});
