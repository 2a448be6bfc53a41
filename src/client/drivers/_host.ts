// What the executor drivers ask of the host: signals to a pid or its process
// group, whether we are root, which tools are on PATH, and the shapes of a
// task's limits and exit. Private to src/client/drivers.

import { existsSync, statSync } from 'node:fs';
import { isAbsolute, join, normalize } from 'node:path';
import { DriverError } from './driver-error.js';
import type { DriverCapabilities, ExitResult, TaskConfig, TaskResources } from './task-driver.js';

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

/** Throws DriverError when a task's mounts cannot be made: the driver takes none, or one is malformed. */
export function checkMounts(cfg: TaskConfig, driver: string, mountConfigs: DriverCapabilities['mountConfigs']): void {
  if (cfg.mounts.length > 0 && mountConfigs === 'none') {
    throw new DriverError('DRIVER_MOUNTS_UNSUPPORTED', `task ${cfg.taskName}: the ${driver} driver does not support volume mounts`);
  }
  for (const m of cfg.mounts) {
    if (!isAbsolute(m.destination) || normalize(m.destination) !== m.destination || m.destination === '/') {
      throw new DriverError('DRIVER_INVALID_MOUNT', `task ${cfg.taskName}: mount destination ${m.destination} must be a normalized absolute path`);
    }
    if (!existsSync(m.source)) {
      throw new DriverError('DRIVER_INVALID_MOUNT', `task ${cfg.taskName}: mount source ${m.source} does not exist`);
    }
    if (m.propagation === 'bidirectional' && m.readOnly) {
      throw new DriverError(
        'DRIVER_INVALID_MOUNT',
        `task ${cfg.taskName}: bidirectional propagation at ${m.destination} needs a writable volume, and this one is read-only`,
      );
    }
  }
}
