// The main thread's fast path for a node's heartbeat and status reports
// (src/server/http/main-fast-node.ts): a request sent with a Content-Length
// is served before fastify, one sent chunked (no Content-Length) goes through
// fastify's route; both must answer alike, the refusals word for word (the
// fast path gives those to fastify with the body it read), and both must do
// the same to the state. The request log says which path served each
// request. A real server on a real socket.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventually } from '../support/eventually.js';
import { registration } from '../support/nomad-jobs.js';
import { testFingerprint } from '../support/server-rows.js';
import { LoggedServer, READER, TOKEN, type Answer, type LogLine } from './_logged-server.js';

const served = new LoggedServer(0, 'berth-fastnode-');
let nodeId = '';
let allocIds: string[] = [];

before(async () => {
  await served.start();
  const reg = await send('POST', '/v1/node/register', JSON.stringify({ fingerprint: testFingerprint('fast-node') }), { token: TOKEN });
  nodeId = (JSON.parse(reg.answer.body) as { node: { id: string } }).node.id;
  const job = { id: 'fastnode', type: 'batch', groups: [{ name: 'g', count: 2, tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 10, memoryMb: 16 } }] }] };
  await send('PUT', '/v1/jobs', JSON.stringify(registration(job)), { token: TOKEN });
  allocIds = await eventually('the two allocations placed', async () => {
    const res = await fetch(`${served.url}/v1/job/fastnode/allocations`, { headers: { 'x-nomad-token': TOKEN } });
    const list = (await res.json()) as Array<{ ID: string }>;
    return list.length === 2 ? list.map((a) => a.ID) : undefined;
  });
});
after(() => served.stop());

/** Sends one request on a connection of its own (`chunked`: no Content-Length, so fastify serves it); the answer and its log line. */
function send(method: string, path: string, body: string, opts: { token?: string; accept?: string; chunked?: boolean } = {}): Promise<{ answer: Answer; line: LogLine }> {
  return served.send(method, path, { ...opts, body });
}

/** The answer less what differs between two writes (the index they were made at). */
function lessIndex(a: Answer): Answer {
  const headers = { ...a.headers };
  delete headers['x-nomad-index'];
  delete headers['content-length'];
  return { ...a, headers, body: a.body.replace(/"index":\d+/, '"index":0') };
}

async function clientStatusOf(id: string): Promise<string> {
  const res = await fetch(`${served.url}/v1/allocation/${id}`, { headers: { 'x-nomad-token': TOKEN } });
  return ((await res.json()) as { ClientStatus: string }).ClientStatus;
}

describe('a node\'s heartbeats and status reports on the main fast path', () => {
  it('answer a heartbeat as fastify\'s route does, with or without a fingerprint', async () => {
    for (const body of ['{}', JSON.stringify({ fingerprint: testFingerprint('fast-node') })]) {
      const fast = await send('POST', `/v1/node/${nodeId}/heartbeat`, body, { token: TOKEN });
      const slow = await send('POST', `/v1/node/${nodeId}/heartbeat`, body, { token: TOKEN, chunked: true });
      assert.equal(fast.line.fastPath, true, `served before fastify (${body.slice(0, 20)})`);
      assert.equal(slow.line.fastPath, undefined, 'served by fastify');
      assert.equal(fast.line.route, '/v1/node/:id/heartbeat');
      assert.equal(fast.line.caller, 'ops');
      assert.equal(fast.answer.status, 200);
      assert.deepEqual(lessIndex(fast.answer), lessIndex(slow.answer));
      assert.ok((JSON.parse(fast.answer.body) as { heartbeatTtlMs: number }).heartbeatTtlMs > 0);
    }
    // No body at all (an empty stream is sent with its length 0 too): as `{}`.
    const blank = await send('POST', `/v1/node/${nodeId}/heartbeat`, '', { token: TOKEN });
    const empty = await send('POST', `/v1/node/${nodeId}/heartbeat`, '{}', { token: TOKEN, chunked: true });
    assert.equal(blank.line.fastPath, true);
    assert.deepEqual(lessIndex(blank.answer), lessIndex(empty.answer));
  });

  it('apply a status report as fastify\'s route does, and answer its index', async () => {
    const [a, b] = allocIds as [string, string];
    const report = (id: string): string => JSON.stringify({ allocations: [{ id, clientStatus: 'running', clientDescription: 'running', taskStates: {} }] });
    const fast = await send('POST', `/v1/internal/node/${nodeId}/allocations`, report(a), { token: TOKEN });
    const slow = await send('POST', `/v1/internal/node/${nodeId}/allocations`, report(b), { token: TOKEN, chunked: true });
    assert.equal(fast.line.fastPath, true);
    assert.equal(fast.line.route, '/v1/internal/node/:id/allocations');
    assert.equal(slow.line.fastPath, undefined);
    assert.equal(fast.answer.status, 200);
    assert.deepEqual(lessIndex(fast.answer), lessIndex(slow.answer));
    assert.equal(String((JSON.parse(fast.answer.body) as { index: number }).index), fast.answer.headers['x-nomad-index']);
    assert.equal(await clientStatusOf(a), 'running');
    assert.equal(await clientStatusOf(b), 'running');
  });

  it('answer refusals word for word as fastify does', async () => {
    const hb = `/v1/node/${nodeId}/heartbeat`;
    const reports = `/v1/internal/node/${nodeId}/allocations`;
    const cases: Array<{ what: string; path: string; token?: string; body: string; accept?: string; fast?: true }> = [
      { what: 'no token', path: hb, body: '{}' },
      { what: 'a read-only token', path: hb, token: READER, body: '{}' },
      { what: 'bad JSON', path: hb, token: TOKEN, body: '{"fingerprint": ' },
      { what: 'bad JSON, as JSON', path: reports, token: TOKEN, body: '{"allocations": ', accept: 'application/json' },
      { what: 'a body that is no object', path: hb, token: TOKEN, body: '[1]' },
      { what: 'a fingerprint that is no object', path: hb, token: TOKEN, body: '{"fingerprint": 7}' },
      { what: 'a prototype key', path: hb, token: TOKEN, body: '{"__proto__": {}}' },
      { what: 'an unknown node', path: '/v1/node/no-such-node/heartbeat', token: TOKEN, body: '{}', accept: 'application/json', fast: true },
      { what: 'an unknown node, as text', path: '/v1/node/no-such-node/heartbeat', token: TOKEN, body: '{}', fast: true },
      { what: 'no list of allocations', path: reports, token: TOKEN, body: '{"allocations": 3}' },
      { what: 'an update without its status', path: reports, token: TOKEN, body: '{"allocations": [{"id": "x"}]}', accept: 'application/json' },
      { what: 'an allocation of no node here', path: '/v1/internal/node/no-such-node/allocations', token: TOKEN, body: JSON.stringify({ allocations: [{ id: allocIds[0], clientStatus: 'complete' }] }), fast: true },
    ];
    for (const c of cases) {
      const opts = { ...(c.token ? { token: c.token } : {}), ...(c.accept ? { accept: c.accept } : {}) };
      const fast = await send('POST', c.path, c.body, opts);
      const slow = await send('POST', c.path, c.body, { ...opts, chunked: true });
      assert.ok(fast.answer.status >= 400, `${c.what}: refused (${fast.answer.status} ${fast.answer.body})`);
      assert.equal(fast.line.fastPath, c.fast, `${c.what}: ${c.fast ? 'answered on the fast path' : 'given to fastify'}`);
      assert.equal(slow.line.fastPath, undefined);
      assert.deepEqual(fast.answer, slow.answer, c.what);
    }
    // Nothing of the refused reports was applied.
    assert.equal(await clientStatusOf(allocIds[0] as string), 'running');
  });
});
