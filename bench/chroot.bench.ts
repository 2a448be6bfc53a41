// Task directory and chroot figures (section `chroot` of `npm run bench`):
// 1. the chroot of an exec-style task (Nomad's default chroot_env) built in
//    the task directory: the first on a node (cold cache: the plan worked
//    out, files linked) and the following ones (the node's cache), p50
//    (goals < 300 ms / < 20 ms);
// 2. StartTask through an external chroot driver (the test kit's chroot
//    plugin, a real process over gRPC, which chroots into the task
//    directory) and through `berth driver serve exec`, against Berth's
//    in-process exec, p50 and the ratios (goal <= 1.5x). The external side
//    includes what the host adds: the log monitor and its FIFOs, the task's
//    cgroup.

import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { silentLogger } from '../src/lib/index.js';
import { AllocDir, ChrootCache, DEFAULT_CHROOT_ENV } from '../src/client/allocdir/index.js';
import { detectCgroups } from '../src/client/cgroups/index.js';
import { DriverManager } from '../src/client/driverplugins/index.js';
import { createDrivers, type TaskConfig, type TaskDriver } from '../src/client/drivers/index.js';
import { launchOverGrpc } from '../src/agent/index.js';
import { encodeConfig } from '../src/plugins/index.js';
import { tsPlugin } from '../test/support/plugin-fixtures.js';
import { round, summarize, timeNs } from './_stats.js';

const BUILDS = Number(process.env['BENCH_CHROOT_BUILDS'] ?? 20);
const FIRSTS = Number(process.env['BENCH_CHROOT_FIRSTS'] ?? 5);
const STARTS = Number(process.env['BENCH_CHROOT_STARTS'] ?? 15);
const BERTH = fileURLToPath(new URL('../bin/berth.js', import.meta.url));
const KIT = pathToFileURL(fileURLToPath(new URL('../test/support/recording-driver-plugin.ts', import.meta.url))).href;
const ms = (us: number): number => round(us / 1000, 2);

function manager(name: string, file: string, config: Record<string, unknown>): DriverManager {
  return new DriverManager({
    plugins: [{ name, file, args: [], config }],
    launch: launchOverGrpc,
    encodeConfig: (schema, body) => encodeConfig(schema, body, { path: 'config' }),
    logger: silentLogger(),
    node: { name: 'bench' },
    cgroups: detectCgroups({ parent: `berth/bench-${process.pid}-plugins` }),
    defaultTaskPath: '/usr/sbin:/usr/bin:/sbin:/bin',
  });
}

async function healthy(m: DriverManager, name: string): Promise<TaskDriver> {
  const driver = m.drivers().get(name);
  if (!driver) throw new Error(`the plugin did not load: ${JSON.stringify(m.status())}`);
  for (;;) {
    if ((await driver.fingerprint()).healthy) return driver;
    await new Promise((r) => setImmediate(r));
  }
}

function taskOf(alloc: AllocDir, name: string): TaskConfig {
  const t = alloc.task(name);
  return {
    id: `${alloc.allocId}.${name}`,
    allocId: alloc.allocId,
    taskName: name,
    command: '/bin/sh',
    args: ['-c', 'exec sleep 1000'],
    env: { PATH: '/usr/bin:/bin' },
    taskDir: t.localDir,
    allocDir: alloc.dir,
    secretsDir: t.secretsDir,
    mounts: [],
    logs: { disabled: false, dir: t.logsDir, maxFiles: 2, maxFileSizeMb: 1 },
    killTimeoutMs: 1000,
    resources: { cpuMhz: 100, memoryMb: 100 },
  };
}

export default async function chrootBench(dir: string): Promise<Record<string, unknown>> {
  // 1. chroot build, first on a node and from the node's cache.
  const firsts: bigint[] = [];
  const cached: bigint[] = [];
  for (let f = 0; f < FIRSTS; f++) {
    const cache = new ChrootCache({ cacheDir: join(dir, `chroot-cache-${f}`), env: DEFAULT_CHROOT_ENV });
    const alloc = new AllocDir({ root: join(dir, 'allocs'), allocId: `build-${f}`, chroot: cache });
    const names = Array.from({ length: f === 0 ? BUILDS + 1 : 1 }, (_, i) => `t${i}`);
    await alloc.build(names);
    firsts.push(await timeNs(() => alloc.buildTask('t0', 'chroot')));
    for (const name of names.slice(1)) cached.push(await timeNs(() => alloc.buildTask(name, 'chroot')));
    await alloc.destroy();
  }
  const fi = summarize(firsts);
  const ca = summarize(cached);
  console.log(`chroot build (default chroot_env): first p50 ${ms(fi.p50Us)} ms (n=${fi.n}; goal < 300 ms), cached p50 ${ms(ca.p50Us)} ms p99 ${ms(ca.p99Us)} ms (n=${ca.n}; goal < 20 ms)`);

  // 2. StartTask: external chroot drivers vs the in-process exec.
  const pluginDir = join(dir, 'chroot-plugins');
  mkdirSync(pluginDir, { recursive: true });
  const kit = tsPlugin(pluginDir, 'chrootrec', `import { serveRecordingDriver } from '${KIT}';\nawait serveRecordingDriver();\n`);
  const served = join(pluginDir, 'exec');
  writeFileSync(served, `#!/bin/sh\nexec '${process.execPath}' '${BERTH}' driver serve exec --log-level warn --state-dir '${join(dir, 'st-served')}'\n`);
  chmodSync(served, 0o755);
  const kitManager = manager('chrootrec', kit, { record_dir: join(dir, 'records') });
  const servedManager = manager('exec', served, {});
  await Promise.all([kitManager.start(), servedManager.start()]);
  const built = createDrivers({ stateDir: join(dir, 'st-in-exec'), logger: silentLogger() });
  await built.get('raw_exec')?.shutdown();
  const sides: Array<[string, TaskDriver]> = [
    ['in-process exec', built.get('exec') as TaskDriver],
    ['external chroot driver', await healthy(kitManager, 'chrootrec')],
    ['berth driver serve exec', await healthy(servedManager, 'exec')],
  ];
  const cache = new ChrootCache({ cacheDir: join(dir, 'chroot-cache-start'), env: DEFAULT_CHROOT_ENV });
  const figures: Record<string, ReturnType<typeof summarize>> = {};
  for (const [label, driver] of sides) {
    const starts: bigint[] = [];
    const alloc = new AllocDir({ root: join(dir, 'allocs'), allocId: `start-${label.replaceAll(' ', '-')}`, chroot: cache });
    const names = Array.from({ length: STARTS }, (_, i) => `s${i}`);
    await alloc.build(names);
    for (const name of names) {
      await alloc.buildTask(name, 'chroot');
      const cfg = taskOf(alloc, name);
      starts.push(await timeNs(() => driver.startTask(cfg)));
      await driver.stopTask(cfg.id, { timeoutMs: 0, signal: 'SIGKILL' });
      await driver.destroyTask(cfg.id, { force: true });
    }
    await alloc.destroy();
    figures[label] = summarize(starts);
  }
  await built.get('exec')?.shutdown();
  await kitManager.stop();
  await servedManager.stop();
  const base = figures['in-process exec'] as ReturnType<typeof summarize>;
  const kitF = figures['external chroot driver'] as ReturnType<typeof summarize>;
  const servedF = figures['berth driver serve exec'] as ReturnType<typeof summarize>;
  const kitRatio = round(kitF.p50Us / base.p50Us, 2);
  const servedRatio = round(servedF.p50Us / base.p50Us, 2);
  console.log(
    `StartTask p50: in-process exec ${ms(base.p50Us)} ms; external chroot driver ${ms(kitF.p50Us)} ms (${kitRatio}x); berth driver serve exec ${ms(servedF.p50Us)} ms (${servedRatio}x) (n=${base.n}; goal <= 1.5x)`,
  );
  return {
    chrootFirstP50Ms: ms(fi.p50Us),
    chrootCachedP50Ms: ms(ca.p50Us),
    chrootCachedP99Ms: ms(ca.p99Us),
    startTaskInProcessExecP50Ms: ms(base.p50Us),
    startTaskExternalChrootP50Ms: ms(kitF.p50Us),
    startTaskServedExecP50Ms: ms(servedF.p50Us),
    startTaskExternalChrootRatio: kitRatio,
    startTaskServedExecRatio: servedRatio,
  };
}
