import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { NO_SCHEMA_COMPILERS } from './schema-compilers.js';

describe('NO_SCHEMA_COMPILERS (fastify without ajv or fast-json-stringify)', () => {
  it('serves routes without a fastify schema, their JSON bodies and answers as before', async () => {
    const app = Fastify({ logger: false, schemaController: NO_SCHEMA_COMPILERS });
    app.post('/v1/echo', async (req) => ({ Got: req.body }));
    // A route with a schema that names no validated part (as @fastify/static's hide flag) is fine.
    app.get('/ui/x', { schema: { hide: true } as object }, async () => 'ok');
    try {
      const res = await app.inject({ method: 'POST', url: '/v1/echo', payload: { A: [1, 'two'] } });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json(), { Got: { A: [1, 'two'] } });
      assert.equal((await app.inject({ method: 'GET', url: '/ui/x' })).body, 'ok');
    } finally {
      await app.close();
    }
  });

  it('refuses to start a listener whose route declares a body or response schema, naming the route', async () => {
    const body = Fastify({ logger: false, schemaController: NO_SCHEMA_COMPILERS });
    body.post('/v1/thing', { schema: { body: { type: 'object' } } }, async () => 'x');
    await assert.rejects(async () => body.ready(), /POST \/v1\/thing declares a fastify validation schema \(body\); Berth's routes validate with zod instead/);
    const response = Fastify({ logger: false, schemaController: NO_SCHEMA_COMPILERS });
    response.get('/v1/thing', { schema: { response: { 200: { type: 'string' } } } }, async () => 'x');
    await assert.rejects(async () => response.ready(), /GET \/v1\/thing declares a fastify response schema/);
  });
});
