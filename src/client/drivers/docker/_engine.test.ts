// The docker driver's plain Engine API GET and its fingerprint against a fake
// dockerd (an HTTP server on a real unix socket) and against paths where no
// daemon listens: what a node reports must not depend on whether the GET
// went out or was answered from the socket's absence.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { engineGet } from './_engine.js';
import { DockerDriver } from './docker-driver.js';

/** What Node's own HTTP client fails with on `socketPath` (the answer engineGet must give). */
function directError(socketPath: string): Promise<NodeJS.ErrnoException> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: '/version' }, () => reject(new Error('answered')));
    req.on('error', resolve);
    req.end();
  });
}

describe('docker engine GET', () => {
  let dir: string;
  let fake: Server;
  let fakeSocket: string;
  const seen: string[] = [];

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'berth-engine-'));
    fakeSocket = path.join(dir, 'docker.sock');
    fake = createServer((req, res) => {
      seen.push(req.url ?? '');
      if (req.url === '/version') res.end(JSON.stringify({ Version: '27.1.0' }));
      else if (req.url === '/info') res.end(JSON.stringify({ CgroupVersion: '2', Runtimes: { runc: {}, crun: {} } }));
      else res.writeHead(404).end('{"message":"page not found"}');
    });
    await new Promise<void>((resolve) => fake.listen(fakeSocket, resolve));
  });

  after(async () => {
    await new Promise<void>((resolve) => fake.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  test('nothing at the socket path: rejected as connecting rejects (message, code, syscall, address)', async () => {
    const missing = path.join(dir, 'none', 'docker.sock');
    const want = await directError(missing);
    await assert.rejects(engineGet(missing, '/version'), (err: NodeJS.ErrnoException & { address?: string }) => {
      assert.equal(err.message, want.message);
      assert.equal(err.message, `connect ENOENT ${missing}`);
      assert.equal(err.code, want.code);
      assert.equal(err.errno, want.errno);
      assert.equal(err.syscall, want.syscall);
      assert.equal(err.address, (want as { address?: string }).address);
      return true;
    });
  });

  test('a file that is not a listening socket: the request goes out and fails as before', async () => {
    const plain = path.join(dir, 'plain.sock');
    writeFileSync(plain, '');
    const want = await directError(plain);
    await assert.rejects(engineGet(plain, '/version'), (err: Error) => err.message === want.message);
  });

  test('a daemon answers: its JSON, and an error status rejects naming the path', async () => {
    assert.deepEqual(await engineGet(fakeSocket, '/version'), { Version: '27.1.0' });
    await assert.rejects(engineGet(fakeSocket, '/nope'), /\/nope: HTTP 404: \{"message":"page not found"\}/);
  });

  test('fingerprint: healthy from the fake daemon; unhealthy naming the endpoint and connect ENOENT when nothing is there', async () => {
    const up = await new DockerDriver({ stateDir: path.join(dir, 'up'), pluginConfig: { endpoint: `unix://${fakeSocket}` } }).fingerprint();
    assert.equal(up.healthy, true, up.healthReason);
    assert.equal(up.cgroups, 'v2');
    assert.deepEqual(up.attributes, { 'driver.docker': 'true', 'driver.docker.version': '27.1.0', 'driver.docker.runtimes': 'runc,crun' });
    assert.ok(seen.includes('/version') && seen.includes('/info'));

    const missing = path.join(dir, 'gone.sock');
    const down = await new DockerDriver({ stateDir: path.join(dir, 'down'), pluginConfig: { endpoint: `unix://${missing}` } }).fingerprint();
    assert.equal(down.healthy, false);
    assert.equal(down.detected, true);
    assert.equal(down.healthReason, `Failed to connect to docker daemon at unix://${missing}: connect ENOENT ${missing}`);
  });
});
