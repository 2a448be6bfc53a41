// The client agent's own listener as a Nomad client meets it: its token as
// X-Nomad-Token (or a bearer token), errors as plain text (JSON to a caller
// that accepts it), a token it does not know checked with the server.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { silentLogger } from '../lib/index.js';
import { ClientListener, type TokenVerdict } from './client-listener.js';

const MANAGEMENT = 'management-token-0001';
const READER = 'read-only-token-0001';

describe('ClientListener', () => {
  let listener: ClientListener;
  let url = '';
  const asked: string[] = [];

  before(async () => {
    listener = new ClientListener({
      client: () => undefined,
      drivers: new Map(),
      logger: silentLogger(),
      tokens: { management: [MANAGEMENT], readOnly: [READER] },
      verifyWithServer: async (token): Promise<TokenVerdict> => {
        asked.push(token);
        return token === 'cluster-token-0001' ? 'ok' : 'unauthenticated';
      },
      registry: new Registry(),
      bindAddress: '127.0.0.1',
      port: 0,
    });
    url = await listener.start();
  });
  after(() => listener.stop());

  const get = async (p: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string; code: string; text: string }> => {
    const res = await fetch(url + p, { headers });
    return { status: res.status, type: res.headers.get('content-type') ?? '', code: res.headers.get('x-berth-error-code') ?? '', text: await res.text() };
  };

  it('takes the token as X-Nomad-Token or a bearer token, and asks the server about one it does not know', async () => {
    // The client part is not running here: a caller let in gets 503, one refused 401.
    assert.equal((await get('/v1/client/self', { 'X-Nomad-Token': MANAGEMENT })).status, 503);
    assert.equal((await get('/v1/client/self', { authorization: `Bearer ${READER}` })).status, 503);
    assert.equal((await get('/v1/client/self', { 'X-Nomad-Token': 'cluster-token-0001' })).status, 503);
    assert.deepEqual(asked, ['cluster-token-0001']);
    const unknown = await get('/v1/client/self', { 'X-Nomad-Token': 'nobody-knows-this' });
    assert.deepEqual([unknown.status, unknown.code, unknown.text], [401, 'UNAUTHENTICATED', 'unknown token']);
    const reader = await get('/v1/client/allocation/a1/exec', { 'X-Nomad-Token': READER });
    assert.deepEqual([reader.status, reader.text], [403, 'this needs a management token']);
  });

  it("answers errors as Nomad does, in plain text, and as { code, message, details } to a caller that accepts JSON", async () => {
    const none = await get('/v1/client/fs/ls/a1');
    assert.equal(none.status, 401);
    assert.match(none.type, /^text\/plain/);
    assert.equal(none.text, 'a token is required (X-Nomad-Token: <token>, or Authorization: Bearer <token>)');
    const notReady = await get('/v1/client/fs/ls/a1', { 'X-Nomad-Token': MANAGEMENT, accept: 'application/json' });
    assert.equal(notReady.status, 503);
    assert.deepEqual(JSON.parse(notReady.text), { code: 'CLIENT_NOT_READY', message: 'the node agent is not running yet', details: {} });
    const missing = await get('/v1/client/nowhere', { 'X-Nomad-Token': MANAGEMENT });
    assert.deepEqual([missing.status, missing.code, missing.text], [404, 'NOT_FOUND', 'no route GET /v1/client/nowhere']);
  });
});
