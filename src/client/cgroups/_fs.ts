// cgroupfs file access both backends share.

import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AbortedError } from '../../lib/index.js';
import { CgroupError, type CgroupErrorCode } from './cgroup-error.js';

export function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** `key value` lines (memory.stat, cpu.stat, memory.events, oom_control) as numbers. */
export function readKeyed(file: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of (readText(file) ?? '').split('\n')) {
    const [k, v] = line.split(' ');
    if (k && v !== undefined) out.set(k, Number(v));
  }
  return out;
}

export function readNumber(file: string): number {
  const n = Number((readText(file) ?? '').trim());
  return Number.isFinite(n) ? n : 0;
}

export function write(file: string, value: string, code: CgroupErrorCode, what: string): void {
  try {
    writeFileSync(file, value);
  } catch (err) {
    throw new CgroupError(code, `${what}: writing ${value.trim()} to ${file} failed: ${(err as Error).message}`, { cause: err });
  }
}

/** A limit file to write: [file, value]. */
export type CgroupWrite = readonly [file: string, value: string];

/** write() of each, one after the other (a live group's limits change in order). */
export function writeAll(writes: readonly CgroupWrite[], code: CgroupErrorCode, what: string): void {
  for (const [file, value] of writes) write(file, value, code, what);
}

/**
 * Makes a new group's directories, then writes its limits. Synchronous on
 * purpose (it returns a settled promise): each task's group is 4 mkdirs and
 * ~6 small writes, which through fs/promises were ~22 thread-pool round trips
 * a task; a burst of 200 starts queued ~4400 of them on libuv's 4 threads
 * (213-227 ms of CPU and every task's start waiting behind the others' for
 * 0.2-0.7 s), where the same writes made synchronously cost 73 ms in all,
 * 0.4 ms of the loop a task. Throws (rejects) CgroupError
 * CGROUP_CREATE_FAILED / CGROUP_LIMIT_FAILED.
 */
export async function makeGroup(dirs: readonly string[], writes: () => readonly CgroupWrite[], name: string): Promise<void> {
  for (const dir of dirs) {
    try {
      mkdirSync(dir, { recursive: true });
    } catch (err) {
      throw new CgroupError('CGROUP_CREATE_FAILED', `creating cgroup ${dir} failed: ${(err as Error).message}`, { cause: err });
    }
  }
  writeAll(writes(), 'CGROUP_LIMIT_FAILED', `cgroup ${name}`);
}

/**
 * Makes a group's directories synchronously, has `update` write its limits,
 * and removes the directories again: proves Berth may manage groups here.
 * Throws what mkdir or update threw.
 */
export function probeGroup(dirs: readonly string[], update: () => void): void {
  try {
    for (const dir of dirs) mkdirSync(dir, { recursive: true });
    update();
  } finally {
    for (const dir of [...dirs].reverse()) {
      try {
        rmdirSync(dir);
      } catch {
        // an empty group goes at once; if not, the orphan sweep finds it later
      }
    }
  }
}

export function procsOf(dir: string): number[] {
  const text = readText(join(dir, 'cgroup.procs'));
  if (!text) return [];
  return text
    .split('\n')
    .filter(Boolean)
    .map(Number);
}

export function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
}

/** Sleeps `ms` unless aborted. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new AbortedError('cgroup wait aborted', { cause: signal.reason }));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(t);
      reject(new AbortedError('cgroup wait aborted', { cause: signal?.reason }));
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * rmdir of a cgroup dir; the kernel refuses (EBUSY) until its last process is
 * reaped, so it is retried for a while. Missing dirs are fine.
 */
export async function removeDir(dir: string, signal?: AbortSignal): Promise<void> {
  for (let i = 0; ; i++) {
    if (!existsSync(dir)) return;
    try {
      for (const child of readdirSync(dir, { withFileTypes: true })) {
        if (child.isDirectory()) await removeDir(join(dir, child.name), signal);
      }
      rmdirSync(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (i >= 500) throw new CgroupError('CGROUP_REMOVE_FAILED', `removing cgroup ${dir} failed: ${(err as Error).message}`, { cause: err });
      await pause(i < 50 ? 2 : 20, signal);
    }
  }
}
