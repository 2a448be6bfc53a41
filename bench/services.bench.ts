// Services (section `services` of `npm run bench`):
//
// 1. Registered -> visible: a reader blocks on GET /v1/service/:name?index=N
//    of a real server (SQLite) while the node's status report (POST
//    /v1/internal/node/:id/allocations with the allocation's services) registers the
//    service; the time from sending the report to the reader's answer, p50/p99.
// 2. 1,000 services with 1 s HTTP checks on one agent: the node's check
//    runner (real probes, one new connection per check, no keep-alive) against
//    an HTTP server in a child process on loopback; the CPU this process spends
//    over 10 s, as a share of one core.

import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CheckRunner, type CheckTarget } from '../src/client/checks/index.js';
import { Server } from '../src/server/index.js';
import { parseJobSpec } from '../src/structs/index.js';
import { round, summarize } from './_stats.js';

const ROUNDS = 200;
const CHECKS = 1000;
const CPU_WINDOW_MS = 10_000;

async function registeredToVisible(dir: string): Promise<Record<string, unknown>> {
  const token = 'bench-token-services-0000000000000000';
  const server = new Server({ dataDir: path.join(dir, 'server'), tokens: [{ name: 'bench', secret: token, role: 'management' }] });
  const samples: bigint[] = [];
  try {
    const { url } = await server.start();
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    await server.store.write((txn) => {
      for (let r = 0; r < ROUNDS; r++) {
        txn.put('allocations', {
          id: `alloc-${r}`,
          namespace: 'default',
          jobId: 'web',
          jobVersion: 0,
          taskGroup: 'g',
          nodeId: 'node-1',
          desiredStatus: 'run',
          desiredDescription: '',
          clientStatus: 'pending',
          clientDescription: '',
          taskStates: {},
          rescheduleAttempts: 0,
          createTime: 0,
          modifyTime: 0,
        });
      }
    });
    for (let r = 0; r < ROUNDS; r++) {
      const name = `svc-${r}`;
      const first = await fetch(`${url}/v1/service/${name}`, { headers });
      const index = first.headers.get('x-nomad-index');
      await first.arrayBuffer();
      const reader = (async () => {
        for (;;) {
          const res = await fetch(`${url}/v1/service/${name}?index=${index}&wait=30s`, { headers });
          const list = (await res.json()) as unknown[];
          if (list.length) return process.hrtime.bigint();
        }
      })();
      // The reader is parked on the server before the report goes.
      await new Promise((r) => setTimeout(r, 5));
      const t0 = process.hrtime.bigint();
      const report = {
        allocations: [
          {
            id: `alloc-${r}`,
            clientStatus: 'running',
            taskStates: {},
            services: [{ id: `reg-${r}`, serviceName: name, tags: [], meta: {}, address: '127.0.0.1', port: 8080 }],
          },
        ],
      };
      const post = await fetch(`${url}/v1/internal/node/node-1/allocations`, { method: 'POST', headers, body: JSON.stringify(report) });
      if (!post.ok) throw new Error(`report failed: ${post.status} ${await post.text()}`);
      samples.push((await reader) - t0);
    }
  } finally {
    await server.stop();
  }
  const s = summarize(samples);
  const out = { rounds: ROUNDS, p50Ms: round(s.p50Us / 1000, 2), p99Ms: round(s.p99Us / 1000, 2), goalP50Ms: 20 };
  console.log(`  registered -> visible to a blocking reader   p50 ${out.p50Ms} ms  p99 ${out.p99Ms} ms (goal p50 < 20 ms)`);
  return out;
}

const HTTP_SERVER = `
const http = require('http');
const srv = http.createServer((req, res) => { res.writeHead(200); res.end('ok'); });
srv.listen(0, '127.0.0.1', () => process.send(srv.address().port));
`;

async function checksCpu(dir: string): Promise<Record<string, unknown>> {
  const file = path.join(dir, 'check-target.cjs');
  writeFileSync(file, HTTP_SERVER);
  const child = fork(file, [], { stdio: 'ignore' });
  try {
    const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve(Number(m))));
    const check = parseJobSpec({
      id: 'b',
      groups: [{ name: 'g', services: [{ port: String(port), checks: [{ type: 'http', path: '/health', interval: '1s', timeout: '1s' }] }], tasks: [{ name: 't', driver: 'raw_exec' }] }],
    }).groups[0]?.services?.[0]?.checks[0];
    if (!check) throw new Error('no check');
    let changes = 0;
    const outputs = new Map<string, number>();
    const runner = new CheckRunner({
      onChange: (_a, r) => {
        changes++;
        for (const c of Object.values(r)) outputs.set(`${c.status}: ${c.output.replace(/svc-\d+|:\d+/g, '')}`, (outputs.get(`${c.status}: ${c.output.replace(/:\d+/g, '')}`) ?? 0) + 1);
      },
      onRestart: () => undefined,
    });
    await runner.start();
    for (let i = 0; i < CHECKS; i++) {
      const target: CheckTarget = { id: `c${i}`, service: `svc-${i}`, name: 'alive', check, address: '127.0.0.1', port };
      runner.set(`alloc-${i}`, [target]);
    }
    // Let every check run once (pending -> passing), then measure the steady state.
    await new Promise((r) => setTimeout(r, 2500));
    const runs0 = runner.counts.runs;
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await new Promise((r) => setTimeout(r, CPU_WINDOW_MS));
    const cpu = process.cpuUsage(cpu0);
    const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
    const runs = runner.counts.runs - runs0;
    await runner.stop();
    const pct = round(((cpu.user + cpu.system) / 1000 / wallMs) * 100, 2);
    console.log(`  ${CHECKS} http checks every 1 s: ${round(runs / (wallMs / 1000))} runs/s, CPU ${pct}% of one core (goal < 5%), ${changes} status changes`);
    if (changes > CHECKS * 2) console.log(`  changes: ${JSON.stringify([...outputs].slice(0, 5))}`);
    return {
      checks: CHECKS,
      intervalMs: 1000,
      windowMs: Math.round(wallMs),
      runsPerSecond: round(runs / (wallMs / 1000)),
      cpuPercentOfOneCore: round(((cpu.user + cpu.system) / 1000 / wallMs) * 100, 2),
      goalCpuPercent: 5,
      statusChanges: changes,
    };
  } finally {
    child.kill();
  }
}

export default async function services(dir: string): Promise<Record<string, unknown>> {
  const visible = await registeredToVisible(dir);
  const cpu = await checksCpu(dir);
  return { registeredToVisible: visible, checks1000: cpu };
}
