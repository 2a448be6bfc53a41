import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, describe, it } from 'node:test';
import Fastify from 'fastify';
import { registerUiRoutes } from './ui-routes.js';

const dir = mkdtempSync(path.join(tmpdir(), 'berth-ui-routes-'));
const INDEX = '<!doctype html><title>Berth</title><script src="/ui/assets/app-ABC.js"></script>';
mkdirSync(path.join(dir, 'ui', 'assets'), { recursive: true });
writeFileSync(path.join(dir, 'ui', 'index.html'), INDEX);
writeFileSync(path.join(dir, 'ui', 'assets', 'app-ABC.js'), 'console.log("berth ui")');
writeFileSync(path.join(dir, 'ui', 'assets', 'app-ABC.js.gz'), gzipSync('console.log("berth ui")'));
writeFileSync(path.join(dir, 'secret.txt'), 'outside the UI folder');

after(() => rmSync(dir, { recursive: true, force: true }));

async function app(uiDir?: string) {
  const a = Fastify();
  await registerUiRoutes(a, uiDir ? { dir: uiDir } : { dir: path.join(dir, 'missing') });
  return a;
}

describe('the web UI files at /ui', () => {
  it('serves index.html for /ui/ and for any deep link under it, never cached', async () => {
    const a = await app(path.join(dir, 'ui'));
    for (const url of ['/ui/', '/ui/volumes/default/data', '/ui/nodes/abc']) {
      const res = await a.inject({ url });
      assert.equal(res.statusCode, 200, url);
      assert.equal(res.body, INDEX, url);
      assert.equal(res.headers['cache-control'], 'no-cache', url);
    }
    assert.equal((await a.inject({ url: '/ui' })).headers.location, '/ui/');
    assert.equal((await a.inject({ url: '/' })).headers.location, '/ui/');
  });

  it('serves hashed assets for a year, gzipped to browsers that accept it', async () => {
    const a = await app(path.join(dir, 'ui'));
    const plain = await a.inject({ url: '/ui/assets/app-ABC.js' });
    assert.equal(plain.body, 'console.log("berth ui")');
    assert.match(String(plain.headers['cache-control']), /max-age=31536000.*immutable/);
    const gz = await a.inject({ url: '/ui/assets/app-ABC.js', headers: { 'accept-encoding': 'gzip' } });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.match(String(gz.headers['content-type']), /javascript/);
  });

  it('serves every one of the first requests at once (its file server loads at the first) and the routes beside it meanwhile', async () => {
    const a = await app(path.join(dir, 'ui'));
    a.get('/v1/ping', async () => 'pong');
    const urls = ['/ui/', '/ui/assets/app-ABC.js', '/ui/jobs', '/ui/assets/app-ABC.js', '/ui/nodes/x'];
    const [ping, ...answers] = await Promise.all([a.inject({ url: '/v1/ping' }), ...urls.map((url) => a.inject({ url }))]);
    assert.equal(ping!.body, 'pong');
    answers.forEach((res, i) => {
      assert.equal(res.statusCode, 200, urls[i]);
      assert.equal(res.body, urls[i]!.includes('assets') ? 'console.log("berth ui")' : INDEX, urls[i]);
    });
    await a.close();
  });

  it('never serves a file outside its folder', async () => {
    const a = await app(path.join(dir, 'ui'));
    for (const url of ['/ui/../secret.txt', '/ui/%2e%2e/secret.txt', '/ui/assets/..%2f..%2fsecret.txt']) {
      const res = await a.inject({ url });
      assert.ok(!res.body.includes('outside the UI folder'), `${url} leaked a file`);
    }
  });

  it('says how to build the UI when it was not built', async () => {
    const a = await app();
    const res = await a.inject({ url: '/ui/' });
    assert.equal(res.statusCode, 404);
    assert.match(res.json<{ message: string }>().message, /npm run build/);
  });
});
