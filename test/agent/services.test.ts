// Nomad's native service discovery through `berth agent --dev`: a server task
// listening on loopback registers a service with an http check; a client
// task's template finds it with nomadService and reaches it; when the server
// stops answering its check turns critical, the service leaves the list and
// the client's template is rendered again (change_mode restart); it comes
// back when the server answers again, and goes when the job stops.

import assert from 'node:assert/strict';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AllocCheckStatuses, Allocation, AllocationListStub, ServiceRegistration } from '../../src/api/index.js';
import { until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest } from './_agent.js';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

// The server answers /health with 200 until the "down" file exists, then 503; / says hello.
const SERVER = `
const http = require('http');
const fs = require('fs');
const [port, down] = process.argv.slice(2);
http.createServer((req, res) => {
  if (req.url === '/health') { res.writeHead(fs.existsSync(down) ? 503 : 200); res.end(); return; }
  res.end('hello from srv');
}).listen(Number(port), '127.0.0.1', () => console.log('listening on ' + port));
`;
// The client prints what its template rendered and what the upstream answered, then idles.
const CLIENT = `
const fs = require('fs');
const http = require('http');
const up = fs.readFileSync(process.env.NOMAD_TASK_DIR + '/upstream.txt', 'utf8').trim();
console.log('upstream=' + up);
if (up) http.get('http://' + up + '/', (r) => { let b = ''; r.on('data', (d) => (b += d)); r.on('end', () => console.log('answer=' + b)); }).on('error', (e) => console.log('error=' + e.message));
setInterval(() => {}, 1 << 30);
`;

describe('services and checks through the dev agent', () => {
  let dir = '';
  let agent: AgentUnderTest;
  let port = 0;
  let down = '';

  before(async () => {
    dir = await tempDir('bsvc-');
    port = await freePort();
    down = path.join(dir, 'down');
    writeFileSync(path.join(dir, 'srv.js'), SERVER);
    writeFileSync(path.join(dir, 'cli.js'), CLIENT);
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'a'), '--port', '0']).ready(true);
  });

  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  async function run(name: string, hcl: string): Promise<void> {
    const file = path.join(dir, `${name}.hcl`);
    writeFileSync(file, hcl);
    const res = await agent.cli(['job', 'run', '--detach', file]);
    assert.equal(res.code, 0, res.stderr);
  }

  const instances = (q = ''): Promise<ServiceRegistration[]> => agent.get<ServiceRegistration[]>(`/v1/service/echo-api${q}`);
  async function allocOf(job: string): Promise<Allocation> {
    const [a] = await until(`an allocation of ${job}`, async () => {
      const list = await agent.get<AllocationListStub[]>(`/v1/job/${job}/allocations`);
      return list.length ? list : undefined;
    }, 60_000);
    return agent.get<Allocation>(`/v1/allocation/${(a as AllocationListStub).ID}`);
  }
  async function logs(allocId: string, task: string): Promise<string> {
    const res = await agent.cli(['alloc', 'logs', allocId, task]);
    return res.stdout;
  }

  it('registers the server task\'s service once its check passes, and the client\'s template renders its address and reaches it', async () => {
    await run('echo', `
job "echo" {
  group "srv" {
    service {
      name = "\${NOMAD_JOB_NAME}-api"
      port = "${port}"
      tags = ["v1"]
      check {
        type     = "http"
        path     = "/health"
        interval = "1s"
        timeout  = "1s"
      }
    }
    task "srv" {
      driver = "raw_exec"
      config {
        command = "${process.execPath}"
        args    = ["${path.join(dir, 'srv.js')}", "${port}", "${down}"]
      }
    }
  }
}
`);
    const [reg] = await until('the echo-api service is healthy', async () => {
      const list = await instances();
      return list.length ? list : undefined;
    }, 60_000);
    assert.equal(reg?.Address, '127.0.0.1');
    assert.equal(reg?.Port, port);
    assert.deepEqual(reg?.Tags, ['v1']);
    const list = await agent.cli(['service', 'list']);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /echo-api\s+default\s+\[v1\]/);

    await run('front', `
job "front" {
  group "web" {
    task "cli" {
      driver = "raw_exec"
      config {
        command = "${process.execPath}"
        args    = ["${path.join(dir, 'cli.js')}"]
      }
      template {
        data        = "{{ range nomadService \\"echo-api\\" }}{{ .Address }}:{{ .Port }}{{ end }}"
        destination = "local/upstream.txt"
        change_mode = "restart"
        splay       = "0s"
      }
    }
  }
}
`);
    const front = await allocOf('front');
    const out = await until('the client reached the server', async () => {
      const text = await logs(front.ID, 'cli');
      return text.includes('answer=') ? text : undefined;
    }, 60_000);
    assert.match(out, new RegExp(`upstream=127\\.0\\.0\\.1:${port}`));
    assert.match(out, /answer=hello from srv/);
  });

  it('turns the check critical when the server stops answering: the service leaves the list and the client\'s template renders again', async () => {
    writeFileSync(down, '');
    const srv = await allocOf('echo');
    const critical = await until('the check is critical', async () => {
      const checks = await agent.get<AllocCheckStatuses>(`/v1/allocation/${srv.ID}/checks`);
      const c = Object.values(checks)[0];
      return c?.Status === 'failure' ? c : undefined; // Nomad's name for a critical check
    }, 60_000);
    assert.equal(critical.Service, 'echo-api');
    assert.match(critical.Output, /503/);
    // Nomad 1.4's client route answers the same result from the node that runs the check.
    const onNode = Object.values(await agent.get<AllocCheckStatuses>(`/v1/client/allocation/${srv.ID}/checks`));
    assert.deepEqual(onNode.map((c) => [c.ID, c.Service, c.Group, c.Mode, c.Status]), [[critical.ID, 'echo-api', 'srv', 'healthiness', 'failure']]);
    assert.match(onNode[0]!.Output, /503/);
    const unknown = await fetch(`${agent.addr}/v1/client/allocation/00000000-0000-0000-0000-000000000000/checks`, { headers: { Authorization: `Bearer ${agent.token}` } });
    assert.equal(unknown.status, 404);
    assert.deepEqual(await instances(), []);
    assert.equal((await instances('?include_unhealthy=true')).length, 1, 'the registration stays, unhealthy');
    const checks = await agent.cli(['alloc', 'checks', srv.ID]);
    assert.match(checks.stdout, /echo-api\s+service: "echo-api" check\s+failure/);
    const list = await agent.cli(['service', 'list']);
    assert.doesNotMatch(list.stdout, /echo-api/);

    const front = await allocOf('front');
    const restarted = await until('the client task restarted for its template', async () => {
      const a = await agent.get<Allocation>(`/v1/allocation/${front.ID}`);
      return (a.TaskStates?.['cli']?.Restarts ?? 0) >= 1 ? a : undefined;
    }, 60_000);
    assert.match((restarted.TaskStates?.['cli']?.Events ?? []).map((e) => e.Message).join('\n'), /upstream\.txt/);
    const text = await until('the client printed the empty rendering', async () => {
      const t = await logs(front.ID, 'cli');
      return /^upstream=$/m.test(t) ? t : undefined;
    }, 60_000);
    assert.match(text, /^upstream=$/m);
  });

  it('serves the service again once the check passes, and deregisters it when the job stops', async () => {
    rmSync(down);
    assert.ok(!existsSync(down));
    await until('echo-api is healthy again', async () => ((await instances()).length === 1 ? true : undefined), 60_000);
    const stop = await agent.cli(['job', 'stop', 'echo']);
    assert.equal(stop.code, 0, stop.stderr);
    await until('echo-api is deregistered', async () => ((await instances('?include_unhealthy=true')).length === 0 ? true : undefined), 60_000);
  });
});
