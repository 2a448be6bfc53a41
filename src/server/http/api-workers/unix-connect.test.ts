// A worker's connect to main's internal socket while main's backlog is full:
// it waits until main accepts, where a plain connect fails with EAGAIN. Main
// is a real process here, listening on a real unix socket with a backlog of
// one and its event loop blocked until the test lets it go.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net, { type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { connectUnix, CONNECT_GIVE_UP_MS } from './unix-connect.js';

const dir = mkdtempSync(join(tmpdir(), 'berth-unixc-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A process listening at `path` with a backlog of one that then blocks its event loop until
 * `gate` exists (it polls for it synchronously), then accepts and answers "hello" on each connection.
 */
function busyMain(path: string, gate: string): Promise<ChildProcess> {
  const script = `
    const net = require('node:net'), fs = require('node:fs');
    const server = net.createServer((s) => s.end('hello'));
    server.listen({ path: ${JSON.stringify(path)}, backlog: 1 }, () => {
      process.stdout.write('listening\\n');
      const tick = new Int32Array(new SharedArrayBuffer(4));
      while (!fs.existsSync(${JSON.stringify(gate)})) Atomics.wait(tick, 0, 0, 10);
    });`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', () => resolve(child));
  });
}

function plainConnect(path: string): Promise<Socket | NodeJS.ErrnoException> {
  return new Promise((resolve) => {
    const s = net.connect(path);
    s.once('connect', () => resolve(s));
    s.once('error', (err) => resolve(err));
  });
}

function read(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.setEncoding('utf8').on('data', (d: string) => (text += d));
    socket.once('end', () => resolve(text));
    socket.once('error', reject);
  });
}

describe("a worker's connect to main's internal socket", () => {
  it('waits while main is too busy to accept and its backlog is full, then is served, where a plain connect fails with EAGAIN', async () => {
    const path = join(dir, 'busy.sock');
    const gate = join(dir, 'go');
    const main = await busyMain(path, gate);
    try {
      // Fill the backlog: connects succeed (queued) until it is full, then fail with EAGAIN.
      const queued: Socket[] = [];
      let refused: NodeJS.ErrnoException | undefined;
      for (let i = 0; i < 64 && !refused; i++) {
        const r = await plainConnect(path);
        if (r instanceof net.Socket) queued.push(r);
        else refused = r;
      }
      assert.equal(refused?.code, 'EAGAIN', 'a plain connect to a full backlog fails at once');

      const connected = new Promise<Socket>((resolve, reject) => connectUnix(path, (err, s) => (err || !s ? reject(err) : resolve(s))));
      let settled = false;
      void connected.then(() => (settled = true), () => (settled = true));
      // Still waiting after several retries while main stays busy.
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(settled, false, 'no answer while main stays busy');

      spawn('touch', [gate]);
      const socket = await connected;
      assert.equal(await read(socket), 'hello', 'served once main accepts');
      for (const s of queued) s.destroy();
    } finally {
      main.kill('SIGKILL');
    }
  });

  it('gives up with EAGAIN once main stayed too busy for the give-up time', async () => {
    const path = join(dir, 'stuck.sock');
    const main = await busyMain(path, join(dir, 'never'));
    try {
      for (let i = 0; i < 64; i++) if (!((await plainConnect(path)) instanceof net.Socket)) break;
      // A clock that jumps past the give-up time after the first try.
      let calls = 0;
      const now = (): number => (calls++ === 0 ? 0 : CONNECT_GIVE_UP_MS);
      const err = await new Promise<Error | null>((resolve) => connectUnix(path, (e) => resolve(e), now));
      assert.equal((err as NodeJS.ErrnoException | null)?.code, 'EAGAIN');
    } finally {
      main.kill('SIGKILL');
    }
  });

  it('fails at once on an error other than a full backlog (no one listening)', async () => {
    const err = await new Promise<Error | null>((resolve) => connectUnix(join(dir, 'absent.sock'), (e) => resolve(e)));
    assert.equal((err as NodeJS.ErrnoException | null)?.code, 'ENOENT');
  });
});
