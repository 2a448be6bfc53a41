// Ports as a user meets them through `berth agent --dev` (its node is its
// loopback, as Nomad's -dev): a raw_exec task listens on NOMAD_PORT_http,
// given to it in its environment and in ${...} of its args, and answers on
// 127.0.0.1 at that port; `alloc status` and the API show the ports; a second
// job asking for a static port the first holds is not placed and `job run`
// names the port; a job wanting more dynamic ports than the client's tiny
// range has left places nothing and says why. Loopback traffic only.

import assert from 'node:assert/strict';
import { writeFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Allocation, AllocationListStub, Evaluation } from '../../src/api/index.js';
import { until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest } from './_agent.js';

/** Whether nothing listens on 127.0.0.1:`port` (it can be bound now). */
function free(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** Three consecutive free loopback ports: a two-port dynamic range and a static port beside it. */
async function freePorts(): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const base = 40000 + Math.floor(Math.random() * 20000);
    if ((await free(base)) && (await free(base + 1)) && (await free(base + 2))) return base;
  }
  throw new Error('no three consecutive free ports on loopback');
}

// The server answers with what its environment says about the port; it binds where NOMAD_PORT/NOMAD_IP (via ${...} in args) say.
const SERVER = `require('http').createServer((q, r) => r.end(JSON.stringify({ addr: process.env.NOMAD_ADDR_http, hostPort: process.env.BERTH_HOST_PORT_http, admin: process.env.NOMAD_PORT_admin }))).listen(Number(process.argv[1]), process.argv[2])`;

const job = (id: string, ports: string, command = process.execPath, args = `["-e", ${JSON.stringify(SERVER)}, "\${NOMAD_PORT_http}", "\${NOMAD_IP_http}"]`): string => `
job "${id}" {
  group "g" {
    network {
${ports}
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "${command}"
        args    = ${args}
      }
      resources {
        memory = 64
      }
    }
  }
}
`;

describe('ports through the dev agent', () => {
  let dir = '';
  let agent: AgentUnderTest;
  let base = 0;

  before(async () => {
    dir = await tempDir('bports-');
    base = await freePorts();
    const config = path.join(dir, 'agent.hcl');
    writeFileSync(config, `client {\n  min_dynamic_port = ${base}\n  max_dynamic_port = ${base + 1}\n}\n`);
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'a'), '--port', '0', '--config', config]).ready(true);
  });

  after(async () => {
    for (const id of ['web', 'clash', 'greedy']) await agent?.cli(['job', 'stop', '--purge', id]).catch(() => undefined);
    await agent?.stop('SIGINT').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('a task listens on NOMAD_PORT_http from the node\'s range and is reached there; alloc status and the API show its ports', async () => {
    const file = path.join(dir, 'web.hcl');
    writeFileSync(file, job('web', `      port "http" {}\n      port "admin" {\n        static = ${base + 2}\n      }`));
    const run = await agent.cli(['job', 'run', file]);
    assert.equal(run.code, 0, run.stderr + run.stdout);
    const [stub] = await agent.get<AllocationListStub[]>('/v1/job/web/allocations');
    assert.ok(stub, 'the job has an allocation');
    const alloc = await agent.get<Allocation>(`/v1/allocation/${stub.ID}`);
    const ports = alloc.AllocatedResources?.Shared.Ports;
    assert.ok(ports, 'the allocation has ports');
    const http = ports.find((p) => p.Label === 'http');
    assert.ok(http && http.Value >= base && http.Value <= base + 1, JSON.stringify(ports));
    assert.deepEqual(ports.find((p) => p.Label === 'admin'), { Label: 'admin', Value: base + 2, To: 0, HostIP: '127.0.0.1' }, 'To as the job wrote it (none), as Nomad reports it');
    assert.equal(http.HostIP, '127.0.0.1', 'a dev agent\'s node is its loopback');

    const answer = await until('the task to answer on its port', async () => {
      try {
        const res = await fetch(`http://127.0.0.1:${http.Value}/`);
        return (await res.json()) as { addr: string; hostPort: string; admin: string };
      } catch {
        return undefined;
      }
    }, 60_000);
    assert.deepEqual(answer, { addr: `127.0.0.1:${http.Value}`, hostPort: String(http.Value), admin: String(base + 2) });

    const status = await agent.cli(['alloc', 'status', alloc.ID]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /Allocation Addresses/);
    assert.match(status.stdout, new RegExp(`http\\s+127\\.0\\.0\\.1:${http.Value}\\b`));
    assert.match(status.stdout, new RegExp(`admin\\s+127\\.0\\.0\\.1:${base + 2}\\b`));
  });

  it('a second job asking for the static port the first holds is not placed, and job run names the port', async () => {
    const file = path.join(dir, 'clash.hcl');
    writeFileSync(file, job('clash', `      port "admin" {\n        static = ${base + 2}\n      }`, '/bin/sleep', '["1000"]'));
    const run = await agent.cli(['job', 'run', file]);
    const said = run.stdout + run.stderr;
    assert.match(said, new RegExp(`Dimension "network: reserved port collision admin=${base + 2}" exhausted on 1 node`), said);
    assert.notEqual(run.code, 0, 'job run fails when nothing could be placed');
    assert.equal((await agent.get<AllocationListStub[]>('/v1/job/clash/allocations')).length, 0);
    const evals = await agent.get<Evaluation[]>('/v1/job/clash/evaluations');
    const dimensions = (e: Evaluation): string[] => Object.values(e.FailedTGAllocs ?? {}).flatMap((m) => Object.keys(m.DimensionExhausted ?? {}));
    assert.ok(evals.some((e) => e.Status === 'blocked' && dimensions(e).includes(`network: reserved port collision admin=${base + 2}`)), JSON.stringify(evals));
    const status = await agent.cli(['job', 'status', 'clash']);
    assert.match(status.stdout + status.stderr, new RegExp(`reserved port collision admin=${base + 2}`));
  });

  it('a job wanting two dynamic ports when the range has one left places nothing and says why', async () => {
    const file = path.join(dir, 'greedy.hcl');
    writeFileSync(file, job('greedy', '      port "a" {}\n      port "b" {}', '/bin/sleep', '["1000"]'));
    const run = await agent.cli(['job', 'run', file]);
    assert.notEqual(run.code, 0);
    assert.match(run.stdout + run.stderr, /Dimension "network: dynamic port selection failed" exhausted on 1 node/);
    assert.equal((await agent.get<AllocationListStub[]>('/v1/job/greedy/allocations')).length, 0);
  });
});
