// ServerApi in a cluster: writes go to the leader a server named, reads stay
// on the server chosen, and a named leader that stops answering is not taken
// from a follower's word again while its lease runs out; neither is a server
// that stopped answering as the one chosen (a leader names no leader), and
// calls still waiting on a leader that stopped answering are abandoned. Real
// HTTP servers on loopback stand in for a follower and a leader, each
// recording the requests it got; one that never answers stands in for a
// frozen (SIGSTOPped) server.

import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ServerApi, ServerConnError } from './server-api.js';

interface FakeServer {
  url: string;
  got: string[];
  server: http.Server;
}

/** A server that records `METHOD path` and answers `{}` with the leader header `names()` gives (none when undefined). */
async function fakeServer(names: () => string | undefined): Promise<FakeServer> {
  const got: string[] = [];
  const server = http.createServer((req, res) => {
    got.push(`${req.method} ${req.url?.split('?')[0]}`);
    req.resume();
    req.on('end', () => {
      const leader = names();
      res.writeHead(200, { 'content-type': 'application/json', ...(leader ? { 'x-berth-leader': leader } : {}) });
      res.end(req.url?.includes('/allocations') ? '[]' : JSON.stringify({ node: { id: 'n1' }, heartbeatTtlMs: 30_000 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got, server };
}

/** A server that takes requests and never answers, as a paused process does. */
async function frozenServer(): Promise<FakeServer> {
  const got: string[] = [];
  const server = http.createServer((req) => {
    got.push(`${req.method} ${req.url?.split('?')[0]}`);
    req.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got, server };
}

async function closeAll(...servers: FakeServer[]): Promise<void> {
  for (const s of servers) s.server.closeAllConnections();
  await Promise.all(servers.map((s) => new Promise((r) => s.server.close(r))));
}

describe('ServerApi with several servers', () => {
  let leader: FakeServer;
  let follower: FakeServer;

  before(async () => {
    leader = await fakeServer(() => undefined);
    follower = await fakeServer(() => leader.url);
  });
  after(async () => {
    await Promise.all([leader, follower].map((s) => new Promise((r) => s.server.close(r))));
  });

  it('sends heartbeats to the leader a follower named, and keeps reading from the follower', async () => {
    const api = new ServerApi({ address: [follower.url, leader.url], token: 't' });
    try {
      await api.heartbeat('n1', undefined);
      assert.deepEqual(follower.got, ['POST /v1/node/n1/heartbeat'], 'the first heartbeat went to the server chosen');
      assert.equal(api.leader, leader.url);
      await api.heartbeat('n1', undefined);
      await api.allocations('n1');
      assert.deepEqual(leader.got, ['POST /v1/node/n1/heartbeat'], 'the second heartbeat went straight to the leader');
      assert.deepEqual(follower.got, ['POST /v1/node/n1/heartbeat', 'GET /v1/internal/node/n1/allocations'], 'reads stay on the follower');
    } finally {
      api.close();
    }
  });

  it('goes back through the follower when the leader stops answering, and does not take the follower\'s word for the dead leader again', async () => {
    const dead = await fakeServer(() => undefined);
    const deadUrl = dead.url;
    await new Promise((r) => dead.server.close(r));
    const naming = await fakeServer(() => deadUrl);
    const api = new ServerApi({ address: [naming.url, deadUrl], token: 't' });
    try {
      await api.heartbeat('n1', undefined);
      assert.equal(api.leader, deadUrl, 'named by the follower');
      await assert.rejects(() => api.heartbeat('n1', undefined), (e: unknown) => e instanceof ServerConnError && e.retryable);
      assert.equal(api.leader, undefined, 'forgotten once it failed');
      await api.heartbeat('n1', undefined);
      assert.equal(api.leader, undefined, 'the follower still names it (its lease has not run out): not trusted again yet');
      assert.deepEqual(naming.got, ['POST /v1/node/n1/heartbeat', 'POST /v1/node/n1/heartbeat']);
    } finally {
      api.close();
      await new Promise((r) => naming.server.close(r));
    }
  });

  it('does not take a follower\'s word for the server it left because it stopped answering (a frozen leader names no leader)', async () => {
    const frozen = await frozenServer();
    const naming = await fakeServer(() => frozen.url);
    const api = new ServerApi({ address: [frozen.url, naming.url], token: 't' });
    try {
      await assert.rejects(() => api.heartbeat('n1', undefined, { timeoutMs: 200 }), (e: unknown) => e instanceof ServerConnError && e.retryable);
      assert.equal(api.address, naming.url, 'moved on');
      await api.heartbeat('n1', undefined, { timeoutMs: 2_000 });
      assert.equal(api.leader, undefined, 'the follower names the frozen server: not trusted');
      await api.heartbeat('n1', undefined, { timeoutMs: 2_000 });
      assert.deepEqual(naming.got, ['POST /v1/node/n1/heartbeat', 'POST /v1/node/n1/heartbeat']);
      assert.deepEqual(frozen.got, ['POST /v1/node/n1/heartbeat']);
    } finally {
      api.close();
      await closeAll(frozen, naming);
    }
  });

  it('abandons the calls still waiting on a named leader once one of them finds it not answering', async () => {
    const frozen = await frozenServer();
    const naming = await fakeServer(() => frozen.url);
    // The default deadline (15 s) is what a status report waited on a frozen leader.
    const api = new ServerApi({ address: [naming.url, frozen.url], token: 't', requestTimeoutMs: 60_000 });
    try {
      await api.heartbeat('n1', undefined);
      assert.equal(api.leader, frozen.url);
      const report = api.updateAllocations('n1', []);
      await assert.rejects(() => api.heartbeat('n1', undefined, { timeoutMs: 200 }), (e: unknown) => e instanceof ServerConnError && /no answer within 200 ms/.test(e.message));
      await assert.rejects(report, (e: unknown) => e instanceof ServerConnError && e.retryable && /abandoned: the leader http:\/\/127\.0\.0\.1:\d+ stopped answering/.test(e.message));
      assert.equal(api.leader, undefined);
      await api.updateAllocations('n1', []);
      assert.deepEqual(naming.got.at(-1), 'POST /v1/internal/node/n1/allocations', 'the retry went through the follower');
    } finally {
      api.close();
      await closeAll(frozen, naming);
    }
  });
});
