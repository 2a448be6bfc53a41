// What the executor drivers ask of the host: signals to a pid or its process
// group, whether we are root, which tools are on PATH, and the shapes of a
// task's limits and exit. Private to src/client/drivers.

import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { ExitResult, TaskResources } from './task-driver.js';

export function cgroupLimits(r: TaskResources): { memoryMb: number; cpuMhz: number; memoryMaxMb?: number; cores?: number; pidsMax?: number } {
  return {
    memoryMb: r.memoryMb,
    cpuMhz: r.cpuMhz,
    ...(r.memoryMaxMb ? { memoryMaxMb: r.memoryMaxMb } : {}),
    ...(r.cores ? { cores: r.cores } : {}),
    ...(r.pidsMax ? { pidsMax: r.pidsMax } : {}),
  };
}

export function publicExit(e: ExitResult): ExitResult {
  return { exitCode: e.exitCode, signal: e.signal, oomKilled: e.oomKilled, message: e.message, ...(e.fenced ? { fenced: true } : {}) };
}

export function killPid(pid: number, signal: string): void {
  try {
    process.kill(pid, signal as NodeJS.Signals);
  } catch {
    // gone already
  }
}

export function killGroup(pid: number, signal: string): void {
  try {
    process.kill(-pid, signal as NodeJS.Signals);
  } catch {
    killPid(pid, signal);
  }
}

/** Whether we run as root (namespaces, mounts and nsenter need it). */
export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** Those of `tools` that are not an executable on PATH. */
export function missingTools(tools: string[]): string[] {
  const dirs = (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(':');
  return tools.filter((t) => !dirs.some((d) => {
    try {
      return statSync(join(d, t)).isFile();
    } catch {
      return false;
    }
  }));
}
