// A task's resource usage as the executor drivers report it: from its
// cgroup when it has one with processes in it, else from /proc over the
// task's process tree, CPU percent since the previous sample. Private to
// src/client/drivers.

import type { Cgroups } from '../cgroups/index.js';
import { kernelUnits, processTree } from './_proc.js';
import type { TaskHandle, TaskResourceUsage } from './task-driver.js';

/** The usage of a running task at `now`; `rec.lastCpu` keeps the sample the next percent is taken against. */
export function taskUsage(
  rec: { handle: TaskHandle; lastCpu?: { totalMs: number; at: number } },
  cgroups: Cgroups | null,
  now: number,
): TaskResourceUsage {
  const percentSince = (totalMs: number): number => {
    const prev = rec.lastCpu;
    const percent = prev && now > prev.at ? Math.max(0, ((totalMs - prev.totalMs) / (now - prev.at)) * 100) : 0;
    rec.lastCpu = { totalMs, at: now };
    return percent;
  };
  if (rec.handle.cgroup && cgroups) {
    const st = cgroups.stats(rec.handle.cgroup);
    if (st.pids.length > 0) {
      return {
        timestamp: now,
        source: 'cgroup',
        cpu: { ...st.cpu, percent: percentSince(st.cpu.totalMs) },
        memory: st.memory,
        pids: st.pids,
      };
    }
  }
  const { clkTck, pageSize } = kernelUnits();
  const tree = processTree(rec.handle.taskPid);
  let user = 0;
  let sys = 0;
  let rss = 0;
  for (const p of tree) {
    user += p.utimeTicks;
    sys += p.stimeTicks;
    rss += p.rssPages;
  }
  const userMs = (user * 1000) / clkTck;
  const systemMs = (sys * 1000) / clkTck;
  const totalMs = userMs + systemMs;
  return {
    timestamp: now,
    source: 'proc',
    cpu: { userMs, systemMs, totalMs, percent: percentSince(totalMs), throttledPeriods: 0, throttledMs: 0 },
    memory: { rssBytes: rss * pageSize, cacheBytes: 0, usageBytes: rss * pageSize, maxUsageBytes: 0 },
    pids: tree.map((p) => p.pid),
  };
}
