// Test harness of the drivers' tests: a temp dir laid out like an allocation,
// task configs, a collecting writable, and a teardown that kills every
// process the tests started and unmounts everything left below the temp dir.

import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { TaskConfig, TaskDriver, TaskHandle } from '../../src/client/drivers/index.js';
import { TS_LOADER } from './ts-loader.js';

const AGENT_FIXTURE = fileURLToPath(new URL('./driver-agent-fixture.ts', import.meta.url));

/** Whether `pid` is a live process (absent and zombie processes are not). */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

export class DriverHarness {
  /** Short on purpose: control sockets live below it. */
  readonly dir = mkdtempSync('/tmp/r1d-');
  readonly allocDir = path.join(this.dir, 'alloc-1');
  readonly logDir = path.join(this.allocDir, 'alloc', 'logs');
  readonly stateDir = path.join(this.dir, 'st');
  readonly handles: TaskHandle[] = [];
  readonly drivers: TaskDriver[] = [];
  readonly pids: number[] = [];

  constructor() {
    mkdirSync(this.logDir, { recursive: true });
  }

  taskDir(task: string): string {
    const dir = path.join(this.allocDir, task, 'local');
    mkdirSync(dir, { recursive: true });
    mkdirSync(path.join(this.allocDir, task, 'secrets'), { recursive: true });
    return dir;
  }

  config(task: string, script: string, over: Partial<TaskConfig> = {}): TaskConfig {
    return {
      id: `alloc-1/${task}/0`,
      allocId: 'alloc-1',
      taskName: task,
      command: '/bin/sh',
      args: ['-c', script],
      env: { GREETING: 'hello' },
      taskDir: this.taskDir(task),
      allocDir: this.allocDir,
      secretsDir: path.join(this.allocDir, task, 'secrets'),
      mounts: [],
      logs: { disabled: false, dir: this.logDir, maxFiles: 3, maxFileSizeMb: 1 },
      killTimeoutMs: 1000,
      resources: { cpuMhz: 100, memoryMb: 100 },
      ...over,
    };
  }

  /**
   * An agent crash: a stand-in agent (driver-agent-fixture.ts) with a raw_exec
   * driver on `stateDir` (this kit's by default), shared executors of
   * `perExecutor` tasks and a spare when asked, starts `cfg` (none when left
   * out), prints its handle and is SIGKILLed once `beforeKill` resolves.
   * Resolves with the handle.
   */
  async crashedAgent(opts: { cfg?: TaskConfig; stateDir?: string; perExecutor: number; spare?: boolean; beforeKill?: () => Promise<unknown> }): Promise<TaskHandle | undefined> {
    const args = ['raw_exec', opts.stateDir ?? this.stateDir, opts.cfg ? JSON.stringify(opts.cfg) : '-', String(opts.perExecutor), ...(opts.spare ? ['spare'] : [])];
    const agent = spawn(process.execPath, ['--import', TS_LOADER, AGENT_FIXTURE, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.pids.push(agent.pid as number);
    const [line] = (await once(createInterface({ input: agent.stdout }), 'line')) as [string];
    const handle = opts.cfg ? (JSON.parse(line) as TaskHandle) : undefined;
    if (handle) this.handles.push(handle);
    await opts.beforeKill?.();
    agent.kill('SIGKILL');
    await once(agent, 'exit');
    return handle;
  }

  async start(driver: TaskDriver, cfg: TaskConfig): Promise<TaskHandle> {
    // The built-in drivers this kit starts return executor handles.
    const handle = (await driver.startTask(cfg)) as TaskHandle;
    this.handles.push(handle);
    return handle;
  }

  /** Kills every task and executor started, unmounts what is left below the temp dir, removes it. */
  async cleanup(): Promise<void> {
    for (const d of this.drivers) await d.shutdown().catch(() => undefined);
    for (const h of this.handles) {
      for (const pid of [-h.taskPid, h.taskPid, h.executorPid]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
    for (const pid of this.pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    // Let namespaces die before unmounting what they shared with the host.
    await sleep(50);
    unmountBelow(this.dir);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Lazily unmounts every mount at or below `dir`, deepest first. */
export function unmountBelow(dir: string): void {
  for (let round = 0; round < 5; round++) {
    const targets = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[4] ?? '')
      .map((t) => t.replace(/\\040/g, ' '))
      .filter((t) => t === dir || t.startsWith(`${dir}/`))
      .sort((a, b) => b.length - a.length);
    if (targets.length === 0) return;
    for (const t of targets) {
      try {
        execFileSync('umount', ['-l', t], { stdio: 'ignore' });
      } catch {
        // gone with its parent
      }
    }
  }
}

/** The one wait of the tests (see test/support/eventually.ts): `eventually(what, probe, timeoutMs?)`. */
export { eventually } from './eventually.js';

/** A writable that keeps what it is given. */
export class Collect extends Writable {
  chunks: Buffer[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.chunks.push(Buffer.from(chunk));
    cb();
  }
  get text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/** Runs `command` in the task with pipes and returns its exit code and output. */
export async function execIn(driver: TaskDriver, taskId: string, command: string[], stdin?: string): Promise<{ exitCode: number; out: string; err: string }> {
  const out = new Collect();
  const err = new Collect();
  const { exitCode } = await driver.execTaskStreaming(taskId, {
    command,
    stdout: out,
    stderr: err,
    ...(stdin !== undefined ? { stdin: [Buffer.from(stdin)] } : {}),
  });
  return { exitCode, out: out.text, err: err.text };
}
