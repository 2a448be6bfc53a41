// Reading processes from the kernel's /proc: start times (to tell a reused pid
// apart), process trees and their CPU and memory.

import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

interface ProcStat {
  pid: number;
  ppid: number;
  utimeTicks: number;
  stimeTicks: number;
  startTicks: number;
  rssPages: number;
}

function parseStat(pid: number, text: string): ProcStat {
  // The command name may hold spaces and parentheses: fields start after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return {
    pid,
    ppid: Number(rest[1]),
    utimeTicks: Number(rest[11]),
    stimeTicks: Number(rest[12]),
    startTicks: Number(rest[19]),
    rssPages: Number(rest[21]),
  };
}

export function readStat(pid: number): ProcStat | undefined {
  try {
    return parseStat(pid, readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Whether `pid` runs and is the process that started at `startTicks` (not a reused pid). */
export function isAlive(pid: number, startTicks: number): boolean {
  const st = readStat(pid);
  if (!st) return false;
  if (startTicks && st.startTicks !== startTicks) return false;
  // A zombie has exited already.
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return state.slice(state.lastIndexOf(')') + 2, state.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

function allStats(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const st = readStat(Number(name));
    if (st) out.push(st);
  }
  return out;
}

/** `root` and all its descendants, as stats. */
export function processTree(root: number): ProcStat[] {
  const stats = allStats();
  const byParent = new Map<number, ProcStat[]>();
  for (const st of stats) {
    const list = byParent.get(st.ppid) ?? [];
    list.push(st);
    byParent.set(st.ppid, list);
  }
  const rootStat = stats.find((s) => s.pid === root);
  if (!rootStat) return [];
  const out: ProcStat[] = [];
  const queue = [rootStat];
  while (queue.length) {
    const st = queue.shift() as ProcStat;
    out.push(st);
    queue.push(...(byParent.get(st.pid) ?? []));
  }
  return out;
}

/** Direct children of `pid`. */
export function childrenOf(pid: number): number[] {
  return allStats()
    .filter((s) => s.ppid === pid)
    .map((s) => s.pid);
}

/** The environment a process started with (KEY=VALUE pairs of /proc/<pid>/environ). */
export function environOf(pid: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return env;
}

let cachedConf: { clkTck: number; pageSize: number } | undefined;

/** Kernel clock ticks per second and page size, asked once. */
export function kernelUnits(): { clkTck: number; pageSize: number } {
  if (!cachedConf) {
    const ask = (name: string, fallback: number): number => {
      try {
        return Number(execFileSync('getconf', [name], { encoding: 'utf8' }).trim()) || fallback;
      } catch {
        return fallback;
      }
    };
    cachedConf = { clkTck: ask('CLK_TCK', 100), pageSize: ask('PAGESIZE', 4096) };
  }
  return cachedConf;
}
