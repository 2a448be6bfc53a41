// Contract tests of the cluster-wide routes against a real server: each
// answer checked against its src/api schema made strict all the way down
// (Nomad's shapes as transcribed, so a field Berth adds or drops fails), the
// status codes and headers Nomad's clients read, and the blocking queries.
// Status, agent, regions, namespaces, the token, metrics, the scheduler's
// configuration and the system routes; services and the event stream are
// in services-events-api.test.ts.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  ACLToken,
  AgentHealthResponse,
  AutopilotConfiguration,
  RaftConfiguration,
  AgentSelf,
  MetricsSummary,
  Namespace,
  Regions,
  SchedulerConfigurationResponse,
  SchedulerSetConfigurationResponse,
  ServerMembers,
  StatusLeader,
  StatusPeers,
  SystemGcResult,
} from '../../src/api/index.js';
import { z } from 'zod';
import { testVolume } from '../support/server-rows.js';
import { assertShape } from '../support/strict-schema.js';
import { startServer, TOKENS, type Harness } from './_harness.js';

let h: Harness;
let hostPort: string;
before(async () => {
  h = await startServer();
  hostPort = new URL(h.url).host;
});
after(async () => {
  await h.close();
});

/** GET with X-Nomad-Token, as Nomad's clients send it. */
async function nomadGet(path: string, token: string = TOKENS.management): Promise<{ status: number; body: unknown; text: string; headers: Headers }> {
  const res = await fetch(h.url + path, { headers: { 'X-Nomad-Token': token } });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body, text, headers: res.headers };
}

describe('status, regions, agent', () => {
  it('/v1/status/leader is the leader as host:port (a JSON string), to any token; /v1/status/peers and /v1/regions likewise', async () => {
    for (const token of [TOKENS.management, TOKENS.readOnly, TOKENS.node]) {
      const leader = await nomadGet('/v1/status/leader', token);
      assert.equal(leader.status, 200);
      assert.equal(assertShape(StatusLeader, leader.body), hostPort);
      assert.equal(leader.text, JSON.stringify(hostPort), 'a JSON string, as Go decodes into a string');
      assert.ok(Number(leader.headers.get('x-nomad-index')) >= 1);
      assert.equal(leader.headers.get('x-nomad-knownleader'), 'true');
    }
    assert.equal((await h.call('GET', '/v1/status/leader', { token: null })).status, 401);
    assert.deepEqual(assertShape(StatusPeers, (await nomadGet('/v1/status/peers')).body), [hostPort]);
    assert.deepEqual(assertShape(Regions, (await nomadGet('/v1/regions')).body), ['global']);
  });

  it("/v1/operator/raft/configuration lists the servers as Raft's peers; autopilot answers Nomad's defaults and refuses a change", async () => {
    const raft = assertShape(RaftConfiguration, (await nomadGet('/v1/operator/raft/configuration')).body);
    assert.equal(raft.Servers.length, 1);
    assert.deepEqual({ ...raft.Servers[0]!, ID: '', Node: '' }, { ID: '', Node: '', Address: hostPort, Leader: true, Voter: true, RaftProtocol: '3' });
    assert.equal(raft.Index, h.server.store.latestIndex(), "the store's latest index");
    const auto = assertShape(AutopilotConfiguration, (await nomadGet('/v1/operator/autopilot/configuration')).body);
    assert.equal(auto.LastContactThreshold, '200ms');
    assert.equal(auto.ServerStabilizationTime, '10s');
    const put = await h.call('PUT', '/v1/operator/autopilot/configuration', { body: { ...auto, CleanupDeadServers: false }, accept: null });
    assert.equal(put.status, 400);
    assert.match(put.text, /run no autopilot/);
  });

  it('/v1/agent/members: ServerMembers, whose leader Nomad\'s CLI finds as Addr + Tags.port = /v1/status/leader', async () => {
    const res = await nomadGet('/v1/agent/members');
    assert.equal(res.status, 200);
    const members = assertShape(ServerMembers, res.body);
    assert.equal(members.ServerRegion, 'global');
    assert.equal(members.ServerDC, 'dc1');
    assert.equal(members.Members.length, 1);
    const m = members.Members[0]!;
    assert.equal(m.Status, 'alive');
    assert.equal(m.Leader, true);
    assert.equal(`${m.Addr}:${m.Tags['port']}`, assertShape(StatusLeader, (await nomadGet('/v1/status/leader')).body));
    assert.equal(m.Tags['region'], 'global');
    assert.equal(m.Tags['role'], 'nomad');
    assert.ok(m.StartedAt > 0);
    assert.equal((await nomadGet('/v1/agent/members', TOKENS.node)).status, 403, 'a node token does not list the servers');
    assert.equal((await nomadGet('/v1/operator/members')).status, 404, "Berth's old route is gone");
  });

  it('/v1/agent/self: the config Nomad\'s tools read (region, datacenter, version, ACLs on), the member, and the stats', async () => {
    const res = await nomadGet('/v1/agent/self');
    assert.equal(res.status, 200);
    const self = assertShape(AgentSelf, res.body);
    assert.equal(self.config.Region, 'global');
    assert.equal(self.config.Datacenter, 'dc1');
    assert.equal(self.config.ACL.Enabled, true);
    assert.equal(self.config.Server.Enabled, true);
    assert.equal(self.config.Client.Enabled, false, 'a bare server runs no client');
    assert.equal(self.config.UI.ShowCLIHints, false);
    assert.equal(self.config.Ports.HTTP, Number(new URL(h.url).port));
    assert.equal(self.member.Leader, true);
    assert.equal(self.stats['nomad']?.['leader'], 'true');
    assert.equal(self.stats['nomad']?.['leader_addr'], hostPort);
    assert.equal(self.stats['raft']?.['num_peers'], '0', "Nomad's `agent check` reads it");
    assert.ok(Number(self.stats['raft']?.['applied_index']) >= 0);
    assert.equal(self.stats['berth']?.['connected_nodes'], '0');
    assert.equal(self.stats['client'], undefined);
    assert.equal((await nomadGet('/v1/agent/self', TOKENS.node)).status, 403);
  });

  it('/v1/agent/health: ok while a leader is known; asking for the client of a server-only agent is a 500 saying so', async () => {
    const ok = await nomadGet('/v1/agent/health');
    assert.equal(ok.status, 200);
    assert.deepEqual(assertShape(AgentHealthResponse, ok.body), { server: { ok: true, message: 'ok' } });
    const client = await nomadGet('/v1/agent/health?type=client');
    assert.equal(client.status, 500);
    assert.deepEqual(assertShape(AgentHealthResponse, client.body), { client: { ok: false, message: 'client not enabled' } });
  });
});

describe('namespaces and the token', () => {
  it('/v1/namespaces lists default and the namespaces created; /v1/namespace/:name reads one; blocking queries wake on a new one', async () => {
    // Not the store's first write: a blocking read at index 1 (the least an answer names) would miss that one.
    await h.server.store.write((txn) => txn.put('volumes', testVolume('single-node-writer', 'file-system', { id: 'v-default' })));
    const first = await nomadGet('/v1/namespaces');
    assert.equal(first.status, 200);
    const before = assertShape(z.array(Namespace), first.body);
    assert.deepEqual(before.map((n) => n.Name), ['default']);
    assert.equal(before[0]!.Description, 'Default shared namespace');
    const index = Number(first.headers.get('x-nomad-index'));
    const woke = nomadGet(`/v1/namespaces?index=${index}&wait=20s`);
    const put = await fetch(`${h.url}/v1/namespace/prod`, { method: 'PUT', headers: { 'X-Nomad-Token': TOKENS.management }, body: JSON.stringify({ Name: 'prod' }) });
    assert.equal(put.status, 200, await put.clone().text());
    const written = Number(put.headers.get('x-nomad-index'));
    const after = await woke;
    assert.ok(Number(after.headers.get('x-nomad-index')) >= written);
    const list = assertShape(z.array(Namespace), after.body);
    assert.deepEqual(list.map((n) => n.Name), ['default', 'prod']);
    assert.equal(list[1]!.CreateIndex, written);
    assert.deepEqual(assertShape(z.array(Namespace), (await nomadGet('/v1/namespaces?prefix=pr')).body).map((n) => n.Name), ['prod']);
    const one = await nomadGet('/v1/namespace/prod');
    assert.equal(assertShape(Namespace, one.body).Name, 'prod');
    const missing = await nomadGet('/v1/namespace/nope');
    assert.equal(missing.status, 404);
    assert.equal(missing.text, 'Namespace not found', "Nomad's plain-text error");
  });

  it('/v1/acl/token/self: the caller\'s token as an ACLToken, to every role, never with its secret', async () => {
    const mgmt = await nomadGet('/v1/acl/token/self');
    assert.equal(mgmt.status, 200);
    const t = assertShape(ACLToken, mgmt.body);
    assert.equal(t.Name, 'ops');
    assert.equal(t.Type, 'management');
    assert.equal(t.Policies, null);
    assert.equal(t.SecretID, '');
    assert.match(t.AccessorID, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.ok(!mgmt.text.includes(TOKENS.management));
    const reader = assertShape(ACLToken, (await nomadGet('/v1/acl/token/self', TOKENS.readOnly)).body);
    assert.deepEqual([reader.Type, reader.Policies], ['client', ['read-only']]);
    const node = assertShape(ACLToken, (await h.call('GET', '/v1/acl/token/self', { token: TOKENS.node })).body);
    assert.deepEqual([node.Name, node.Policies], ['agents', ['node']]);
    assert.notEqual(node.AccessorID, t.AccessorID);
    assert.equal((await h.call('GET', '/v1/acl/token/self', { token: null })).status, 401);
    assert.equal((await h.call('GET', '/v1/token/self')).status, 404, "Berth's old route is gone");
  });
});

describe('metrics', () => {
  it('/v1/metrics answers Nomad\'s JSON summary; ?format=prometheus the Prometheus text; read tokens only', async () => {
    const res = await nomadGet('/v1/metrics');
    assert.equal(res.status, 200);
    const summary = assertShape(MetricsSummary, res.body);
    assert.match(summary.Timestamp, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC$/);
    assert.ok(summary.Gauges.some((g) => g.Name === 'berth_nodes' && g.Labels['status'] === 'ready'), 'the store gauges');
    assert.ok(summary.Counters.length > 0 || summary.Samples.length > 0, "prom-client's process metrics");
    const prom = await fetch(`${h.url}/v1/metrics?format=prometheus`, { headers: { 'X-Nomad-Token': TOKENS.readOnly } });
    assert.equal(prom.status, 200);
    assert.match(prom.headers.get('content-type') ?? '', /text\/plain/);
    assert.match(await prom.text(), /^# HELP berth_nodes /m);
    assert.equal((await nomadGet('/v1/metrics', TOKENS.node)).status, 403);
    assert.equal((await nomadGet('/metrics')).status, 404, 'one path: /v1/metrics');
  });
});

describe("the scheduler's configuration", () => {
  const PATH = '/v1/operator/scheduler/configuration';
  const put = (body: unknown, query = '', method = 'PUT', token: string = TOKENS.management): Promise<Response> =>
    fetch(`${h.url}${PATH}${query}`, { method, headers: { 'X-Nomad-Token': token, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it("answers Nomad's defaults until set; a PUT (or POST) sets it, a stale cas does not; a blocking read wakes on the change", async () => {
    const first = await nomadGet(PATH);
    assert.equal(first.status, 200);
    const initial = assertShape(SchedulerConfigurationResponse, first.body);
    assert.equal(initial.SchedulerConfig.SchedulerAlgorithm, 'binpack');
    assert.equal(initial.SchedulerConfig.PreemptionConfig.SystemSchedulerEnabled, true);
    assert.equal(initial.SchedulerConfig.ModifyIndex, 0);
    assert.equal(initial.KnownLeader, true);
    const woke = nomadGet(`${PATH}?index=${initial.Index}&wait=20s`);

    // Go's decoder: keys match case-insensitively, missing fields are zero.
    const set = await put({ schedulerAlgorithm: 'spread', PreemptionConfig: { ServiceSchedulerEnabled: true } }, '?cas=0');
    assert.equal(set.status, 200);
    const answer = assertShape(SchedulerSetConfigurationResponse, await set.json());
    assert.equal(answer.Updated, true);
    assert.equal(Number(set.headers.get('x-nomad-index')), answer.Index);
    const after = assertShape(SchedulerConfigurationResponse, (await woke).body);
    assert.equal(after.SchedulerConfig.SchedulerAlgorithm, 'spread');
    assert.equal(after.SchedulerConfig.PreemptionConfig.ServiceSchedulerEnabled, true);
    assert.equal(after.SchedulerConfig.PreemptionConfig.SystemSchedulerEnabled, false);
    assert.equal(after.SchedulerConfig.NodeLimitForFeasibilityChecks, 100, "Nomad's zero is its default");
    assert.equal(after.SchedulerConfig.ModifyIndex, answer.Index);
    assert.equal(after.Index, answer.Index);

    const stale = assertShape(SchedulerSetConfigurationResponse, await (await put({ SchedulerAlgorithm: 'binpack' }, `?cas=${answer.Index - 1}`)).json());
    assert.equal(stale.Updated, false);
    const viaPost = assertShape(SchedulerSetConfigurationResponse, await (await put({ SchedulerAlgorithm: 'binpack' }, `?cas=${answer.Index}`, 'POST')).json());
    assert.equal(viaPost.Updated, true);
    assert.equal(assertShape(SchedulerConfigurationResponse, (await nomadGet(PATH)).body).SchedulerConfig.SchedulerAlgorithm, 'binpack');
  });

  it('refuses an unknown algorithm, a malformed cas and a read-only token', async () => {
    const bad = await put({ SchedulerAlgorithm: 'random' });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /invalid scheduler algorithm: random/);
    assert.equal((await put({ MemoryOversubscriptionEnabled: 'yes' })).status, 400);
    assert.equal((await put({}, '?cas=x')).status, 400);
    assert.equal((await put({}, '', 'PUT', TOKENS.readOnly)).status, 403);
  });
});

describe('system', () => {
  it('PUT /v1/system/gc collects now and says what (Berth\'s answer); PUT /v1/system/reconcile/summaries is a no-op; management only', async () => {
    assert.equal((await h.call('PUT', '/v1/system/gc', { token: TOKENS.readOnly })).status, 403);
    const gc = await h.call('PUT', '/v1/system/gc');
    assert.equal(gc.status, 200);
    const result = assertShape(SystemGcResult, gc.body);
    assert.equal(Number(gc.headers.get('x-nomad-index')), Math.max(1, result.Index));
    const rec = await h.call('PUT', '/v1/system/reconcile/summaries');
    assert.equal(rec.status, 200);
    assert.equal(rec.text, '');
    assert.ok(Number(rec.headers.get('x-nomad-index')) >= 1);
    assert.equal((await h.call('PUT', '/v1/system/reconcile/summaries', { token: TOKENS.readOnly })).status, 403);
  });
});
