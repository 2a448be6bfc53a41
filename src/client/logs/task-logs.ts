// Reading a task's rotated log files, as the executor writes them:
// `<dir>/<task>.<stdout|stderr>.<n>` with n growing, at most maxFiles kept;
// a marker `.<task>.logs-disabled` means log collection is off.

import { open, readdir, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError, systemClock, type Clock } from '../../lib/index.js';

export type LogStream = 'stdout' | 'stderr';

export type LogsErrorCode = 'LOGS_DISABLED' | 'LOGS_NOT_FOUND';

export class LogsError extends BerthError {
  declare readonly code: LogsErrorCode;
  constructor(code: LogsErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** Which log to read: the task's log dir (alloc/logs), its name and the stream. */
export interface TaskLogsLocation {
  dir: string;
  taskName: string;
  stream: LogStream;
  /** Known from the task's config; the marker file in `dir` says it too. */
  disabled?: boolean;
}

export interface LogFile {
  index: number;
  path: string;
  size: number;
}

/** Throws LogsError LOGS_DISABLED when log collection is off for the task. */
export function checkLogsEnabled(loc: TaskLogsLocation): void {
  if (loc.disabled || existsSync(join(loc.dir, `.${loc.taskName}.logs-disabled`))) {
    throw new LogsError('LOGS_DISABLED', 'log collection is disabled for this task');
  }
}

/** The stream's files, oldest first. Empty when none was written yet. */
export async function listLogFiles(loc: TaskLogsLocation): Promise<LogFile[]> {
  const prefix = `${loc.taskName}.${loc.stream}.`;
  let names: string[];
  try {
    names = await readdir(loc.dir);
  } catch {
    return [];
  }
  const files: LogFile[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix) || !/^\d+$/.test(name.slice(prefix.length))) continue;
    const path = join(loc.dir, name);
    try {
      files.push({ index: Number(name.slice(prefix.length)), path, size: (await stat(path)).size });
    } catch {
      // rotated away meanwhile
    }
  }
  return files.sort((a, b) => a.index - b.index);
}

async function readRange(path: string, from: number, to: number): Promise<Buffer> {
  if (to <= from) return Buffer.alloc(0);
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(to - from);
    const { bytesRead } = await fh.read(buf, 0, buf.length, from);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/**
 * The stream's kept output, oldest first; with `tail`, only its last `tail`
 * bytes. Does not block on a running task. Throws LogsError LOGS_DISABLED
 * ("log collection is disabled for this task") or LOGS_NOT_FOUND.
 */
export async function readTaskLogs(loc: TaskLogsLocation, opts: { tail?: number } = {}): Promise<Buffer> {
  checkLogsEnabled(loc);
  const files = await listLogFiles(loc);
  if (files.length === 0 && !existsSync(loc.dir)) throw new LogsError('LOGS_NOT_FOUND', `no logs for task ${loc.taskName}`);
  return readSnapshot(files, opts.tail);
}

/** The content of `files` up to the sizes listed (a consistent snapshot), the last `tail` bytes of it. */
async function readSnapshot(files: LogFile[], tail: number | undefined): Promise<Buffer> {
  const parts: Buffer[] = [];
  let want = tail ?? Infinity;
  for (let i = files.length - 1; i >= 0 && want > 0; i--) {
    const f = files[i] as LogFile;
    const from = Number.isFinite(want) ? Math.max(0, f.size - want) : 0;
    const chunk = await readRange(f.path, from, f.size);
    parts.unshift(chunk);
    want -= chunk.length;
  }
  return Buffer.concat(parts);
}

/**
 * Follows the stream (`alloc logs -f`): yields the last `tail` bytes (all kept
 * output when tail is omitted, none with tail 0), then new output as it is
 * written, across rotations, until `signal` fires (then it returns quietly).
 * Throws LOGS_DISABLED like readTaskLogs.
 */
export async function* followTaskLogs(
  loc: TaskLogsLocation,
  opts: { signal: AbortSignal; tail?: number; pollMs?: number; clock?: Clock },
): AsyncGenerator<Buffer> {
  checkLogsEnabled(loc);
  const clock = opts.clock ?? systemClock;
  const pollMs = opts.pollMs ?? 200;
  // Read the initial part from the same listing the follow starts from, so nothing falls between.
  const files = await listLogFiles(loc);
  const initial = await readSnapshot(files, opts.tail);
  if (initial.length) yield initial;
  const last = files[files.length - 1];
  let index = last?.index ?? 0;
  let offset = last?.size ?? 0;
  while (!opts.signal.aborted) {
    const now = await listLogFiles(loc);
    const current = now.find((f) => f.index === index);
    if (current && current.size > offset) {
      const chunk = await readRange(current.path, offset, current.size);
      offset += chunk.length;
      if (chunk.length) yield chunk;
      continue;
    }
    const next = now.find((f) => f.index > index);
    if (next) {
      // The current file is full (or was rotated away while we lagged): go on with the next one.
      index = next.index;
      offset = 0;
      continue;
    }
    try {
      await clock.sleep(pollMs, opts.signal);
    } catch {
      return;
    }
  }
}
