// At most one call per volume (or snapshot, or name) inside the plugin. A
// second overlapping call does not wait: it is told ABORTED, as the spec
// allows and as real plugins do, and the CO backs off and retries.

import { mkdir, open, readFile, stat, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BerthError } from '../../lib/index.js';

/** Thrown by `tryAcquire` when one of the keys is held; carries the key that was busy. */
export class LockBusyError extends Error {
  readonly key: string;

  constructor(key: string) {
    super(`an operation on ${key} is already in progress`);
    this.name = 'LockBusyError';
    this.key = key;
  }
}

export class KeyedLocks {
  readonly #held = new Set<string>();

  /**
   * Takes every key or none. Returns the release function (safe to call
   * twice). Throws LockBusyError without waiting when any key is held.
   */
  tryAcquire(...keys: string[]): () => void {
    const unique = [...new Set(keys)];
    const busy = unique.find((k) => this.#held.has(k));
    if (busy !== undefined) throw new LockBusyError(busy);
    for (const k of unique) this.#held.add(k);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const k of unique) this.#held.delete(k);
    };
  }

  /** How many keys are held now. */
  get size(): number {
    return this.#held.size;
  }
}

// ---- the lock of a shared state file -----------------------------------------
// Several instances (nodes) may share one data directory. Each read-modify-write
// of a shared state file runs under a lock file beside it, made with O_EXCL (an
// atomic create on local filesystems and NFSv3+). The holder writes its host and
// pid into it; a lock whose holder is a dead process on this host, or that is
// older than STALE_MS (a hold lasts milliseconds), is broken.


/** A hold lasts one read, merge and atomic write; a lock this old was left by a crash. */
const STALE_MS = 30_000;

export interface FileLockOptions {
  /** How long to wait for the lock before failing; default 10 s. */
  timeoutMs?: number;
  /** Injectable for tests; default Date.now. */
  now?: () => number;
}

/**
 * Runs `fn` while holding the lock file `lockPath`, waiting (polling every few
 * ms) while another process or instance holds it. Re-entrant only across
 * processes, not within one call chain: never nest it on the same path.
 * Throws BerthError('HOSTPATH_STATE_LOCKED') after `timeoutMs`, and what `fn`
 * throws (the lock is released either way).
 */
export async function withFileLock<T>(lockPath: string, fn: () => Promise<T>, opts: FileLockOptions = {}): Promise<T> {
  const now = opts.now ?? Date.now;
  const deadline = now() + (opts.timeoutMs ?? 10_000);
  const token = `${os.hostname()} ${process.pid} ${Math.random().toString(36).slice(2)}`;
  await mkdir(path.dirname(lockPath), { recursive: true });
  for (;;) {
    try {
      const fh = await open(lockPath, 'wx', 0o600);
      try {
        await fh.writeFile(token, 'utf8');
      } finally {
        await fh.close();
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    await breakIfStale(lockPath, now);
    if (now() > deadline) {
      throw new BerthError('HOSTPATH_STATE_LOCKED', `${lockPath} is held by another instance for more than ${opts.timeoutMs ?? 10_000} ms`);
    }
    await new Promise((r) => setTimeout(r, 2 + Math.floor(Math.random() * 8)));
  }
  try {
    return await fn();
  } finally {
    // Only our own lock: one broken as stale and taken by another instance stays theirs.
    const held = await readFile(lockPath, 'utf8').catch(() => '');
    if (held === token) await unlink(lockPath).catch(() => undefined);
  }
}

async function breakIfStale(lockPath: string, now: () => number): Promise<void> {
  let holder: string;
  let mtimeMs: number;
  try {
    [holder, { mtimeMs }] = await Promise.all([readFile(lockPath, 'utf8'), stat(lockPath)]);
  } catch {
    return; // released meanwhile
  }
  const [host, pid] = holder.split(' ');
  const deadHere = host === os.hostname() && pid !== undefined && !processAlive(Number(pid));
  // An empty file is a holder between its create and its write: young, so only age breaks it.
  if (deadHere || now() - mtimeMs > STALE_MS) await unlink(lockPath).catch(() => undefined);
}

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
