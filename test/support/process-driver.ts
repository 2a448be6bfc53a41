// A small task driver for the runners' tests: real processes, no isolation,
// stdout/stderr into the task's log dir. It stands in for R1's raw_exec where
// a test needs to see what the runner asked of its driver.

import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunnerDriver, RunnerExitResult, RunnerTaskConfig, RunnerTaskHandle } from '../../src/client/taskrunner/index.js';

interface Running {
  pid: number;
  child: ChildProcess | undefined;
  exited: Promise<RunnerExitResult>;
}

interface Handle {
  taskId: string;
  pid: number;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export class ProcessDriver implements RunnerDriver {
  readonly name = 'raw_exec';
  readonly capabilities = { fsIsolation: 'none' as const, networkModes: ['host' as const], mountConfigs: 'none' as const };
  readonly started: RunnerTaskConfig[] = [];
  readonly #tasks = new Map<string, Running>();

  async startTask(cfg: RunnerTaskConfig): Promise<RunnerTaskHandle> {
    this.started.push(cfg);
    const out = cfg.logs.disabled ? 'ignore' : openSync(path.join(cfg.logs.dir, `${cfg.taskName}.stdout.0`), 'a');
    const child = spawn(cfg.command, cfg.args, {
      cwd: cfg.taskDir,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...cfg.env },
      stdio: ['ignore', out, out],
      detached: true,
    });
    if (typeof out === 'number') closeSync(out);
    const exited = new Promise<RunnerExitResult>((resolve) => {
      child.once('exit', (code, signal) => resolve({ exitCode: code ?? -1, signal: signal ?? null }));
      child.once('error', (err) => resolve({ exitCode: -1, signal: null, message: err.message }));
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', reject);
    });
    this.#tasks.set(cfg.id, { pid: child.pid as number, child, exited });
    return { taskId: cfg.id, pid: child.pid as number } satisfies Handle;
  }

  async recoverTask(handle: RunnerTaskHandle): Promise<void> {
    const h = handle as Handle;
    if (this.#tasks.has(h.taskId)) return;
    if (!alive(h.pid)) throw new Error(`process ${h.pid} is gone`);
    const exited = (async (): Promise<RunnerExitResult> => {
      while (alive(h.pid)) await sleep(20);
      return { exitCode: -1, signal: null, message: 'exit status unknown (reattached)' };
    })();
    this.#tasks.set(h.taskId, { pid: h.pid, child: undefined, exited });
  }

  async waitTask(taskId: string, opts: { signal?: AbortSignal } = {}): Promise<RunnerExitResult> {
    const t = this.#get(taskId);
    if (!opts.signal) return t.exited;
    const signal = opts.signal;
    return Promise.race([
      t.exited,
      new Promise<RunnerExitResult>((_r, reject) => {
        if (signal.aborted) reject(new Error('aborted'));
        signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
      }),
    ]);
  }

  async stopTask(taskId: string, opts: { timeoutMs: number; signal?: string }): Promise<void> {
    const t = this.#tasks.get(taskId);
    if (!t) return;
    try {
      process.kill(t.pid, (opts.signal ?? 'SIGTERM') as NodeJS.Signals);
    } catch {
      return;
    }
    const killed = await Promise.race([t.exited.then(() => true), sleep(opts.timeoutMs).then(() => false)]);
    if (!killed) {
      try {
        process.kill(t.pid, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
    }
  }

  /** Sends `signal` to the task's process. */
  async signalTask(taskId: string, signal: string): Promise<void> {
    const t = this.#tasks.get(taskId);
    if (!t) throw new Error(`task ${taskId} is not running`);
    process.kill(t.pid, signal as NodeJS.Signals);
  }

  async destroyTask(taskId: string): Promise<void> {
    const t = this.#tasks.get(taskId);
    if (t && alive(t.pid)) {
      try {
        process.kill(t.pid, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
    }
    this.#tasks.delete(taskId);
  }

  /** The pid of a task (for tests that kill it from outside). */
  pid(taskId: string): number {
    return this.#get(taskId).pid;
  }

  /** Kills every process it started (test cleanup). */
  killAll(): void {
    for (const t of this.#tasks.values()) {
      try {
        process.kill(t.pid, 'SIGKILL');
      } catch {
        // Gone.
      }
    }
  }

  #get(taskId: string): Running {
    const t = this.#tasks.get(taskId);
    if (!t) throw new Error(`unknown task ${taskId}`);
    return t;
  }
}
