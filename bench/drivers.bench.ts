// Task driver figures (section `drivers` of `npm run bench`), real processes:
// 1. startTask latency (executor spawned, task running; for exec also the
//    namespaces and chroot set up) for raw_exec and exec, p50/p99, and the
//    start -> exit noticed round trip of a task that exits at once.
// 2. 50 running raw_exec tasks: the executors' memory (what a task costs
//    beside itself), taskStats over all of them, and a new driver recovering
//    all 50 handles (an agent restart).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExecDriver, RawExecDriver, type TaskConfig, type TaskDriver, type TaskHandle } from '../src/client/drivers/index.js';
import { round, summarize, timeNs } from './_stats.js';
import { shellTask } from './_task-config.js';

const STARTS = Number(process.env['BENCH_DRIVER_STARTS'] ?? 30);
const RUNNING = Number(process.env['BENCH_DRIVER_RUNNING'] ?? 50);

function config(dir: string, id: string, script: string): TaskConfig {
  return shellTask(dir, id, script, { killTimeoutMs: 1000, resources: { cpuMhz: 100, memoryMb: 100 } });
}

/** Resident and proportional (shared pages split among their users) memory of a process, KiB. */
function memKiB(pid: number): { rss: number; pss: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { rss: field('Rss'), pss: field('Pss') };
}

const ms = (us: number): number => round(us / 1000, 2);

export default async function driversBench(dir: string): Promise<Record<string, unknown>> {
  const results: Record<string, unknown> = {};
  for (const [name, driver] of [
    ['raw_exec', new RawExecDriver({ stateDir: join(dir, 'st-raw') })],
    ['exec', new ExecDriver({ stateDir: join(dir, 'st-exec') })],
  ] as Array<[string, TaskDriver]>) {
    const starts: bigint[] = [];
    const roundTrips: bigint[] = [];
    for (let i = 0; i < STARTS; i++) {
      const cfg = config(dir, `${name}-s${i}`, 'exec sleep 1000');
      starts.push(await timeNs(() => driver.startTask(cfg)));
      await driver.stopTask(cfg.id, { timeoutMs: 0, signal: 'SIGKILL' });
      await driver.destroyTask(cfg.id);
      const quick = config(dir, `${name}-q${i}`, 'exit 0');
      roundTrips.push(
        await timeNs(async () => {
          await driver.startTask(quick);
          await driver.waitTask(quick.id);
        }),
      );
      await driver.destroyTask(quick.id);
    }
    const s = summarize(starts);
    const r = summarize(roundTrips);
    console.log(`${name.padEnd(8)} startTask p50 ${ms(s.p50Us)} ms  p99 ${ms(s.p99Us)} ms; start->exit noticed p50 ${ms(r.p50Us)} ms  p99 ${ms(r.p99Us)} ms (n=${s.n})`);
    results[name] = { startP50Ms: ms(s.p50Us), startP99Ms: ms(s.p99Us), startToExitP50Ms: ms(r.p50Us), startToExitP99Ms: ms(r.p99Us), n: s.n };
    await driver.shutdown();
  }

  const driver = new RawExecDriver({ stateDir: join(dir, 'st-many') });
  const handles: TaskHandle[] = [];
  const heapBefore = process.memoryUsage().heapUsed;
  for (let i = 0; i < RUNNING; i++) handles.push(await driver.startTask(config(dir, `many-${i}`, 'exec sleep 1000')));
  const heapAfter = process.memoryUsage().heapUsed;
  try {
    const mem = handles.map((h) => memKiB(h.executorPid));
    const totalMiB = round(mem.reduce((a, b) => a + b.rss, 0) / 1024);
    const pssMiB = round(mem.reduce((a, b) => a + b.pss, 0) / 1024);
    const perMiB = round(pssMiB / RUNNING);
    const stats: bigint[] = [];
    for (const h of handles) stats.push(await timeNs(() => driver.taskStats(h.taskId)));
    const st = summarize(stats);
    await driver.shutdown();
    const fresh = new RawExecDriver({ stateDir: join(dir, 'st-many') });
    const recoverNs = await timeNs(async () => {
      for (const h of handles) await fresh.recoverTask(h);
    });
    const recoverMs = round(Number(recoverNs) / 1e6, 1);
    console.log(
      `${RUNNING} running tasks: executors rss ${totalMiB} MiB, pss ${pssMiB} MiB in all (${perMiB} MiB each); agent heap +${round((heapAfter - heapBefore) / 2 ** 20)} MiB; ` +
        `taskStats p50 ${ms(st.p50Us)} ms p99 ${ms(st.p99Us)} ms; recovering all ${RUNNING} handles ${recoverMs} ms`,
    );
    Object.assign(results, {
      running: RUNNING,
      executorsRssMiB: totalMiB,
      executorsPssMiB: pssMiB,
      executorPssMiBEach: perMiB,
      taskStatsP50Ms: ms(st.p50Us),
      taskStatsP99Ms: ms(st.p99Us),
      recoverAllMs: recoverMs,
    });
    for (const h of handles) {
      await fresh.stopTask(h.taskId, { timeoutMs: 0, signal: 'SIGKILL' });
      await fresh.destroyTask(h.taskId);
    }
    await fresh.shutdown();
  } finally {
    for (const h of handles) {
      for (const pid of [-h.taskPid, h.executorPid]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  }
  return results;
}
