// Files, CLI and metrics figures (section `cli` of `npm run bench`):
//
// 1. Parsing the example job and volume files (HCL through Berth's HCL engine, then
//    the zod schema), per file, p50/p99 over many runs.
// 2. `GET /v1/metrics?format=prometheus` on a real Server holding 50 nodes with a plugin and a
//    job of 500 allocations: scrape latency p50/p99 and the size of the page.
// 3. The CsiClient call observer: Probe latency against the fake plugin on a
//    real socket without and with csiCallMetrics wired (the observer's cost).
// 4. The real `berth` binary: `job status --json` and `job run --detach`
//    wall time per invocation (process start of the compiled build + one or
//    two requests; `npm run bench` builds dist/ first).

import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { CsiClient, csiCallMetrics } from '../src/csi/index.js';
import { FakePlugin } from '../test/support/csi-fake/index.js';
import { Server } from '../src/server/index.js';
import { parseJobFile, parseVolumeFile } from '../src/spec-files/index.js';
import { round, summarize, timeNs } from './_stats.js';
import { registration } from '../test/support/nomad-jobs.js';

const TOKEN = 'bench-cli-token-0123456789';
const NODE_TOKEN = 'bench-node-token-0123456789';
const EXAMPLES = fileURLToPath(new URL('../examples/', import.meta.url));
const BERTH = fileURLToPath(new URL('../bin/berth.js', import.meta.url));

async function parseFigures(): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const name of ['hostpath-plugin.hcl', 'writer.hcl', 'reader.hcl', 'volume.hcl']) {
    const text = readFileSync(join(EXAMPLES, name), 'utf8');
    const parse = () => (name === 'volume.hcl' ? parseVolumeFile(name, text, 'create') : parseJobFile(name, text));
    for (let i = 0; i < 20; i++) await parse(); // warm the wasm parser
    const samples: bigint[] = [];
    for (let i = 0; i < 300; i++) samples.push(await timeNs(parse));
    const s = summarize(samples);
    out[name] = { p50Us: s.p50Us, p99Us: s.p99Us };
    console.log(`  parse ${name.padEnd(20)} p50 ${s.p50Us} us  p99 ${s.p99Us} us`);
  }
  return out;
}

async function metricsFigures(dir: string): Promise<Record<string, unknown>> {
  const server = new Server({
    dataDir: join(dir, 'server'),
    tokens: [
      { name: 'bench', secret: TOKEN, role: 'management' },
      { name: 'nodes', secret: NODE_TOKEN, role: 'node' },
    ],
  });
  const { url } = await server.start();
  try {
    const post = async (path: string, body: unknown, token = TOKEN): Promise<void> => {
      const res = await fetch(url + path, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    };
    for (let i = 0; i < 50; i++) {
      await post(
        '/v1/node/register',
        {
          fingerprint: {
            name: `n${i}`,
            datacenter: 'dc1',
            httpAddr: '',
            drivers: { raw_exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host'] } },
            resources: { cpuMhz: 100_000, memoryMb: 100_000 },
            attributes: {},
            csiControllerPlugins: {},
            csiNodePlugins: {
              hp: { pluginId: 'hp', type: 'csi-node', allocId: '', healthy: true, healthReason: '', provider: 'hostpath.csi.berth.dev', version: '1', updatedAt: Date.now() },
            },
          },
        },
        NODE_TOKEN,
      );
    }
    await post('/v1/jobs', registration({ id: 'many', type: 'batch', groups: [{ name: 'g', count: 500, tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' }, resources: { cpuMhz: 10, memoryMb: 10 } }] }] }));
    const scrape = async (): Promise<string> => {
      const res = await fetch(`${url}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${TOKEN}` } });
      return res.text();
    };
    for (let i = 0; i < 10; i++) await scrape();
    let bytes = 0;
    const samples: bigint[] = [];
    for (let i = 0; i < 200; i++) samples.push(await timeNs(async () => (bytes = (await scrape()).length)));
    const s = summarize(samples);
    console.log(`  GET /v1/metrics?format=prometheus (50 nodes, 500 allocations)  p50 ${s.p50Us} us  p99 ${s.p99Us} us  ${bytes} bytes`);
    return { scrapeP50Us: s.p50Us, scrapeP99Us: s.p99Us, bytes };
  } finally {
    await server.stop();
  }
}

async function observerFigures(dir: string): Promise<Record<string, unknown>> {
  mkdirSync(join(dir, 'fake'), { recursive: true });
  const socketPath = join(dir, 'fake', 'csi.sock');
  const fake = new FakePlugin({ socketPath });
  await fake.start();
  const plain = new CsiClient({ endpoint: socketPath });
  const observed = new CsiClient({ endpoint: socketPath, observer: csiCallMetrics(new Registry()).observer('fake') });
  try {
    const run = async (client: CsiClient): Promise<ReturnType<typeof summarize>> => {
      for (let i = 0; i < 200; i++) await client.probe();
      const samples: bigint[] = [];
      for (let i = 0; i < 2000; i++) samples.push(await timeNs(() => client.probe()));
      return summarize(samples);
    };
    // Interleave so that neither run gets a warmer machine.
    const a1 = await run(plain);
    const b1 = await run(observed);
    const a2 = await run(plain);
    const b2 = await run(observed);
    const without = round((a1.p50Us + a2.p50Us) / 2);
    const withObserver = round((b1.p50Us + b2.p50Us) / 2);
    console.log(`  Probe p50 without observer ${without} us, with csiCallMetrics ${withObserver} us (difference ${round(withObserver - without)} us)`);
    return { probeP50UsWithout: without, probeP50UsWith: withObserver, probeP99UsWithout: Math.max(a1.p99Us, a2.p99Us), probeP99UsWith: Math.max(b1.p99Us, b2.p99Us) };
  } finally {
    await plain.close();
    await observed.close();
    await fake.stop();
  }
}

function runBerth(args: string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BERTH, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(code) : reject(new Error(`berth ${args.join(' ')} exited ${code}: ${stderr}`))));
  });
}

async function binaryFigures(dir: string): Promise<Record<string, unknown>> {
  const server = new Server({ dataDir: join(dir, 'server-cli'), tokens: [{ name: 'bench', secret: TOKEN, role: 'management' }] });
  const { url } = await server.start();
  const env = { BERTH_ADDR: url, BERTH_TOKEN: TOKEN, NO_COLOR: '1' };
  const jobFile = join(dir, 'bench-job.hcl');
  writeFileSync(jobFile, 'job "bench" {\n  type = "batch"\n  group "g" {\n    task "t" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/true"\n      }\n    }\n  }\n}\n');
  try {
    const status: bigint[] = [];
    const run: bigint[] = [];
    for (let i = 0; i < 8; i++) status.push(await timeNs(() => runBerth(['job', 'status', '--json'], env)));
    for (let i = 0; i < 8; i++) run.push(await timeNs(() => runBerth(['job', 'run', '--detach', jobFile], env)));
    const s = summarize(status);
    const r = summarize(run);
    console.log(`  berth job status --json  p50 ${round(s.p50Us / 1000)} ms   berth job run --detach  p50 ${round(r.p50Us / 1000)} ms (n=8 each, process start included)`);
    return { jobStatusP50Ms: round(s.p50Us / 1000), jobRunDetachP50Ms: round(r.p50Us / 1000) };
  } finally {
    await server.stop();
  }
}

export default async function cliBench(dir: string): Promise<Record<string, unknown>> {
  console.log('cli: job/volume files, /v1/metrics, CSI call observer, the berth binary');
  const parse = await parseFigures();
  const metrics = await metricsFigures(dir);
  const observer = await observerFigures(dir);
  const binary = await binaryFigures(dir);
  return { parse, metrics, observer, binary };
}
