// A node's data dir fills up (issue 23 part 5): a client agent whose data dir
// is a small tmpfs of its own (the server's is elsewhere, as on a real
// cluster), a task that writes into its allocation's shared data dir until
// the disk refuses. `job stop` still stops it and the client records the stop
// (its state keeps a reserve for that), client GC frees the space, and SIGINT
// with a second filler running stops it, or exits non-zero naming it.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { fillDisk } from '../support/fill-disk.js';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import { mountsUnder, pidsWith, until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest, type Result } from './_agent.js';

const MGMT = 'x23-mgmt-token-0123456789';
const NODE = 'x23-node-token-0123456789';
const MARKER = `x23-full-disk-${process.pid}`;

function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

/** A service job whose task fills $BERTH_ALLOC_DIR/data, then idles. */
const filler = (id: string): string => `job "${id}" {
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "fill" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "dd if=/dev/zero of=\\"$BERTH_ALLOC_DIR/data/fill\\" bs=64k 2>/dev/null; touch \\"$BERTH_ALLOC_DIR/data/full\\"; while :; do sleep 0.2; done # ${MARKER}"]
      }
      resources {
        cpu    = 50
        memory = 128
      }
    }
  }
}
`;

describe('a full data disk on a client', () => {
  let dir = '';
  let disk = '';
  let mounted = false;
  let server: AgentUnderTest;
  let client: AgentUnderTest;

  before(async () => {
    dir = await tempDir('bx23-');
    disk = path.join(dir, 'client');
    mkdirSync(disk);
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=32m', 'berth-full-disk', disk]);
    assert.equal(m.status, 0, `mount tmpfs: ${m.stderr.toString()}`);
    mounted = true;
    writeFileSync(path.join(dir, 'nodes.tokens'), `${NODE}\n`);
    writeFileSync(
      path.join(dir, 'server.hcl'),
      `data_dir = "${path.join(dir, 'server-data')}"\nports {\n  http = 0\n}\ntokens {\n  management = ["${MGMT}"]\n  node_file  = "${path.join(dir, 'nodes.tokens')}"\n}\n`,
    );
    server = await startAgent(['--server', '--config', path.join(dir, 'server.hcl')]).ready(false);
    server.token = MGMT;
    const config = path.join(dir, 'client.json');
    writeFileSync(config, JSON.stringify({ data_dir: disk, ports: { http: 0 }, client: { node_name: 'full', token: NODE, options: { 'driver.raw_exec.enable': true } } }));
    client = await startAgent(['--client', '--server-address', server.addr, '--config', config]).ready(false);
    client.token = MGMT;
  });

  after(async () => {
    await client?.stop('SIGINT').catch(() => undefined);
    await server?.stop('SIGINT').catch(() => undefined);
    for (const pid of pidsWith(MARKER)) spawnSync('kill', ['-9', String(pid)]);
    for (const m of mountsUnder(disk).reverse()) spawnSync('umount', ['-l', m]);
    if (mounted) spawnSync('umount', ['-l', disk]);
    rmSync(dir, { recursive: true, force: true });
  });

  /** True once a filler's dd was refused for lack of space (it then leaves a `full` file). */
  const filled = (allocId: string): boolean =>
    spawnSync('find', [disk, '-path', `*${allocId}*`, '-name', 'full'], { encoding: 'utf8' }).stdout.trim() !== '';
  const freeBytes = (): number => {
    const s = statfsSync(disk);
    return s.bavail * s.bsize;
  };
  const running = async (job: string): Promise<Api.AllocationListStub> =>
    until(`${job} running`, async () => (await server.get<Api.AllocationListStub[]>(`/v1/job/${job}/allocations`)).find((a) => a.ClientStatus === 'running'), 60_000);

  it('job stop and GC work on a full disk, and SIGINT stops what it says it stops', async () => {
    await until('the client ready', async () => (await server.get<Api.NodeListStub[]>('/v1/nodes')).some((n) => n.Status === 'ready'), 60_000);
    writeFileSync(path.join(dir, 'fill1.hcl'), filler('fill1'));
    ok(await server.cli(['job', 'run', '--detach', path.join(dir, 'fill1.hcl')]), 'job run fill1');
    const first = await running('fill1');
    // Full: the task's dd was refused. (The agent may then give up its 4 MiB reserve to write.)
    await until('the disk full', () => filled(first.ID) || undefined, 60_000);
    assert.ok(freeBytes() < 6 * 1024 * 1024, `the disk is full but for the agent's reserve (free ${freeBytes()} bytes)`);

    ok(await server.cli(['job', 'stop', 'fill1']), 'job stop on a full disk');
    await until('the stopped allocation reported complete', async () => (await server.get<Api.Allocation>(`/v1/allocation/${first.ID}`)).ClientStatus === 'complete', 60_000).catch(
      async (err: unknown) => {
        const a = await server.get<Api.Allocation>(`/v1/allocation/${first.ID}`);
        throw new Error(`${String(err)}: ${JSON.stringify({ clientStatus: a.ClientStatus, desired: a.DesiredStatus, desc: a.ClientDescription })}\n${client.stderr.slice(-3000)}`);
      },
    );
    assert.equal(pidsWith(MARKER).length, 0, 'the filler is gone');

    const res = await fetch(`${client.addr}/v1/client/gc`, { method: 'POST', headers: { authorization: `Bearer ${MGMT}` } });
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(((await res.json()) as { collected: string[] }).collected, [first.ID]);
    assert.ok(freeBytes() > 16 * 1024 * 1024, `GC freed the space (free now ${freeBytes()} bytes)`);

    // Full again, with the filler running: SIGINT stops it, or says it could not.
    writeFileSync(path.join(dir, 'fill2.hcl'), filler('fill2'));
    ok(await server.cli(['job', 'run', '--detach', path.join(dir, 'fill2.hcl')]), 'job run fill2');
    const second = await running('fill2');
    await until('the disk full again', () => filled(second.ID) || undefined, 60_000);
    const exit = await client.stop('SIGINT', 120_000);
    console.log(`SIGINT on a full disk: exit ${exit.code}`);
    if (exit.code === 0) {
      assert.equal(pidsWith(MARKER).length, 0, `a clean exit, so the filler is stopped: ${exit.stderr.slice(-2000)}`);
    } else {
      assert.match(exit.stderr, new RegExp(second.ID.slice(0, 8)), `a failed stop names the allocation it could not stop: ${exit.stderr.slice(-2000)}`);
    }
  });
});


describe('a full data disk on a dev agent (server and client on the one disk)', () => {
  let dir = '';
  let disk = '';
  let mounted = false;
  let agent: AgentUnderTest | undefined;
  const marker = `${MARKER}-dev`;

  before(async () => {
    dir = await tempDir('bx38-');
    disk = path.join(dir, 'data');
    mkdirSync(disk);
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=32m', 'berth-full-dev', disk]);
    assert.equal(m.status, 0, `mount tmpfs: ${m.stderr.toString()}`);
    mounted = true;
    agent = await startAgent(['--dev', '--data-dir', disk, '--port', '0']).ready(true);
  });

  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    for (const pid of pidsWith(marker)) spawnSync('kill', ['-9', String(pid)]);
    for (const m of mountsUnder(disk).reverse()) spawnSync('umount', ['-l', m]);
    if (mounted) spawnSync('umount', ['-l', disk]);
    rmSync(dir, { recursive: true, force: true });
  });

  const filled = (allocId: string): boolean =>
    spawnSync('find', [disk, '-path', `*${allocId}*`, '-name', 'full'], { encoding: 'utf8' }).stdout.trim() !== '';

  it('job stop works on the full disk (the server state spends its reserve), and SIGINT names every process and mount it left', async () => {
    const a = agent!;
    writeFileSync(path.join(dir, 'filler.hcl'), filler('filler').replace(MARKER, marker));
    ok(await a.cli(['job', 'run', '--detach', path.join(dir, 'filler.hcl')]), 'job run filler');
    // Placed is enough: the filler may fill the shared disk before the server can record it running
    // (a status write is not one that frees space, so it gets no reserve).
    const placed = (x: Api.AllocationListStub): boolean => x.ClientStatus === 'running' || x.ClientStatus === 'pending';
    const alloc = await until('filler placed', async () => (await a.get<Api.AllocationListStub[]>('/v1/job/filler/allocations')).find(placed), 60_000);
    await until('the disk full', () => filled(alloc.ID) || undefined, 60_000);
    // Whatever room the agent's own writes left meanwhile (the client's reserve spent on a record) is taken too.
    fillDisk(path.join(disk, 'more-fill'));
    const stop = await a.cli(['job', 'stop', 'filler']);
    assert.equal(stop.code, 0, `job stop on a full disk: ${stop.stderr}${stop.stdout}`);
    await until('the filler stopped', async () => (await a.get<Api.Allocation>(`/v1/allocation/${alloc.ID}`)).ClientStatus === 'complete', 60_000);
    assert.equal(pidsWith(marker).length, 0, 'the filler is gone');
    rmSync(path.join(disk, 'more-fill'));

    // Full again with a second filler running; SIGINT stops it, or names everything it left.
    writeFileSync(path.join(dir, 'filler2.hcl'), filler('filler2').replace(MARKER, marker));
    const res = await fetch(`${a.addr}/v1/client/gc`, { method: 'POST', headers: { authorization: `Bearer ${a.token}` } });
    assert.equal(res.status, 200, await res.text());
    ok(await a.cli(['job', 'run', '--detach', path.join(dir, 'filler2.hcl')]), 'job run filler2');
    const second = await until('filler2 placed', async () => (await a.get<Api.AllocationListStub[]>('/v1/job/filler2/allocations')).find(placed), 60_000);
    await until('the disk full again', () => filled(second.ID) || undefined, 60_000);
    const exit = await a.stop('SIGINT', 120_000);
    agent = undefined;
    // What is left of the data dir now, as the test sees it: every one of these must have been named.
    const leftPids = pidsWith(disk).filter((pid) => pid !== process.pid);
    const leftMounts = mountsUnder(disk).filter((m) => m !== disk);
    console.log(`SIGINT on a full disk: exit ${exit.code}; left ${leftPids.length} process(es), ${leftMounts.length} mount(s)`);
    if (exit.code === 0) {
      assert.deepEqual([leftPids, leftMounts], [[], []], `a clean exit leaves nothing: ${exit.stdout.slice(-2000)}`);
    } else {
      for (const pid of leftPids) assert.match(exit.stdout, new RegExp(`process ${pid}:`), `process ${pid} left and not named: ${exit.stdout.slice(-3000)}`);
      for (const m of leftMounts) assert.ok(exit.stdout.includes(`mount ${m}`), `mount ${m} left and not named: ${exit.stdout.slice(-3000)}`);
    }
  });
});
