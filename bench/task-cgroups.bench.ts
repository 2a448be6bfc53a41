// Task cgroup figures (section `task-cgroups` of `npm run bench`), real
// processes and the host's real cgroups:
// 1. the extra start time cgroups cost: raw_exec startTask with a cgroup
//    minus without one (p50 of interleaved runs), and the group set-up alone
//    (create with limits + remove of an empty group);
// 2. the stop of an exec task whose shell loop handles SIGTERM (stopTask
//    with a 30 s kill timeout until the exit is recorded), p50/p99; and of a
//    shell loop with no trap, which Berth's init makes stop on SIGTERM too.

import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { detectCgroups } from '../src/client/cgroups/index.js';
import { ExecDriver, RawExecDriver, type TaskConfig, type TaskDriver } from '../src/client/drivers/index.js';
import { round, summarize, timeNs } from './_stats.js';
import { shellTask } from './_task-config.js';

const RUNS = Number(process.env['BENCH_CGROUP_RUNS'] ?? 30);

function config(dir: string, id: string, script: string): TaskConfig {
  return shellTask(dir, id, script, { killTimeoutMs: 30_000, resources: { cpuMhz: 100, memoryMb: 64 } });
}

const ms = (us: number): number => round(us / 1000, 2);

/** The executor's join wrapper (src/client/drivers/executor.mjs). */
const JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; echo >&3; exec 3>&-; exec "$@"';

/** Spawns `sh -c script` and resolves once it wrote to fd 3 (or closed it). */
function spawnReported(script: string, args: string[]): Promise<void> {
  const child = spawn('/bin/sh', ['-c', script, 'bench', ...args], { stdio: ['ignore', 'ignore', 'ignore', 'pipe'] });
  const pipe = child.stdio[3] as Readable;
  return new Promise<void>((resolve) => {
    pipe.once('data', () => resolve());
    pipe.once('close', () => resolve());
  }).then(() => {
    pipe.destroy();
  });
}

async function ready(dir: string, task: string): Promise<void> {
  const file = join(dir, 'alloc', 'alloc', 'logs', `${task}.stdout.0`);
  while (!(existsSync(file) && readFileSync(file, 'utf8').includes('ready'))) await sleep(2);
}

export default async function taskCgroupsBench(dir: string): Promise<Record<string, unknown>> {
  const cgroups = detectCgroups({ parent: `berth-bench-${process.pid}` });
  if (!cgroups) {
    console.log('no usable cgroups here: section skipped');
    return { skipped: 'no cgroups' };
  }
  const results: Record<string, unknown> = { cgroups: cgroups.version };

  // 1. Start with and without a cgroup, interleaved so that load hits both alike.
  const plain = new RawExecDriver({ stateDir: join(dir, 'st-plain'), cgroups: null });
  const grouped = new RawExecDriver({ stateDir: join(dir, 'st-cg'), cgroups });
  const without: bigint[] = [];
  const withCg: bigint[] = [];
  const setup: bigint[] = [];
  for (let i = 0; i < RUNS; i++) {
    for (const [driver, out] of [
      [plain, without],
      [grouped, withCg],
    ] as Array<[TaskDriver, bigint[]]>) {
      const cfg = config(dir, `s${i}-${out === without ? 'p' : 'c'}`, 'exec sleep 1000');
      out.push(await timeNs(() => driver.startTask(cfg)));
      await driver.stopTask(cfg.id, { timeoutMs: 0, signal: 'SIGKILL' });
      await driver.destroyTask(cfg.id);
    }
    setup.push(
      await timeNs(async () => {
        const g = await cgroups.create(`setup-${i}`, { memoryMb: 64, cpuMhz: 100, pidsMax: 100 });
        await cgroups.remove(g);
      }),
    );
  }
  // The same extra work without the executor's own start-up noise: create the group with its
  // limits and spawn the executor's join wrapper until it reports, against the bare spawn.
  const joins: bigint[] = [];
  const bare: bigint[] = [];
  for (let i = 0; i < RUNS; i++) {
    bare.push(await timeNs(() => spawnReported('echo >&3; exec 3>&-; exec "$@"', ['true'])));
    joins.push(
      await timeNs(async () => {
        const g = await cgroups.create(`join-${i}`, { memoryMb: 64, cpuMhz: 100, pidsMax: 100 });
        await spawnReported(JOIN, [...g.dirs.map((d) => join(d, 'cgroup.procs')), '--', 'true']);
      }),
    );
    const g = cgroups.list().find((x) => x.name === `join-${i}`);
    if (g) await cgroups.remove(g);
  }
  const j = summarize(joins);
  const k = summarize(bare);
  console.log(`cgroups ${cgroups.version}: group set-up + join before the task runs p50 ${ms(j.p50Us)} ms vs bare spawn ${ms(k.p50Us)} ms: extra ${ms(j.p50Us - k.p50Us)} ms p50`);
  Object.assign(results, { joinP50Ms: ms(j.p50Us), bareSpawnP50Ms: ms(k.p50Us), extraJoinP50Ms: ms(j.p50Us - k.p50Us) });

  const a = summarize(without);
  const b = summarize(withCg);
  const c = summarize(setup);
  const extra = ms(b.p50Us - a.p50Us);
  console.log(
    `cgroups ${cgroups.version}: raw_exec startTask p50 ${ms(a.p50Us)} ms without, ${ms(b.p50Us)} ms with a cgroup: extra ${extra} ms p50; ` +
      `group create+limits+remove alone p50 ${ms(c.p50Us)} ms p99 ${ms(c.p99Us)} ms (n=${a.n})`,
  );
  Object.assign(results, { startWithoutP50Ms: ms(a.p50Us), startWithP50Ms: ms(b.p50Us), extraStartP50Ms: extra, groupSetupP50Ms: ms(c.p50Us), groupSetupP99Ms: ms(c.p99Us) });
  await plain.shutdown();
  await grouped.shutdown();

  // 2. exec stop of a shell loop, with and without a SIGTERM trap.
  const exec = new ExecDriver({ stateDir: join(dir, 'st-exec'), cgroups });
  for (const [label, script] of [
    ['traps SIGTERM', 'trap "exit 0" TERM; echo ready; while :; do sleep 0.05; done'],
    ['no trap', 'echo ready; while :; do sleep 0.05; done'],
  ] as const) {
    const stops: bigint[] = [];
    for (let i = 0; i < Math.min(RUNS, 20); i++) {
      const cfg = config(dir, `loop-${label === 'no trap' ? 'n' : 't'}${i}`, script);
      await exec.startTask(cfg);
      await ready(dir, cfg.taskName);
      stops.push(await timeNs(() => exec.stopTask(cfg.id, { timeoutMs: 30_000 })));
      await exec.destroyTask(cfg.id);
    }
    const s = summarize(stops);
    console.log(`exec shell loop (${label}): stop p50 ${ms(s.p50Us)} ms p99 ${ms(s.p99Us)} ms with a 30 s kill timeout (n=${s.n})`);
    results[label === 'no trap' ? 'execStopNoTrap' : 'execStopTrapsTerm'] = { p50Ms: ms(s.p50Us), p99Ms: ms(s.p99Us), n: s.n };
  }
  await exec.shutdown();
  for (const g of cgroups.list()) await cgroups.remove(g).catch(() => undefined);
  cgroups.prune();
  return results;
}
