// Three servers in one process sharing a real etcd: one leads, followers
// answer reads and forward writes, node connections go to the leader, and a
// stopped leader is replaced. The process-level failover scenarios (SIGKILL,
// SIGSTOP, quorum loss) are in failover.test.ts.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import type { ServerMembers } from '../../src/api/index.js';
import { Server } from '../../src/server/index.js';
import { startEtcd, type EtcdCluster } from '../support/etcd.js';
import { eventually } from '../support/eventually.js';
import { API_TOKENS, fingerprint, TOKENS } from '../server/_harness.js';

async function call<T = unknown>(url: string, method: string, path: string, body?: unknown, token: string = TOKENS.management): Promise<{ status: number; body: T; headers: Headers }> {
  const res = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, headers: res.headers };
}

/** Opens a node connection; resolves with the upgrade's outcome. */
function connect(url: string, nodeId: string): Promise<{ opened: boolean; status?: number; leader?: string; ws?: WebSocket }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/node/connect?nodeId=${nodeId}`, { headers: { authorization: `Bearer ${TOKENS.node}` } });
    ws.on('open', () => resolve({ opened: true, ws }));
    ws.on('unexpected-response', (_req, res) => {
      const leader = res.headers['x-berth-leader'];
      resolve({ opened: false, status: res.statusCode ?? 0, ...(typeof leader === 'string' ? { leader } : {}) });
      ws.terminate();
    });
    ws.on('error', () => undefined);
  });
}

describe('several servers on one etcd', () => {
  let etcd: EtcdCluster;
  const servers: Server[] = [];
  before(async () => {
    etcd = await startEtcd();
    for (const name of ['s1', 's2', 's3']) {
      const s = new Server({ tokens: API_TOKENS, etcd: { endpoints: etcd.endpoints }, cluster: { serverId: name, leaseTtlSeconds: 2 }, heartbeatTtlMs: 30_000 });
      await s.start();
      servers.push(s);
    }
  });
  after(async () => {
    for (const s of servers) await s.stop();
    await etcd?.close();
  });

  const leaderOf = (): Server | undefined => servers.find((s) => s.state === 'running' && s.leadership.isLeader);

  it('elect one leader that every server names in /v1/agent/members and /v1/status/leader', async () => {
    const leader = await eventually('a leader', leaderOf);
    for (const s of servers) {
      const { status, body } = await call<ServerMembers>(s.address!.url, 'GET', '/v1/agent/members');
      assert.equal(status, 200);
      assert.equal(body.ServerName, s.leadership.self.id);
      assert.equal((await call<string>(s.address!.url, 'GET', '/v1/status/leader')).body, new URL(leader.address!.url).host);
      assert.deepEqual((await call<string[]>(s.address!.url, 'GET', '/v1/status/peers')).body.length, 3);
      assert.deepEqual(
        body.Members.map((m) => [m.Name, m.Leader, m.Status]).sort(),
        [
          ['s1', leader.leadership.self.id === 's1', 'alive'],
          ['s2', leader.leadership.self.id === 's2', 'alive'],
          ['s3', leader.leadership.self.id === 's3', 'alive'],
        ],
      );
    }
  });

  it('a follower forwards a write to the leader and then serves it from its replica', async () => {
    const leader = await eventually('a leader', leaderOf);
    const follower = servers.find((s) => s !== leader)!;
    const reg = await call<{ node: { id: string } }>(follower.address!.url, 'POST', '/v1/node/register', { fingerprint: fingerprint('fwd-node') }, TOKENS.node);
    assert.equal(reg.status, 200);
    const id = reg.body.node.id;
    await eventually('the follower sees the node', async () => (await call(follower.address!.url, 'GET', `/v1/node/${id}`)).status === 200);
    // The node connection is the leader's: a follower refuses it and names the leader.
    const refused = await connect(follower.address!.url, id);
    assert.deepEqual({ opened: refused.opened, status: refused.status, leader: refused.leader }, { opened: false, status: 503, leader: leader.address!.url });
    const accepted = await connect(leader.address!.url, id);
    assert.equal(accepted.opened, true);
    await eventually('the leader holds the connection', () => leader.connections.connected(id));
    accepted.ws?.close();
  });

  it('when the leader stops, another server leads and writes through any server work again', async () => {
    const old = await eventually('a leader', leaderOf);
    await old.stop();
    const next = await eventually('a new leader', leaderOf);
    assert.notEqual(next, old);
    const follower = servers.find((s) => s !== next && s.state === 'running')!;
    // The follower may learn of the new leader a moment after it took over: until then it answers 503, retryable.
    await eventually('a write through the follower', async () => {
      const reg = await call(follower.address!.url, 'POST', '/v1/node/register', { fingerprint: fingerprint('after-failover') }, TOKENS.node);
      assert.ok(reg.status === 200 || reg.status === 503, `HTTP ${reg.status}`);
      return reg.status === 200;
    });
    const members = await call<ServerMembers>(next.address!.url, 'GET', '/v1/agent/members');
    assert.equal(members.body.Members.length, 2, 'the stopped server left the member list');
  });
});
