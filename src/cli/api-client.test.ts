// The CLI's API client and request sizes: a body past the agent's limit is
// refused before it is sent (a server that refuses it may close the socket
// mid-body, which the client would see as EPIPE), and a 413 that comes
// without a JSON body still reads as "request body too large".

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { MAX_REQUEST_BODY_BYTES as SERVER_BODY_LIMIT } from '../structs/index.js';
import { ApiClient, ApiClientError, MAX_REQUEST_BODY_BYTES } from './api-client.js';

describe('ApiClient request sizes', () => {
  let server: Server;
  let requests = 0;
  let client: ApiClient;

  before(async () => {
    server = createServer((req, res) => {
      requests++;
      if (req.url?.startsWith('/early-close')) {
        // Answers before reading the body, and closes the socket under the client's write.
        res.writeHead(413, { connection: 'close', 'content-type': 'application/json' });
        res.end('{"code":"TOO_LARGE","message":"request body too large (limit 1024 bytes)","details":{}}', () => req.socket.destroy());
        return;
      }
      req.resume();
      if (req.url?.startsWith('/small-limit')) {
        res.writeHead(413, { connection: 'close' });
        res.end();
        return;
      }
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = new ApiClient({ address: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, signal: new AbortController().signal });
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('the CLI checks the same limit the server applies by default', () => {
    assert.equal(MAX_REQUEST_BODY_BYTES, SERVER_BODY_LIMIT);
  });

  it('a body past the limit is refused with TOO_LARGE naming the limit, and nothing is sent', async () => {
    const before = requests;
    await assert.rejects(client.request('POST', '/v1/jobs', { body: { pad: 'x'.repeat(MAX_REQUEST_BODY_BYTES) } }), (err: unknown) => {
      assert.ok(err instanceof ApiClientError);
      assert.equal(err.code, 'TOO_LARGE');
      assert.match(err.message, /^request body too large \(limit 4194304 bytes\): this one is \d+ bytes; nothing was sent$/);
      return true;
    });
    assert.equal(requests, before);
    await client.request('POST', '/v1/jobs', { body: { pad: 'x'.repeat(1000) } });
  });

  it('a 413 with no JSON body reads as request body too large', async () => {
    await assert.rejects(client.request('POST', '/small-limit', { body: { pad: 'x' } }), (err: unknown) => {
      assert.ok(err instanceof ApiClientError);
      assert.equal(err.code, 'TOO_LARGE');
      assert.equal(err.status, 413);
      assert.equal(err.message, 'request body too large');
      return true;
    });
  });

  it('a server that answers 413 and closes the socket mid-body: its answer is shown, not EPIPE', async () => {
    for (let i = 0; i < 5; i++) {
      await assert.rejects(client.request('POST', '/early-close', { body: { pad: 'x'.repeat(3 * 1024 * 1024) } }), (err: unknown) => {
        assert.ok(err instanceof ApiClientError);
        // The answer wins whenever it reached the client; a bare transport error is still named, never left hanging.
        if (err.code !== 'API_UNREACHABLE') assert.equal(err.message, 'request body too large (limit 1024 bytes)');
        return true;
      });
    }
  });
});

describe('ApiClient answer timeout (--client-timeout, BERTH_CLIENT_TIMEOUT)', () => {
  let silent: Server;
  let answering: Server;
  const url = (s: Server): string => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

  before(async () => {
    // Accepts the request and never answers, as a paused server does.
    silent = createServer(() => undefined);
    answering = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    await Promise.all([silent, answering].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
  });
  after(async () => {
    for (const s of [silent, answering]) s.closeAllConnections();
    await Promise.all([silent, answering].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  });

  it('a server that does not answer within the timeout is left for the next one listed', async () => {
    const retries: string[] = [];
    const client = new ApiClient({ address: [url(silent), url(answering)], signal: new AbortController().signal, answerTimeoutMs: 200, onRetry: (why) => retries.push(why) });
    assert.equal(client.answerTimeoutMs, 200);
    assert.deepEqual((await client.get('/v1/jobs')).body, { ok: true });
    assert.equal(client.address, url(answering));
    assert.match(retries.join('\n'), /no answer within 200ms; see --client-timeout/);
  });

  it('alone, it fails with API_UNREACHABLE saying how long it waited', async () => {
    const client = new ApiClient({ address: url(silent), signal: new AbortController().signal, answerTimeoutMs: 150, retryForMs: 0 });
    await assert.rejects(client.get('/v1/jobs'), (err: unknown) => {
      assert.ok(err instanceof ApiClientError);
      assert.equal(err.code, 'API_UNREACHABLE');
      assert.match(err.message, /^cannot reach the Berth agent at http:\/\/127\.0\.0\.1:\d+ \(ETIMEDOUT: no answer within 150ms; see --client-timeout\)$/);
      return true;
    });
  });

  it('defaults to 10 s', () => {
    assert.equal(new ApiClient({ address: url(answering), signal: new AbortController().signal }).answerTimeoutMs, 10_000);
  });
});
