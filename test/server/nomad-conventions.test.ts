// The conventions every route of the API shares with Nomad's, as a Nomad
// client meets them: its token header, its plain-text errors, and Berth's
// JSON errors for a caller that asks for them.
import assert from 'node:assert/strict';
import { request } from 'node:http';
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

  it("reads a body as JSON whatever its Content-Type: none (Nomad's Go api sends none), curl -d's form type, text", async () => {
    // fetch always adds a Content-Type to a string body; node:http sends only the headers given.
    const send = (headers: Record<string, string>, body: string): Promise<{ status: number; code: string | undefined; text: string }> =>
      new Promise((resolve, reject) => {
        const req = request(h.url + '/v1/jobs', { method: 'POST', headers: { 'X-Nomad-Token': TOKENS.management, 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (d: string) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, code: res.headers['x-berth-error-code'] as string | undefined, text }));
        });
        req.on('error', reject);
        req.end(body);
      });
    for (const headers of [{} as Record<string, string>, { 'content-type': 'application/x-www-form-urlencoded' }, { 'content-type': 'text/plain' }]) {
      // Broken JSON is refused as broken JSON (so it was read as JSON), not as an unsupported media type.
      const broken = await send(headers, '{"Job": ');
      assert.equal(broken.status, 400, `${JSON.stringify(headers)}: ${broken.text}`);
      assert.notEqual(broken.code, undefined);
      // A JSON body that is not a job is refused for what it lacks, as with application/json.
      const notAJob = await send(headers, '{"Job": {"ID": 7}}');
      const asJson = await send({ 'content-type': 'application/json' }, '{"Job": {"ID": 7}}');
      assert.deepEqual({ status: notAJob.status, code: notAJob.code, text: notAJob.text }, { status: asJson.status, code: asJson.code, text: asJson.text }, JSON.stringify(headers));
    }
  });

  it('answers { code, message, details } to a caller that accepts JSON', async () => {
    const res = await get('/v1/no/such/route', { 'X-Nomad-Token': TOKENS.management, accept: 'application/json' });
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { code: 'NOT_FOUND', message: 'no route GET /v1/no/such/route', details: {} });
  });
});
