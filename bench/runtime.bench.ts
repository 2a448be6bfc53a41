// The node runtime (section `runtime` of `npm run bench`).
//
// 1. Allocation received -> task running, p50/p99: from the moment the node
//    agent (a real Client, in this process, against a real Server) builds
//    the allocation's runner from the server's list, to the runner's first
//    status with every task running. A raw_exec task without a volume, and
//    one with a CSI volume of the real hostpath plugin (itself a raw_exec
//    system job): claim over HTTP, NodeStage, NodePublish, bind into the
//    task. The orchestration share is the total minus the time spent in CSI
//    calls to the plugin (summed by a CsiCallObserver) and, for the volume,
//    minus the claim round trip to the server.
// 2. Agent memory and CPU with 50 running tasks and 10 plugins: the agent as
//    its own process (test/support/runtime-client-main.ts) with 10 hostpath plugin
//    allocations (ten plugin IDs) and 50 sleeping raw_exec tasks; its RSS and
//    the CPU it used over a steady window, read from /proc.

import { execFileSync } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AllocRunner, type AllocRunnerOptions, type AllocStatusUpdate } from '../src/client/allocrunner/index.js';
import { Client } from '../src/client/index.js';
import { createLogger, silentLogger } from '../src/lib/index.js';
import { volumeRequest } from '../test/support/csi-api.js';
import { AgentProcess, hostpathPluginJob, mountsUnder, pidsWith, TestServer, TOKENS, until, volumeJob } from '../test/support/runtime-cluster.js';
import { round, summarize, type Summary } from './_stats.js';
import type { Allocation, AllocationListStub } from '../src/api/index.js';

const SAMPLES = Number(process.env['BENCH_RUNTIME_SAMPLES'] ?? 25);
const TASKS = Number(process.env['BENCH_RUNTIME_TASKS'] ?? 50);
const PLUGINS = Number(process.env['BENCH_RUNTIME_PLUGINS'] ?? 10);
const WINDOW_S = Number(process.env['BENCH_RUNTIME_WINDOW_S'] ?? 5);

interface Sample {
  totalNs: bigint;
  pluginNs: bigint;
  claimNs: bigint;
}

function sleeperJob(id: string, count = 1): Record<string, unknown> {
  return {
    id,
    type: 'service',
    groups: [
      {
        name: 'main',
        count,
        restart: { attempts: 0, interval: '1m', delay: '100ms', mode: 'fail' },
        tasks: [{ name: 'main', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['600'] }, resources: { cpuMhz: 10, memoryMb: 8 } }],
      },
    ],
  };
}

function describe(label: string, s: Summary): string {
  return `${label}: p50 ${round(s.p50Us / 1000, 2)} ms, p99 ${round(s.p99Us / 1000, 2)} ms (n=${s.n})`;
}

async function latency(dir: string): Promise<Record<string, unknown>> {
  const server = new TestServer(join(dir, 'server'));
  await server.start();
  // Every CSI call the agent sends, for the plugin share.
  let pluginNs = 0n;
  const observer = {
    onCall: (rpc: string, _code: string, seconds: number) => {
      if (rpc !== 'Probe') pluginNs += BigInt(Math.round(seconds * 1e9));
    },
  };
  const waiting = new Map<string, { start: bigint; pluginAtStart: bigint; resolve: (s: Sample) => void }>();
  let claimNs = 0n;
  const samples = new Map<string, Promise<Sample>>();
  const client = new Client({
    dataDir: join(dir, 'agent'),
    servers: server.url,
    token: TOKENS.node,
    nodeName: 'bench-node',
    drivers: { raw_exec: true, exec: false },
    heartbeatIntervalMs: 5_000,
    csi: { probeIntervalMs: 5_000 },
    retry: { initialDelayMs: 20, maxDelayMs: 200 },
    killTimeoutMs: 1_000,
    csiObserver: observer,
    logger: process.env['BENCH_RUNTIME_LOG'] ? createLogger({ level: 'debug', destination: createWriteStream(process.env['BENCH_RUNTIME_LOG']) }) : silentLogger(),
    createAllocRunner: (opts: AllocRunnerOptions) => {
      const start = process.hrtime.bigint();
      const pluginAtStart = pluginNs;
      const claimer = opts.claimer;
      const timedClaimer = {
        claim: async (...args: Parameters<typeof claimer.claim>) => {
          const t = process.hrtime.bigint();
          try {
            return await claimer.claim(...args);
          } finally {
            claimNs += process.hrtime.bigint() - t;
          }
        },
        release: (...args: Parameters<typeof claimer.release>) => claimer.release(...args),
      };
      const claimAtStart = claimNs;
      const onStatus = (u: AllocStatusUpdate): void => {
        opts.onStatus(u);
        const w = waiting.get(u.allocId);
        const states = Object.values(u.taskStates);
        if (w && states.length > 0 && states.every((t) => t.state === 'running')) {
          waiting.delete(u.allocId);
          w.resolve({ totalNs: process.hrtime.bigint() - w.start, pluginNs: pluginNs - w.pluginAtStart, claimNs: claimNs - claimAtStart });
        }
      };
      let resolve!: (s: Sample) => void;
      const done = new Promise<Sample>((r) => (resolve = r));
      waiting.set(opts.alloc.id, { start, pluginAtStart, resolve });
      samples.set(opts.alloc.id, done);
      return new AllocRunner({ ...opts, claimer: timedClaimer, onStatus });
    },
  });
  await client.start();
  await client.waitReady();

  const runOne = async (job: Record<string, unknown>): Promise<Sample> => {
    const id = job['id'] as string;
    await server.register(job);
    const alloc = await until(`allocation of ${id}`, async () => (await server.ok<AllocationListStub[]>('GET', `/v1/job/${id}/allocations`))[0], 30_000);
    const sample = await until(`runner of ${id}`, () => samples.get(alloc.ID), 30_000);
    const s = await sample;
    await server.ok('DELETE', `/v1/job/${id}`);
    await until(`${id} to stop`, async () => (await server.ok<Allocation>('GET', `/v1/allocation/${alloc.ID}`)).ClientStatus !== 'running', 30_000);
    return s;
  };

  const plain: Sample[] = [];
  for (let i = 0; i < SAMPLES + 3; i++) {
    const s = await runOne(sleeperJob(`plain-${i}`));
    if (i >= 3) plain.push(s);
  }
  const plainTotal = summarize(plain.map((s) => s.totalNs));
  console.log(describe('allocation received -> task running, no volume', plainTotal));

  // The hostpath plugin as a raw_exec system job, and one volume.
  await server.register(hostpathPluginJob({ id: 'hostpath-plugin', driver: 'raw_exec', dataDir: join(dir, 'hp') }));
  await until('the plugin to be healthy', async () => {
    const p = await server.call<{ NodesHealthy: number; ControllersHealthy: number }>('GET', '/v1/plugin/csi/hostpath');
    return p.status === 200 && p.body.NodesHealthy === 1 && p.body.ControllersHealthy === 1;
  }, 60_000);
  const capabilities = [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }];
  await server.ok('PUT', '/v1/volume/csi/bench/create', volumeRequest('bench', { pluginId: 'hostpath', name: 'bench', capabilities }));
  const withVolume: Sample[] = [];
  for (let i = 0; i < SAMPLES + 3; i++) {
    const s = await runOne(volumeJob({ id: `vol-${i}`, type: 'service', volumeId: 'bench', script: 'exec sleep 600' }));
    // The next one can claim the single-writer volume only once this one released it.
    await until('the claim to be released', async () => (await server.ok<{ BerthClaims: unknown[] }>('GET', '/v1/volume/csi/bench')).BerthClaims.length === 0, 30_000);
    if (i >= 3) withVolume.push(s);
  }
  const volTotal = summarize(withVolume.map((s) => s.totalNs));
  const volPlugin = summarize(withVolume.map((s) => s.pluginNs));
  const volClaim = summarize(withVolume.map((s) => s.claimNs));
  const volOrchestration = summarize(withVolume.map((s) => s.totalNs - s.pluginNs - s.claimNs));
  console.log(describe('allocation received -> task running, hostpath CSI volume', volTotal));
  console.log(describe('  of which CSI calls to the plugin', volPlugin));
  console.log(describe('  of which the claim round trip to the server (ControllerPublish included)', volClaim));
  console.log(describe('  orchestration share (total - plugin calls - claim)', volOrchestration));

  await client.stop({ drain: true });
  await server.stop();
  return {
    noVolume: plainTotal,
    hostpathVolume: { total: volTotal, pluginCalls: volPlugin, claim: volClaim, orchestration: volOrchestration },
  };
}

function procStat(pid: number): { cpuTicks: number; rssKiB: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuTicks = Number(fields[11]) + Number(fields[12]);
  const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return { cpuTicks, rssKiB: Number(rss?.[1] ?? 0) };
}

async function footprint(dir: string): Promise<Record<string, unknown>> {
  const server = new TestServer(join(dir, 'server2'));
  await server.start();
  const hp = join(dir, 'hp2');
  mkdirSync(hp, { recursive: true });
  const agent = new AgentProcess(server, { dataDir: join(dir, 'agent2'), nodeName: 'bench-node-2', logLevel: 'warn', production: true });
  await agent.start();
  const pid = agent.child!.pid!;
  const idle = procStat(pid);
  try {
    for (let i = 0; i < PLUGINS; i++) {
      const job = hostpathPluginJob({ id: `plugin-${i}`, driver: 'raw_exec', dataDir: join(hp, String(i)), pluginId: `hostpath-${i}` });
      await server.register(job);
    }
    await server.register(sleeperJob('sleepers', TASKS));
    await until(
      'every plugin healthy and every task running',
      async () => {
        const allocs = await server.ok<AllocationListStub[]>('GET', '/v1/allocations');
        const running = allocs.filter((a) => a.ClientStatus === 'running').length;
        const plugins = await server.ok<Array<{ NodesHealthy: number }>>('GET', '/v1/plugins?type=csi');
        return running === TASKS + PLUGINS && plugins.filter((p) => p.NodesHealthy === 1).length === PLUGINS;
      },
      120_000,
    );
    await sleep(1_000);
    const a = procStat(pid);
    await sleep(WINDOW_S * 1000);
    const b = procStat(pid);
    const hz = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    const cpuMs = ((b.cpuTicks - a.cpuTicks) / hz) * 1000;
    const cpuPercent = round((cpuMs / 1000 / WINDOW_S) * 100, 2);
    const result = {
      tasks: TASKS,
      plugins: PLUGINS,
      agentRssMiB: round(b.rssKiB / 1024),
      agentIdleRssMiB: round(idle.rssKiB / 1024),
      agentCpuPercent: cpuPercent,
      agentCpuMs: cpuMs,
      windowSeconds: WINDOW_S,
      note: 'agent process only (tasks and plugins are separate processes); default probe (30 s) and heartbeat (10 s) intervals',
    };
    console.log(
      `agent with ${TASKS} running tasks and ${PLUGINS} plugins: RSS ${result.agentRssMiB} MiB (${result.agentIdleRssMiB} MiB with nothing), CPU ${cpuMs} ms over ${WINDOW_S} s (${cpuPercent}% of one core; clock ticks of ${round(1000 / hz)} ms)`,
    );
    return result;
  } finally {
    await agent.drain().catch(() => undefined);
    await agent.kill().catch(() => undefined);
    await server.stop();
    for (const p of pidsWith(dir)) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    for (const m of mountsUnder(dir).reverse()) {
      try {
        execFileSync('umount', ['-l', m]);
      } catch {
        /* gone */
      }
    }
  }
}

export default async function runtime(dir: string): Promise<Record<string, unknown>> {
  const lat = await latency(dir);
  const mem = await footprint(dir);
  return { allocToRunning: lat, footprint: mem };
}
