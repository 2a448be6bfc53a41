// HEAD on the API as a user (curl -I, a load balancer's health check) sees it
// on a real dev agent: for every GET route, HEAD answers with the GET's status
// and headers and no body; a JSON route says the GET body's length; a
// streaming route (the event stream, a web UI file) answers at once with its
// headers; what has no GET route is refused as GET would be. These pin the
// behaviour of fastify's HEAD routes, so a cheaper way of registering them
// can be checked against it.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AgentRun, freePort } from '../support/agent-run.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One request on its own connection; resolves once the response ended (a stream is cut after `cutAfterMs`). */
function call(base: string, method: 'GET' | 'HEAD', url: string, token?: string, cutAfterMs?: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${url}`, { method, agent: false, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      const chunks: Buffer[] = [];
      const done = (): void => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', done);
      if (cutAfterMs !== undefined) {
        setTimeout(() => {
          done();
          req.destroy();
        }, cutAfterMs).unref();
      }
    });
    req.on('error', reject);
    req.end();
  });
}

/** The headers a HEAD must repeat from its GET (the date and the connection's own are not the route's). */
function routeHeaders(h: Answer['headers']): Record<string, unknown> {
  const { date: _date, connection: _connection, 'keep-alive': _keepAlive, 'content-length': _length, 'transfer-encoding': _te, ...rest } = h;
  return rest;
}

describe('HEAD on a dev agent', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'bhead-'));
  let agent: AgentRun;
  before(async () => {
    agent = await new AgentRun(['--dev', '--data-dir', path.join(dir, 'a'), '--port', String(await freePort())]).start();
  });
  after(async () => {
    await agent?.stop('SIGINT');
    rmSync(dir, { recursive: true, force: true });
  });

  it('a JSON route: the GET status and headers, content-length the GET body\'s byte length, no body', async () => {
    // Routes whose answer does not change from one call to the next (the metrics page does).
    for (const url of ['/v1/jobs', '/v1/nodes', '/v1/agent/self', '/v1/namespaces']) {
      const get = await call(agent.addr, 'GET', url, agent.token);
      const head = await call(agent.addr, 'HEAD', url, agent.token);
      assert.equal(get.status, 200, url);
      assert.equal(head.status, 200, url);
      assert.equal(head.body.length, 0, `${url}: no body`);
      assert.equal(head.headers['content-length'], String(get.body.length), `${url}: content-length`);
      assert.match(String(head.headers['content-type']), /^application\/json/, url);
      assert.deepEqual(routeHeaders(head.headers), routeHeaders(get.headers), url);
    }
  });

  it('an error: the GET status, error code and length, no body (no token, an unknown job, an unknown route)', async () => {
    for (const [url, token, status] of [['/v1/jobs', undefined, 401], ['/v1/job/none-such', agent.token, 404]] as const) {
      const get = await call(agent.addr, 'GET', url, token);
      const head = await call(agent.addr, 'HEAD', url, token);
      assert.equal(get.status, status, url);
      assert.equal(head.status, status, url);
      assert.equal(head.body.length, 0, url);
      assert.equal(head.headers['x-berth-error-code'], get.headers['x-berth-error-code'], url);
      assert.equal(head.headers['content-length'], String(get.body.length), url);
    }
    // No route: the not-found answer names the method, so its length is that of the GET's words with HEAD in them.
    const get = await call(agent.addr, 'GET', '/v1/no-such-route', agent.token);
    const head = await call(agent.addr, 'HEAD', '/v1/no-such-route', agent.token);
    assert.equal(head.status, 404);
    assert.equal(head.body.length, 0);
    assert.equal(head.headers['x-berth-error-code'], get.headers['x-berth-error-code']);
    assert.equal(head.headers['content-length'], String(Buffer.byteLength(get.body.toString('utf8').replace('GET', 'HEAD'))));
  });

  it('a streaming route: the event stream answers HEAD at once with its headers and no body; a UI file with its length', async () => {
    const head = await call(agent.addr, 'HEAD', '/v1/event/stream', agent.token);
    assert.equal(head.status, 200);
    assert.equal(head.body.length, 0);
    assert.equal(head.headers['content-type'], 'application/json');
    assert.equal(head.headers['cache-control'], 'no-cache');
    assert.equal(head.headers['x-nomad-knownleader'], 'true');
    const get = await call(agent.addr, 'GET', '/v1/event/stream', agent.token, 300);
    assert.equal(get.status, 200);
    assert.deepEqual(routeHeaders(head.headers), routeHeaders(get.headers));

    const uiGet = await call(agent.addr, 'GET', '/ui/');
    const uiHead = await call(agent.addr, 'HEAD', '/ui/');
    assert.equal(uiHead.status, uiGet.status);
    assert.equal(uiHead.body.length, 0);
    if (uiGet.status === 200) {
      assert.equal(uiHead.headers['content-length'], String(uiGet.body.length));
      assert.equal(uiHead.headers['etag'], uiGet.headers['etag']);
      assert.equal(uiHead.headers['content-type'], uiGet.headers['content-type']);
    }
  });

  it('a WebSocket route: HEAD never upgrades; it answers as the route does without an Upgrade (exec 400, node connect empty 404)', async () => {
    const exec = await call(agent.addr, 'HEAD', '/v1/client/allocation/no-such-alloc/exec', agent.token);
    assert.equal(exec.status, 400);
    assert.equal(exec.headers['x-berth-error-code'], 'INVALID');
    assert.equal(exec.body.length, 0);
    const execGet = await call(agent.addr, 'GET', '/v1/client/allocation/no-such-alloc/exec', agent.token);
    assert.equal(exec.headers['content-length'], String(execGet.body.length));
    const connect = await call(agent.addr, 'HEAD', '/v1/node/connect', agent.token);
    assert.equal(connect.status, 404);
    assert.equal(connect.headers['content-length'], '0');
    assert.equal(connect.body.length, 0);
  });
});
