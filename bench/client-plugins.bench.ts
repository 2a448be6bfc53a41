// The node agent's plugin side (section `client-plugins` of `npm run bench`).
//
// 1. Plugin registered -> healthy fingerprint delivered to the node-update
//    callback, p50/p99 (target p50 < 50 ms; Nomad's loop takes seconds): the
//    time from PluginRegistry.register (which writes the registration durably
//    to SQLite) to the CsiManager's updateNodePlugin call with a healthy,
//    fingerprinted report. Against the fake plugin and the hostpath plugin,
//    both already listening.
// 2. Agent memory with 20 plugins registered and probing: 20 fake plugins run
//    in a child process (so that their memory is not counted); this process
//    runs the registry and the CSI manager probing them every 100 ms, and
//    reports its heap and RSS growth after a forced GC.

import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CsiManager, type ManagedVolumeManager } from '../src/client/csimanager/index.js';
import { PluginRegistry } from '../src/client/dynamicplugins/index.js';
import { SqliteClientStateStore } from '../src/client/state/index.js';
import { FakePlugin } from '../test/support/csi-fake/index.js';
import { HostpathPlugin } from '../src/csi-plugins/index.js';
import type { CsiPluginReport } from '../src/structs/index.js';
import { eventually } from '../test/support/eventually.js';
import { round, summarize, type Summary } from './_stats.js';

const SAMPLES = Number(process.env['BENCH_PLUGIN_SAMPLES'] ?? 300);
const MEMORY_PLUGINS = 20;
const MEMORY_SECONDS = Number(process.env['BENCH_PLUGIN_MEMORY_SECONDS'] ?? 5);

/** The latency bench needs no mounts: a volume manager that does nothing. */
const idleVolumeManager = (): ManagedVolumeManager => ({ start: async () => undefined, stop: async () => undefined });

async function registerToHealthy(dir: string, label: string, socketPath: string): Promise<{ total: Summary; register: Summary }> {
  const store = SqliteClientStateStore.open(join(dir, `${label}-state`, 'client.db'));
  const registry = new PluginRegistry({ store });
  let waiting: { name: string; resolve: () => void } | undefined;
  const onReport = (name: string, report: CsiPluginReport | null): void => {
    if (waiting && waiting.name === name && report?.healthy && report.fingerprint) waiting.resolve();
  };
  const manager = new CsiManager({
    registry,
    store,
    createVolumeManager: idleVolumeManager,
    updateNodePlugin: (_type, id, report) => onReport(id, report),
    emitNodeEvent: () => undefined,
  });
  await manager.start();
  const total: bigint[] = [];
  const register: bigint[] = [];
  const warmup = 30;
  for (let i = 0; i < SAMPLES + warmup; i++) {
    const name = `${label}-${i}`;
    const healthy = new Promise<void>((resolve) => (waiting = { name, resolve }));
    const start = process.hrtime.bigint();
    registry.register({ type: 'csi-node', name, version: '1', socketPath, allocId: `alloc-${i}`, options: { mountRoot: join(dir, 'mnt', name) } });
    const registered = process.hrtime.bigint();
    await healthy;
    const end = process.hrtime.bigint();
    if (i >= warmup) {
      total.push(end - start);
      register.push(registered - start);
    }
    registry.deregister('csi-node', name, `alloc-${i}`);
  }
  await manager.stop();
  registry.close();
  store.close();
  const out = { total: summarize(total), register: summarize(register) };
  console.log(
    `register -> healthy report (${label.padEnd(8)}) p50 ${ms(out.total.p50Us)} ms p99 ${ms(out.total.p99Us)} ms ` +
      `(of which the durable registry write p50 ${ms(out.register.p50Us)} ms) over ${SAMPLES} registrations; target p50 < 50 ms`,
  );
  return out;
}

const ms = (us: number): number => round(us / 1000, 2);

/** 20 fake plugins in a child process; resolves once all listen. */
async function startFakesElsewhere(dir: string): Promise<{ sockets: string[]; stop: () => Promise<number> }> {
  const sockets = Array.from({ length: MEMORY_PLUGINS }, (_, i) => join(dir, 'mem', `p${i}.sock`));
  mkdirSync(join(dir, 'mem'), { recursive: true });
  const fakeModule = new URL('../test/support/csi-fake/index.ts', import.meta.url).pathname;
  const script = `
    import { FakePlugin } from ${JSON.stringify(fakeModule)};
    const sockets = ${JSON.stringify(sockets)};
    const fakes = sockets.map((socketPath) => new FakePlugin({ socketPath }));
    await Promise.all(fakes.map((f) => f.start()));
    process.stdout.write('ready\\n');
    process.stdin.resume();
    process.stdin.on('end', async () => {
      const probes = fakes.reduce((n, f) => n + f.callsTo('Probe').length, 0);
      await Promise.all(fakes.map((f) => f.stop()));
      process.stdout.write('probes ' + probes + String.fromCharCode(10), () => process.exit(0));
    });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`fake plugins exited early (${code})`));
    child.once('exit', onExit);
    const check = (): void => {
      if (!out.includes('ready')) return;
      child.stdout.off('data', check);
      child.off('exit', onExit);
      resolve();
    };
    child.stdout.on('data', check);
  });
  return {
    sockets,
    stop: async () => {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.stdin.end();
      await exited;
      return Number(/probes (\d+)/.exec(out)?.[1] ?? NaN);
    },
  };
}

async function memoryWithPlugins(dir: string): Promise<Record<string, unknown>> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const fakes = await startFakesElsewhere(dir);
  const settle = async (): Promise<NodeJS.MemoryUsage> => {
    for (let i = 0; i < 3; i++) {
      gc();
      await sleep(50);
    }
    return process.memoryUsage();
  };
  const store = SqliteClientStateStore.open(join(dir, 'mem-state', 'client.db'));
  const registry = new PluginRegistry({ store });
  const healthy = new Set<string>();
  const manager = new CsiManager({
    registry,
    store,
    createVolumeManager: idleVolumeManager,
    updateNodePlugin: (_t, id, report) => (report?.healthy ? healthy.add(id) : healthy.delete(id)),
    emitNodeEvent: () => undefined,
    probeIntervalMs: 100,
  });
  const before = await settle();
  await manager.start();
  fakes.sockets.forEach((socketPath, i) =>
    registry.register({ type: 'csi-node', name: `p${i}`, version: '1', socketPath, allocId: `a${i}`, options: { mountRoot: join(dir, 'mnt', `p${i}`) } }),
  );
  await eventually(`all ${MEMORY_PLUGINS} plugins healthy`, () => healthy.size >= MEMORY_PLUGINS, { timeoutMs: 120_000, intervalMs: 10 });
  const started = Date.now();
  while (Date.now() - started < MEMORY_SECONDS * 1000) await sleep(100);
  const after = await settle();
  const allHealthy = healthy.size === MEMORY_PLUGINS;
  await manager.stop();
  registry.close();
  store.close();
  const probes = await fakes.stop();
  const mib = (b: number): number => round(b / 2 ** 20, 2);
  const out = {
    plugins: MEMORY_PLUGINS,
    probeIntervalMs: 100,
    probingSeconds: MEMORY_SECONDS,
    probesAnswered: probes,
    allHealthy,
    heapUsedGrowthMiB: mib(after.heapUsed - before.heapUsed),
    heapUsedPerPluginKiB: round((after.heapUsed - before.heapUsed) / 1024 / MEMORY_PLUGINS, 1),
    rssGrowthMiB: mib(after.rss - before.rss),
    heapUsedMiB: mib(after.heapUsed),
    rssMiB: mib(after.rss),
  };
  console.log(
    `agent memory, ${MEMORY_PLUGINS} plugins registered and probing every 100 ms for ${MEMORY_SECONDS} s (${probes} probes answered): ` +
      `heap +${out.heapUsedGrowthMiB} MiB (${out.heapUsedPerPluginKiB} KiB per plugin), rss +${out.rssGrowthMiB} MiB ` +
      `(process heap ${out.heapUsedMiB} MiB, rss ${out.rssMiB} MiB); all healthy: ${allHealthy}`,
  );
  return out;
}

export default async function clientPluginsBench(dir: string): Promise<Record<string, unknown>> {
  console.log(`plugin registry and CSI manager: ${SAMPLES} registrations per plugin, memory with ${MEMORY_PLUGINS} plugins`);
  const fake = new FakePlugin({ socketPath: join(dir, 'fake.sock') });
  await fake.start();
  const hostpath = new HostpathPlugin({ endpoint: `unix://${join(dir, 'hostpath.sock')}`, nodeId: 'bench-node', dataDir: join(dir, 'hostpath') });
  await hostpath.start();
  try {
    const registerToHealthyFake = await registerToHealthy(dir, 'fake', fake.socketPath);
    const registerToHealthyHostpath = await registerToHealthy(dir, 'hostpath', join(dir, 'hostpath.sock'));
    const memory = await memoryWithPlugins(dir);
    return { registerToHealthyFake, registerToHealthyHostpath, memoryWith20Plugins: memory };
  } finally {
    await fake.stop();
    await hostpath.stop();
  }
}
