// External task-driver figures (section `driver-plugins` of `npm run bench`),
// with `berth driver serve raw_exec` as the plugin (a real process, gRPC on a
// unix socket):
// 1. plugin launch -> handshake -> health -> PluginInfo/SetConfig ->
//    first fingerprint healthy, p50/p99 (goal < 150 ms p50);
// 2. StartTask through the external driver vs the in-process raw_exec, p50
//    and the ratio (goal <= 1.3x);
// 3. the agent-side memory per loaded driver plugin: heap and RSS growth of
//    this process with N plugins loaded, divided by N (goal < 5 MiB).

import { writeFileSync, chmodSync } from 'node:fs';
import v8 from 'node:v8';
import vm from 'node:vm';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../src/lib/index.js';
import { DriverManager } from '../src/client/driverplugins/index.js';
import { createDrivers, type TaskDriver } from '../src/client/drivers/index.js';
import { launchOverGrpc } from '../src/agent/index.js';
import { encodeConfig } from '../src/plugins/index.js';
import { round, summarize, timeNs } from './_stats.js';
import { shellTask } from './_task-config.js';

const LAUNCHES = Number(process.env['BENCH_PLUGIN_LAUNCHES'] ?? 10);
const STARTS = Number(process.env['BENCH_PLUGIN_STARTS'] ?? 20);
const LOADED = Number(process.env['BENCH_PLUGIN_LOADED'] ?? 8);
const BERTH = fileURLToPath(new URL('../bin/berth.js', import.meta.url));
const ms = (us: number): number => round(us / 1000, 2);

// A full collection before each memory reading, so the figures are what stays, not garbage.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

function wrapper(dir: string, stateDir: string): string {
  const file = join(dir, 'raw_exec');
  writeFileSync(file, `#!/bin/sh\nexec '${process.execPath}' '${BERTH}' driver serve raw_exec --log-level warn --state-dir '${stateDir}'\n`);
  chmodSync(file, 0o755);
  return file;
}

function manager(file: string, name = 'raw_exec'): DriverManager {
  return new DriverManager({
    plugins: [{ name, file, args: [] }],
    launch: launchOverGrpc,
    encodeConfig: (schema, body) => encodeConfig(schema, body, { path: 'config' }),
    logger: silentLogger(),
    node: { name: 'bench' },
  });
}

async function healthy(m: DriverManager): Promise<void> {
  const driver = m.drivers().get('raw_exec');
  if (!driver) throw new Error(`the plugin did not load: ${JSON.stringify(m.status())}`);
  for (;;) {
    if ((await driver.fingerprint()).healthy) return;
    await new Promise((r) => setImmediate(r));
  }
}

export default async function driverPluginsBench(dir: string): Promise<Record<string, unknown>> {
  const file = wrapper(dir, join(dir, 'st-ext'));

  // 1. launch -> fingerprint healthy.
  const launches: bigint[] = [];
  for (let i = 0; i < LAUNCHES; i++) {
    const m = manager(file);
    launches.push(
      await timeNs(async () => {
        await m.start();
        await healthy(m);
      }),
    );
    await m.stop();
  }
  const l = summarize(launches);
  console.log(`plugin launch -> handshake -> fingerprint healthy: p50 ${ms(l.p50Us)} ms  p99 ${ms(l.p99Us)} ms (n=${l.n}; goal < 150 ms)`);

  // 2. StartTask external vs in-process.
  const m = manager(file);
  await m.start();
  await healthy(m);
  const external = m.drivers().get('raw_exec') as TaskDriver;
  // Built as `berth driver serve` builds its own (task cgroups where the host has them), so both sides pay the same kernel costs.
  const built = createDrivers({ stateDir: join(dir, 'st-in'), logger: silentLogger() });
  const inProcess = built.get('raw_exec') as TaskDriver;
  await built.get('exec')?.shutdown();
  const figures: Record<string, ReturnType<typeof summarize>> = {};
  for (const [name, driver] of [
    ['in-process', inProcess],
    ['external', external],
  ] as Array<[string, TaskDriver]>) {
    const starts: bigint[] = [];
    for (let i = 0; i < STARTS; i++) {
      const cfg = shellTask(dir, `${name}-${i}`, 'exec sleep 1000', { killTimeoutMs: 1000, resources: { cpuMhz: 100, memoryMb: 100 } });
      starts.push(await timeNs(() => driver.startTask(cfg)));
      await driver.stopTask(cfg.id, { timeoutMs: 0, signal: 'SIGKILL' });
      await driver.destroyTask(cfg.id, { force: true });
    }
    figures[name] = summarize(starts);
  }
  await inProcess.shutdown();
  await m.stop();
  const inP = figures['in-process'] as ReturnType<typeof summarize>;
  const exP = figures['external'] as ReturnType<typeof summarize>;
  const ratio = round(exP.p50Us / inP.p50Us, 2);
  console.log(`StartTask p50: in-process ${ms(inP.p50Us)} ms, external ${ms(exP.p50Us)} ms: ${ratio}x (n=${exP.n}; goal <= 1.3x)`);

  // 3. agent-side memory per loaded plugin.
  gc();
  const before = process.memoryUsage();
  const loaded: DriverManager[] = [];
  for (let i = 0; i < LOADED; i++) {
    const mi = manager(wrapper(join(dir), join(dir, `st-mem-${i}`)));
    await mi.start();
    await healthy(mi);
    loaded.push(mi);
  }
  gc();
  const after = process.memoryUsage();
  const heapPer = round((after.heapUsed - before.heapUsed) / 2 ** 20 / LOADED, 2);
  const rssPer = round((after.rss - before.rss) / 2 ** 20 / LOADED, 2);
  for (const mi of loaded) await mi.stop();
  console.log(`host memory per loaded driver plugin (agent side): heap +${heapPer} MiB, rss +${rssPer} MiB (${LOADED} loaded; goal < 5 MiB)`);

  return {
    launchToHealthyP50Ms: ms(l.p50Us),
    launchToHealthyP99Ms: ms(l.p99Us),
    startTaskInProcessP50Ms: ms(inP.p50Us),
    startTaskExternalP50Ms: ms(exP.p50Us),
    startTaskRatio: ratio,
    hostHeapPerPluginMiB: heapPer,
    hostRssPerPluginMiB: rssPer,
  };
}
