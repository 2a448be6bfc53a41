// The agent's side of the mount helper (mount-helper.mjs): one long-lived
// child process that runs mount(8)/umount(8) for the allocation directories,
// so that a mount costs the agent's event loop one line written and one
// read, never a fork of the agent.

import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { BerthError, helperProcessEnv, helperScript } from '../../lib/index.js';

/** The helper script; dist/mount-helper.cjs once built, which loads its bundle through a code cache (lib's helperScript). */
export const MOUNT_HELPER_PATH = helperScript('mount-helper', import.meta.url);

export type MountHelperErrorCode = 'ALLOC_MOUNT_FAILED' | 'ALLOC_MOUNT_HELPER_DIED' | 'ALLOC_MOUNT_HELPER_STOPPED';

/**
 * A helper request failed: ALLOC_MOUNT_FAILED (the tool failed; the message has its
 * stderr), ALLOC_MOUNT_HELPER_DIED (the helper exited before answering: the request
 * may or may not have been carried out), ALLOC_MOUNT_HELPER_STOPPED (stop() was called).
 */
export class MountHelperError extends BerthError<MountHelperErrorCode> {}

/** A request of the helper's protocol (see mount-helper.mjs). */
export type MountRequest =
  | { op: 'mount'; args: string[]; unlessOwnFs?: string }
  | { op: 'unmount'; root: string; keep?: string[]; remove?: boolean }
  | { op: 'sh'; script: string }
  | { op: 'build'; dirs: Array<[path: string, mode: number]>; mounts: Array<{ args: string[]; unlessOwnFs: string }> };

interface Pending {
  req: MountRequest;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  /** Asked again once on a new helper if the first died before answering. */
  retries: number;
}

/**
 * One helper process, started on the first request and again after it dies.
 * `request` never blocks the loop; idempotent requests (mount with
 * unlessOwnFs, unmount, build) are asked again once when the helper dies before
 * answering, others fail with ALLOC_MOUNT_HELPER_DIED. The process holds the
 * agent's event loop open only while a request is pending, and exits by
 * itself when the agent does (its stdin closes).
 */
export class MountHelper {
  readonly #script: string;
  #child: ChildProcess | undefined;
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();
  #stopped = false;
  /** Request lines not yet written (flushed once per turn of the loop). */
  #outbox: string[] = [];

  constructor(opts: { script?: string } = {}) {
    this.#script = opts.script ?? MOUNT_HELPER_PATH;
  }

  /** The helper's pid while one runs (tests kill it to check recovery). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /**
   * Asks the helper; resolves with its result. Rejects with MountHelperError
   * (ALLOC_MOUNT_FAILED with the tool's stderr, ALLOC_MOUNT_HELPER_DIED, ALLOC_MOUNT_HELPER_STOPPED).
   */
  request<T>(req: MountRequest): Promise<T> {
    if (this.#stopped) return Promise.reject(new MountHelperError('ALLOC_MOUNT_HELPER_STOPPED', 'the mount helper was stopped'));
    const retries = req.op === 'unmount' || req.op === 'build' || (req.op === 'mount' && req.unlessOwnFs) ? 1 : 0;
    return new Promise<T>((resolve, reject) => this.#send({ req, resolve: resolve as (v: unknown) => void, reject, retries }));
  }

  /**
   * Starts the helper now unless one runs or stop() was called, so that a
   * first request (a node's first allocation directory) does not wait for a
   * Node start (110-160 ms on a quiet machine). Holds the event loop open no
   * more than an idle helper does; does not block; safe to repeat.
   */
  warm(): void {
    if (this.#stopped || this.#child) return;
    this.#start();
    this.#ref(false);
  }

  /** Closes the helper's stdin (it exits once its requests are answered). Safe twice; later requests reject. */
  stop(): void {
    this.#stopped = true;
    this.#flush();
    this.#child?.stdin?.end();
  }

  #send(p: Pending): void {
    if (!this.#child) this.#start();
    const id = this.#nextId++;
    this.#pending.set(id, p);
    this.#ref(true);
    // Requests made in one turn of the loop (a burst of allocations) leave in one write.
    this.#outbox.push(`${JSON.stringify({ id, ...p.req })}\n`);
    if (this.#outbox.length === 1) setImmediate(() => this.#flush());
  }

  /** Writes the waiting request lines to the helper running now (those for a helper that died were dropped by gone()). */
  #flush(): void {
    if (!this.#outbox.length) return;
    const lines = this.#outbox.splice(0).join('');
    this.#child?.stdin!.write(lines);
  }

  #start(): ChildProcess {
    // Detached: a Ctrl-C meant for the agent must not kill the helper under the agent's shutdown.
    const child = spawn(process.execPath, [this.#script], {
      detached: true,
      // In /, so that it holds no directory of the agent's busy.
      cwd: '/',
      stdio: ['pipe', 'pipe', 'ignore'],
      env: helperProcessEnv(),
    });
    this.#child = child;
    child.stdin!.on('error', () => undefined);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let answer: { id: number; ok: boolean; result?: unknown; error?: string };
      try {
        answer = JSON.parse(line) as typeof answer;
      } catch {
        return;
      }
      const p = this.#pending.get(answer.id);
      if (!p) return;
      this.#pending.delete(answer.id);
      if (answer.ok) p.resolve(answer.result);
      else p.reject(new MountHelperError('ALLOC_MOUNT_FAILED', answer.error ?? 'the mount helper failed'));
      this.#ref(this.#pending.size > 0);
    });
    const gone = (why: string): void => {
      if (this.#child !== child) return;
      this.#child = undefined;
      const lost = [...this.#pending.values()];
      this.#pending.clear();
      this.#outbox = [];
      this.#ref(false);
      for (const p of lost) {
        if (p.retries > 0 && !this.#stopped) this.#send({ ...p, retries: p.retries - 1 });
        else p.reject(new MountHelperError('ALLOC_MOUNT_HELPER_DIED', `the mount helper ${why} before answering (${p.req.op}); it may or may not have been done`));
      }
    };
    child.on('error', (err) => gone(`could not run (${err.message})`));
    // 'close', not 'exit': answers written just before it exited are read first.
    child.on('close', (code, signal) => gone(signal ? `was killed by ${signal}` : `exited with code ${code}`));
    return child;
  }

  /** Holds the loop open while a request waits for its answer, and only then. */
  #ref(on: boolean): void {
    const child = this.#child;
    if (!child) return;
    for (const s of [child.stdout as Socket | null, child.stdin as unknown as Socket | null]) {
      if (on) s?.ref();
      else s?.unref();
    }
    if (on) child.ref();
    else child.unref();
  }
}

let shared: MountHelper | undefined;

/** The process's helper, made on first use (every allocation directory of the agent shares it). */
export function mountHelper(): MountHelper {
  shared ??= new MountHelper();
  return shared;
}
