// The conventions every route of the API shares with Nomad's, as a Nomad
// client meets them: its token header, its plain-text errors, and Berth's
// JSON errors for a caller that asks for them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startServer, TOKENS, type Harness } from './_harness.js';

describe('Nomad API conventions', () => {
  let h: Harness;
  before(async () => {
    h = await startServer();
  });
  after(async () => h.close());

  const get = (path: string, headers: Record<string, string>): Promise<Response> => fetch(h.url + path, { headers });

  it('takes the token from X-Nomad-Token, as Nomad clients send it, and from a bearer header', async () => {
    const nomad = await get('/v1/jobs', { 'X-Nomad-Token': TOKENS.readOnly });
    assert.equal(nomad.status, 200);
    await nomad.arrayBuffer();
    const bearer = await get('/v1/jobs', { authorization: `Bearer ${TOKENS.readOnly}` });
    assert.equal(bearer.status, 200);
    await bearer.arrayBuffer();
    const wrong = await get('/v1/jobs', { 'X-Nomad-Token': 'not-a-known-token' });
    assert.equal(wrong.status, 401);
    assert.equal(await wrong.text(), 'unknown token');
  });

  it('answers an error as plain text (what Nomad clients print) with its code in X-Berth-Error-Code', async () => {
    const res = await get('/v1/no/such/route', { 'X-Nomad-Token': TOKENS.management });
    assert.equal(res.status, 404);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    assert.equal(res.headers.get('x-berth-error-code'), 'NOT_FOUND');
    assert.equal(await res.text(), 'no route GET /v1/no/such/route');
    const forbidden = await fetch(h.url + '/v1/system/gc', { method: 'PUT', headers: { 'X-Nomad-Token': TOKENS.readOnly } });
    assert.equal(forbidden.status, 403);
    assert.match(await forbidden.text(), /^role "read-only" may not change this$/);
  });

  it('answers { code, message, details } to a caller that accepts JSON', async () => {
    const res = await get('/v1/no/such/route', { 'X-Nomad-Token': TOKENS.management, accept: 'application/json' });
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { code: 'NOT_FOUND', message: 'no route GET /v1/no/such/route', details: {} });
  });
});
