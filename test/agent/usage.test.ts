// `berth agent` refuses bad flags and bad config files with one clear line
// (file:line:col for a config) and exit code 2, before starting anything; a
// port in use is a start failure (exit 1).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { mountsUnder, pidsWith, until } from '../support/runtime-cluster.js';
import { berth, startAgent, tempDir } from './_agent.js';

/** The lines berth printed on stderr, asserting there is no stack trace. */
/** Pids of the processes whose working directory is at or below `dir` (an agent's executors work in its data dir). */
function pidsWorkingIn(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (cwd === dir || cwd.startsWith(`${dir}/`)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

function errorLines(stderr: string): string[] {
  assert.doesNotMatch(stderr, /^\s+at /m, `a stack trace:\n${stderr}`);
  return stderr.split('\n').filter((l) => l !== '');
}

describe('berth agent usage errors', () => {
  let dir = '';
  let busy: Server;
  let busyPort = 0;

  before(async () => {
    dir = await tempDir('bxu-');
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    busyPort = (busy.address() as { port: number }).port;
  });

  after(async () => {
    await new Promise((resolve) => busy.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  const oneLine: Array<[string, string[], RegExp]> = [
    ['no mode', [], /^error: choose how to run: --dev, --server or --client$/],
    ['two modes', ['--dev', '--server'], /^error: --dev and --server cannot be combined/],
    ['a bad port', ['--dev', '--port', '99999'], /^error: --port must be a port number \(0-65535\), got "99999"$/],
    ['a server without a config', ['--server'], /^error: --server needs --config <file>$/],
    ['a server address without --client', ['--dev', '--server-address', 'http://127.0.0.1:1'], /^error: --server-address is for --client$/],
    ['etcd endpoints without --server', ['--dev', '--etcd-endpoints', 'http://127.0.0.1:2379'], /^error: --etcd-endpoints is for --server$/],
    ['a missing config file', ['--server', '--config', '/nonexistent/berth.hcl'], /^error: cannot read config file \/nonexistent\/berth\.hcl: ENOENT$/],
  ];
  for (const [what, args, message] of oneLine) {
    it(`exits 2 with one line on ${what}`, async () => {
      const r = await berth(['agent', ...args]);
      assert.equal(r.code, 2, r.stderr);
      const lines = errorLines(r.stderr);
      assert.equal(lines.length, 1, r.stderr);
      assert.match(lines[0] as string, message);
    });
  }

  it('exits 2 on an unknown flag, naming it on the first line', async () => {
    const r = await berth(['agent', '--dev', '--bogus']);
    assert.equal(r.code, 2);
    assert.equal(errorLines(r.stderr)[0], "error: unknown option '--bogus'");
  });

  it('exits 2 on a client config without a server address or token', async () => {
    writeFileSync(path.join(dir, 'c.hcl'), `data_dir = "${dir}/c"\n`);
    const r = await berth(['agent', '--client', '--config', path.join(dir, 'c.hcl')]);
    assert.equal(r.code, 2);
    assert.deepEqual(errorLines(r.stderr), ['error: --client needs --server-address <url> (or client { server_address } in the config)']);
  });

  it('names file:line:col of every problem in a config file, and starts nothing', async () => {
    const file = path.join(dir, 'server.hcl');
    writeFileSync(file, `data_dir = "${dir}/s"\nports {\n  http = "4646"\n}\ntokens {\n  managment = ["x2-token-0123456789"]\n}\n`);
    const r = await berth(['agent', '--server', '--config', file]);
    assert.equal(r.code, 2, r.stderr);
    assert.deepEqual(errorLines(r.stderr), [`error: ${file}:3:3: ports.http: expected a number`, `error: ${file}:6:3: tokens: unsupported argument "managment" (did you mean "management"?)`]);
    assert.doesNotMatch(r.stderr, /x2-token/);
    assert.equal(existsSync(path.join(dir, 's')), false, 'nothing was started');

    const json = path.join(dir, 'client.json');
    writeFileSync(json, '{\n  "client": {\n    "server_address": "127.0.0.1:4646"\n  }\n}\n');
    const j = await berth(['agent', '--client', '--config', json]);
    assert.equal(j.code, 2, j.stderr);
    assert.deepEqual(errorLines(j.stderr), [`error: ${json}:3:5: client.server_address: must be an http:// URL such as "http://127.0.0.1:4646"`]);

    writeFileSync(file, 'tokens {\n  management = [\n}\n');
    const h = await berth(['agent', '--server', '--config', file]);
    assert.equal(h.code, 2);
    assert.match(errorLines(h.stderr)[0] as string, new RegExp(`^error: ${file.replace(/[.]/g, '\\.')}:\\d+:\\d+: malformed HCL`));
  });

  it('exits 1 with one line when the port is in use, leaving nothing behind', async () => {
    const dataDir = path.join(dir, 'd');
    const r = await berth(['agent', '--dev', '--port', String(busyPort), '--data-dir', dataDir]);
    assert.equal(r.code, 1, r.stderr);
    const lines = errorLines(r.stderr);
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0] as string, /EADDRINUSE/);
    // Nor an executor in the data dir (a dev agent starts its spare executor ahead of its client part).
    await until('no executor left in the data dir', () => pidsWorkingIn(dataDir).length === 0 || undefined, 10_000);
  });

  it('a second Ctrl-C forces the exit (130) while the first is still stopping tasks', { timeout: 90_000 }, async () => {
    const marker = `x2-stubborn-${process.pid}`;
    const agent = await startAgent(['--dev', '--port', '0', '--data-dir', path.join(dir, 'twice')]).ready(true);
    const job = path.join(dir, 'stubborn.hcl');
    // A task that ignores SIGTERM holds the drain for the kill timeout (5 s).
    writeFileSync(job, `job "stubborn" {\n  group "g" {\n    task "t" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/sh"\n        args    = ["-c", "trap '' TERM; while true; do sleep 0.2; done # ${marker}"]\n      }\n    }\n  }\n}\n`);
    try {
      const run = await agent.cli(['job', 'run', job]);
      assert.equal(run.code, 0, run.stderr);
      agent.child.kill('SIGINT');
      await until('the agent to begin stopping', () => agent.stdout.includes('Caught SIGINT'));
      agent.child.kill('SIGINT');
      const r = await agent.exited;
      assert.equal(r.code, 130, r.stderr);
      assert.doesNotMatch(r.stdout, /Berth agent stopped/);
    } finally {
      await agent.stop('SIGKILL');
      for (const pid of pidsWith(marker)) process.kill(pid, 'SIGKILL');
      for (const m of mountsUnder(dir)) spawnSync('umount', ['-l', m]);
    }
  });

  it('alloc exec without a command exits 2', async () => {
    const r = await berth(['alloc', 'exec', 'abc']);
    assert.equal(r.code, 2);
    assert.equal(errorLines(r.stderr)[0], "error: missing required argument 'command'");
  });
});
